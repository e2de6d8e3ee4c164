"""Spherical linear interpolation between embedding directions."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_TINY_ANGLE = 1e-6  # radians; below this slerp and normalized lerp coincide
_DEGENERATE_SIN = 1e-6  # |sin(angle)| below this near pi: great circle undefined


def interpolation_ts(steps: int) -> np.ndarray:
    """``steps`` evenly spaced values from 0.0 to 1.0 inclusive."""
    if steps < 2:
        raise ValueError("steps must be >= 2")
    return np.linspace(0.0, 1.0, int(steps))


def _unit(v: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(v, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains non-finite values")
    norm = np.linalg.norm(arr)
    if norm == 0.0:
        raise ValueError(f"{name} is the zero vector")
    return arr / norm


def _orthogonal_to(v: np.ndarray) -> np.ndarray:
    """Deterministic unit vector orthogonal to unit ``v`` (Gram-Schmidt)."""
    axis = np.zeros_like(v)
    axis[int(np.argmin(np.abs(v)))] = 1.0
    u = axis - (axis @ v) * v
    return u / np.linalg.norm(u)


def slerp(v0: np.ndarray, v1: np.ndarray, ts: np.ndarray | Sequence[float]) -> np.ndarray:
    """Points along the great circle from ``v0`` to ``v1``, shape (len(ts), d), float32.

    Inputs are normalized first. Rows are unit norm; t=0 and t=1 give the inputs.
    For (near-)opposite inputs a deterministic orthogonal direction is used.
    """
    a, b = _unit(v0, "v0"), _unit(v1, "v1")
    if a.shape != b.shape:
        raise ValueError(f"dimension mismatch: {a.shape[0]} vs {b.shape[0]}")
    t = np.asarray(ts, dtype=np.float64).reshape(-1)
    if a.shape[0] == 1 or t.size == 0:
        # 1-D "sphere" is just +-1: no path between the points to follow.
        out = np.where(t[:, None] < 0.5, a, b)
        return out.astype(np.float32)

    dot = float(np.clip(a @ b, -1.0, 1.0))
    perp = b - dot * a
    sin_omega = float(np.linalg.norm(perp))
    # atan2 stays accurate near 0 and pi where arccos(dot) loses precision.
    omega = float(np.arctan2(sin_omega, dot))

    if omega < _TINY_ANGLE:
        out = (1.0 - t)[:, None] * a + t[:, None] * b
    else:
        if sin_omega < _DEGENERATE_SIN:
            u = _orthogonal_to(a)
        else:
            u = perp / sin_omega
        angles = t * omega
        out = np.cos(angles)[:, None] * a + np.sin(angles)[:, None] * u
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    out[t == 0.0] = a
    out[t == 1.0] = b
    return out.astype(np.float32)
