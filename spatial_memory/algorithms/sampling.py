"""Temperature-controlled selection among random-walk candidates."""

from __future__ import annotations

import numpy as np

# temperature t maps geometrically onto the softmax scale: tau = 10 ** (3t - 2),
# i.e. tau = 0.01 at t=0 (-> exact argmax), 0.32 at t=0.5, 10 at t=1. Cosine
# similarities span at most ~1, so at t=1 the logits differ by <= 0.1 and the
# choice is nearly uniform; the geometric scale keeps the mid-range useful
# (a quadratic map would make everything above t~0.4 look uniform).
_TAU_MIN = 0.01
_TAU_MAX = 10.0


def temperature_scale(temperature: float) -> float:
    """Softmax divisor tau for a temperature > 0 (monotone increasing)."""
    return _TAU_MIN * (_TAU_MAX / _TAU_MIN) ** float(temperature)


def softmax_probabilities(similarities: np.ndarray, temperature: float) -> np.ndarray:
    """Selection probabilities (float64, sums to 1) over candidate similarities.

    temperature 0 -> one-hot on the first argmax; 1 -> nearly uniform;
    lower temperature -> more peaked.
    """
    sims = np.asarray(similarities, dtype=np.float64).reshape(-1)
    if sims.size == 0:
        raise ValueError("similarities is empty")
    if not np.all(np.isfinite(sims)):
        raise ValueError("similarities contains non-finite values")
    if not np.isfinite(temperature) or temperature < 0:
        raise ValueError("temperature must be a finite number >= 0")
    if temperature == 0:
        probs = np.zeros_like(sims)
        probs[int(np.argmax(sims))] = 1.0
        return probs
    logits = (sims - sims.max()) / temperature_scale(temperature)
    weights = np.exp(logits)
    return weights / weights.sum()


def choose(probabilities: np.ndarray, rng: np.random.Generator) -> int:
    """Draw one index according to ``probabilities`` (zero-probability never drawn)."""
    probs = np.asarray(probabilities, dtype=np.float64).reshape(-1)
    if probs.size == 0:
        raise ValueError("probabilities is empty")
    if np.any(probs < 0) or not np.all(np.isfinite(probs)):
        raise ValueError("probabilities must be finite and non-negative")
    cumulative = np.cumsum(probs)
    total = cumulative[-1]
    if total <= 0:
        raise ValueError("probabilities sum to zero")
    idx = int(np.searchsorted(cumulative, rng.random() * total, side="right"))
    return min(idx, probs.size - 1)
