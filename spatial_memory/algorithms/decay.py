"""Time-based importance decay."""

from __future__ import annotations

from typing import Literal

import numpy as np

DecayFunction = Literal["exponential", "linear", "step"]


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
    used memories decay slower. days <= 0 gives exactly 1.0.
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
