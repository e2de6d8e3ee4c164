"""Small integer codes of vectors, and exact bounds on how far a dot product computed from them can
be from the float32 one.

A row v is coded as s * q + e: q integers of at most CODE_MAX in magnitude, s its largest magnitude
over CODE_MAX, e what is left. A query x is coded in two levels, t1 * w1 + t2 * w2 + d, each w of at
most QUERY_MAX (the second codes what the first left, so d is about 1/16,000 of x). Then

    v . x  =  s * (t1 * (q . w1) + t2 * (q . w2))  +  s * (q . d)  +  e . x

and the integer products q . w are exact. The last two terms are at most s * |q| * |d| + |e| * |x|
(Cauchy-Schwarz), and the float32 product a search computes differs from v . x by at most
gamma(dim) * |v| * |x| (any order of summation, fused or not). `bounds` are their sums, row by
row, so every row's float32 similarity lies within its bound of its approximation: a search can read the
codes (a quarter of the float32 rows' bytes) to find the few rows that can be among the best, and
compute only those in float32 (storage/search/int8_rows.py).

Codes stay within +-63 and query levels within 0..255 (offset by 128): a pair of their products
then stays within int16, the range of the u8 x s8 instruction of CPUs without VNNI, which saturates
beyond it. Every CPU computes the same exact integers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._linalg import below_kth_largest

CODE_MAX = 63
QUERY_MAX = 127
QUERY_ZERO = 128  # the query levels' zero point (uint8)


def float32_dot_error(dim: int) -> float:
    """gamma(dim): a float32 dot product of length `dim` is within this times |v| |x| of the real one."""
    unit = 2.0**-24
    return dim * unit / (1 - dim * unit)


@dataclass(frozen=True)
class RowTerms:
    """What the rows' approximations and bounds need besides their codes."""

    scales: np.ndarray  # float64 (rows,): row = scales * codes + residual
    scaled_codes: np.ndarray  # float64 (rows,): scales * |codes|
    # float64 (rows,): |residual| + gamma(dim) * |row|, the bound's terms that scale with |x|
    per_norm: np.ndarray


def code_rows(rows: np.ndarray, chunk: int = 512) -> tuple[np.ndarray, RowTerms]:
    """Codes of float32 rows (int8, each row scaled by its own largest magnitude) and their terms,
    `chunk` rows at a time (the float64 arithmetic of all at once would hold several copies)."""
    n, dim = rows.shape
    codes = np.empty((n, dim), dtype=np.int8)
    scales, scaled_codes, per_norm = np.empty(n), np.empty(n), np.empty(n)
    gamma = float32_dot_error(dim)
    for start in range(0, n, chunk):
        part = slice(start, min(n, start + chunk))
        values = np.asarray(rows[part], dtype=np.float64)
        largest = np.abs(values).max(axis=1)
        scale = np.where(largest > 0, largest / CODE_MAX, 1.0)
        coded = np.clip(np.rint(values / scale[:, None]), -CODE_MAX, CODE_MAX)
        codes[part], scales[part] = coded, scale
        scaled_codes[part] = scale * _norms(coded)
        per_norm[part] = _norms(values - scale[:, None] * coded) + gamma * _norms(values)
    return codes, RowTerms(scales=scales, scaled_codes=scaled_codes, per_norm=per_norm)


def _norms(rows: np.ndarray) -> np.ndarray:
    return np.sqrt(np.einsum("ij,ij->i", rows, rows))


@dataclass(frozen=True)
class QueryCodes:
    levels: np.ndarray  # uint8 (2, dim): w1 and w2, offset by QUERY_ZERO
    steps: tuple[float, float]  # t1, t2
    left: float  # |d|, what the two levels leave
    norm: float  # |x|


def code_query(query: np.ndarray) -> QueryCodes | None:
    """The query's two levels; None for a zero query (nothing to scale by)."""
    x = np.asarray(query, dtype=np.float64)
    first = float(np.abs(x).max(initial=0.0)) / QUERY_MAX
    if not first > 0 or not np.isfinite(first):
        return None
    levels = np.empty((2, x.size))
    np.rint(x / first, out=levels[0])
    rest = x - first * levels[0]
    second = float(np.abs(rest).max()) / QUERY_MAX or 1.0
    np.rint(rest / second, out=levels[1])
    left = rest - second * levels[1]
    levels += QUERY_ZERO
    return QueryCodes(
        levels=levels.astype(np.uint8),
        steps=(first, second),
        left=float(np.sqrt(left @ left)),
        norm=float(np.sqrt(x @ x)),
    )


def approximations(rows: RowTerms, query: QueryCodes, products: np.ndarray) -> np.ndarray:
    """Each row's approximate dot product with the query, from the integer products (2, rows)
    of the query's levels (zero point removed) with the rows' codes."""
    first, second = query.steps
    return rows.scales * (first * products[0] + second * products[1])


def bounds(rows: RowTerms, query: QueryCodes) -> np.ndarray:
    """Each row's float32 dot product with the query is no further than this from its approximation."""
    # + 1e-9: the float64 arithmetic of the approximations and of these terms.
    return rows.scaled_codes * query.left + rows.per_norm * query.norm + 1e-9


def rows_reaching(approximate: np.ndarray, margins: np.ndarray, exact: np.ndarray, limit: int) -> np.ndarray:
    """Which approximated rows can be among the best `limit` of all, as positions in `approximate`.
    Each row's float32 score lies within its margin of its approximation; `exact` holds the float32
    scores of the other candidates. A row whose approximation + margin is below `limit` lower
    bounds (approximation - margin, or an exact score) is beaten by at least `limit` rows."""
    count = approximate.size + exact.size
    if count <= limit:
        return np.arange(approximate.size)
    lower = approximate - margins
    if exact.size:
        lower = np.concatenate([lower, exact])
    return np.flatnonzero(approximate + margins >= below_kth_largest(lower, limit))
