"""Time-based importance decay."""

from __future__ import annotations

from typing import Literal

import numpy as np

DecayFunction = Literal["exponential", "linear", "step", "fsrs"]

# FSRS-4.5's forgetting curve R(t) = (1 + FSRS_FACTOR * t / S) ** FSRS_POWER: R is 0.9 at t = S.
FSRS_FACTOR = 19 / 81
FSRS_POWER = -0.5
# Recalls counted for stability growth (more changes nothing: 1.6 ** 20 is ~12,000 half-lives).
FSRS_MAX_RECALLS = 20


def fsrs_stability(half_life_days: float, recalls: np.ndarray | float, access_weight: float) -> np.ndarray:
    """Stability in days: S0 puts a never-recalled memory at retrievability 0.5 after the half-life
    (S0 = FSRS_FACTOR * h / 3), and each successful recall multiplies it by 1 + 2 * access_weight."""
    n = np.minimum(np.maximum(np.asarray(recalls, dtype=np.float64), 0.0), FSRS_MAX_RECALLS)
    return FSRS_FACTOR * half_life_days / 3.0 * np.power(1.0 + 2.0 * access_weight, n)


def retrievability(days: np.ndarray, stability: np.ndarray) -> np.ndarray:
    """FSRS's power-law forgetting curve: the probability of recall after `days`."""
    return np.power(1.0 + FSRS_FACTOR * np.maximum(days, 0.0) / stability, FSRS_POWER)


def decay_factor(
    days_since_access: np.ndarray,
    *,
    function: DecayFunction,
    half_life_days: float,
    access_count: np.ndarray | float = 0,
    access_weight: float = 0.0,
) -> np.ndarray:
    """Multiplicative decay in [0, 1] per memory (0 only for "linear").

    exponential: 0.5 ** (days / h); linear: max(0, 1 - days / (2h)), 0.5 at h;
    step: 0.5 ** floor(days / h), halving at each full half-life.
    h = half_life_days * (1 + access_weight * log1p(access_count)), so often
    used memories decay slower.
    fsrs: FSRS retrievability (1 + 19/81 * days / S) ** -0.5, a power law with a long tail, where
    the stability S grows with each successful recall (access_count): see fsrs_stability.
    days <= 0 gives exactly 1.0.
    """
    if not half_life_days > 0:
        raise ValueError("half_life_days must be > 0")
    if not access_weight >= 0:
        raise ValueError("access_weight must be >= 0")
    days = np.asarray(days_since_access, dtype=np.float64)
    count = np.maximum(np.asarray(access_count, dtype=np.float64), 0.0)
    half_life = half_life_days * (1.0 + access_weight * np.log1p(count))
    ages = np.maximum(days, 0.0) / half_life
    if function == "exponential":
        factor = np.power(0.5, ages)
    elif function == "linear":
        factor = np.maximum(0.0, 1.0 - ages / 2.0)
    elif function == "step":
        factor = np.power(0.5, np.floor(ages))
    elif function == "fsrs":
        factor = retrievability(days, fsrs_stability(half_life_days, count, access_weight))
    else:
        raise ValueError(f"unknown decay function: {function!r}")
    return np.where(days <= 0, 1.0, factor)


def apply_decay(importance: np.ndarray, factor: np.ndarray, min_importance: float) -> np.ndarray:
    """importance * factor, floored at ``min_importance``.

    A memory already below the floor keeps its importance (never raised).
    """
    imp = np.asarray(importance, dtype=np.float64)
    decayed = np.maximum(min_importance, imp * np.asarray(factor, dtype=np.float64))
    return np.where(imp < min_importance, imp, decayed)
