"""Conversation-aware recall ranking over a candidate set (draft for the study)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .keywords import STOPWORDS

# ---------------------------------------------------------------------------------------------
# query features

_TEMPORAL_QUERY = re.compile(
    r"^\s*when\b|\bwhat (?:year|month|day|date|time)\b|\bwhich (?:year|month|day|date)\b|\bhow long ago\b"
    r"|\bhow long (?:has|have|had|did|was|were)\b|\bwhat time\b",
    re.IGNORECASE,
)
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        "january february march april may june july august september october november december".split()
    )
}
_MONTH_ALT = "|".join(_MONTHS)
# "October 13, 2023", "13 October 2023", "1 February, 2023", "July 2023", "in June", "in 2023"
_DATE_MDY = re.compile(rf"\b({_MONTH_ALT})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.IGNORECASE)
_DATE_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_ALT}),?\s+(\d{{4}})\b", re.IGNORECASE)
_DATE_MY = re.compile(rf"\b({_MONTH_ALT}),?\s+(\d{{4}})\b", re.IGNORECASE)
_DATE_M = re.compile(rf"\b(?:in|during|of|since|early|late|mid|last|this)\s+({_MONTH_ALT})\b", re.IGNORECASE)
_DATE_Y = re.compile(r"\b(?:in|during|of|since)\s+((?:19|20)\d\d)\b", re.IGNORECASE)

# Relative or explicit time references inside a memory's own text (not a leading "(date) " stamp).
_TIME_REF = re.compile(
    r"\b(?:yesterday|tomorrow|tonight|last night|ago|recently|lately|the other day|earlier this"
    r"|(?:last|next|this|past|previous|coming|few|couple of|upcoming)\s+(?:\w+\s+)?"
    r"(?:week|weekend|month|year|summer|winter|spring|fall|autumn|night|day|days|weeks|months|years|friday|saturday"
    r"|sunday|monday|tuesday|wednesday|thursday)s?"
    rf"|(?:in|on|since|until|by)\s+(?:(?:early|late|mid)\s+)?(?:{_MONTH_ALT}|(?:19|20)\d\d)"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
    re.IGNORECASE,
)
_LEADING_STAMP = re.compile(r"^\s*\([^)]{0,80}\)\s*")


@dataclass(frozen=True)
class DatePeriod:
    """A calendar period named by the query: year and/or month and/or day (None = unnamed)."""

    year: int | None
    month: int | None
    day: int | None = None


@dataclass(frozen=True)
class QueryFeatures:
    text: str
    speakers: frozenset[str] = frozenset()  # lowercased names of the speakers the query names
    temporal: bool = False
    period: DatePeriod | None = None


def query_period(text: str) -> DatePeriod | None:
    for pattern, order in ((_DATE_MDY, "mdy"), (_DATE_DMY, "dmy")):
        m = pattern.search(text)
        if m:
            g = dict(zip(order, m.groups(), strict=True))
            return DatePeriod(int(g["y"]), _MONTHS[g["m"].lower()], int(g["d"]))
    m = _DATE_MY.search(text)
    if m:
        return DatePeriod(int(m.group(2)), _MONTHS[m.group(1).lower()])
    m = _DATE_M.search(text)
    if m and not (m.group(1).lower() == "may" and not re.search(r"\bin may\b", text, re.IGNORECASE)):
        return DatePeriod(None, _MONTHS[m.group(1).lower()])
    m = _DATE_Y.search(text)
    if m:
        return DatePeriod(int(m.group(1)), None)
    return None


def query_features(text: str, speakers: Sequence[str] = ()) -> QueryFeatures:
    """What the query says about who and when: named speakers, a 'when' question, a named period."""
    words = {w.lower() for w in re.findall(r"[^\W_]+", text)}
    named = frozenset(s.lower() for s in speakers if s and s.lower() in words)
    return QueryFeatures(
        text=text,
        speakers=named,
        temporal=bool(_TEMPORAL_QUERY.search(text)),
        period=query_period(text),
    )


def mentions_time(texts: Sequence[str]) -> np.ndarray:
    """Per text: does it refer to a time (yesterday, last week, in May, 2022 ...)? A leading "(...)" stamp is
    the capture's own date and does not count."""
    return np.array([bool(_TIME_REF.search(_LEADING_STAMP.sub("", t or ""))) for t in texts], dtype=bool)


# ---------------------------------------------------------------------------------------------
# candidates


@dataclass(frozen=True)
class CandidateArrays:
    similarity: np.ndarray
    bm25: np.ndarray
    bm25_expansion: np.ndarray
    session: np.ndarray
    sequence: np.ndarray
    speaker: np.ndarray  # object array of lowercased names or None
    occurred_at: np.ndarray
    time_ref: np.ndarray

    def __len__(self) -> int:
        return int(self.similarity.shape[0])

    @classmethod
    def build(
        cls,
        similarity: Sequence[float] | np.ndarray,
        bm25: Sequence[float] | np.ndarray | None = None,
        bm25_expansion: Sequence[float] | np.ndarray | None = None,
        session: Sequence[int] | np.ndarray | None = None,
        sequence: Sequence[int] | np.ndarray | None = None,
        speaker: Sequence[str | None] | None = None,
        occurred_at: Sequence[float] | np.ndarray | None = None,
        time_ref: Sequence[bool] | np.ndarray | None = None,
    ) -> CandidateArrays:
        sim = np.asarray(similarity, dtype=np.float64).reshape(-1)
        n = sim.shape[0]

        def floats(a: object) -> np.ndarray:
            if a is None:
                return np.full(n, np.nan)
            arr = np.asarray(a, dtype=np.float64).reshape(-1)
            if arr.shape[0] != n:
                raise ValueError("candidate arrays must have the same length")
            return arr

        def ints(a: object) -> np.ndarray:
            if a is None:
                return np.full(n, -1, dtype=np.int64)
            arr = np.asarray(a, dtype=np.int64).reshape(-1)
            if arr.shape[0] != n:
                raise ValueError("candidate arrays must have the same length")
            return arr

        spk = np.full(n, None, dtype=object)
        if speaker is not None:
            if len(speaker) != n:
                raise ValueError("candidate arrays must have the same length")
            spk[:] = [s.lower() if isinstance(s, str) and s else None for s in speaker]
        tr = np.zeros(n, bool) if time_ref is None else np.asarray(time_ref, dtype=bool).reshape(-1)
        if tr.shape[0] != n:
            raise ValueError("candidate arrays must have the same length")
        return cls(
            sim, floats(bm25), floats(bm25_expansion), ints(session), ints(sequence), spk, floats(occurred_at), tr
        )


@dataclass(frozen=True)
class RankingParams:
    alpha: float = 0.5
    expansion_weight: float = 0.0
    neighbour_weights: tuple[float, ...] = (0.5, 0.25)
    neighbour_mode: str = "sum"  # sum | max
    neighbour_forward: float = 1.0  # multiplier for a hit's *later* neighbours (answer after the question)
    vector_neighbours: float = 0.0
    sim_norm: str = "minmax"
    speaker_boost: float = 0.0
    time_boost: float = 0.0
    date_boost: float = 0.0
    date_slack_days: float = 31.0
    session_boost: float = 0.0
    session_mode: str = "max"
    renorm: bool = True


def _scale_max(x: np.ndarray) -> np.ndarray:
    """x / max(x), NaN and negatives as 0; all-zero stays zero."""
    y = np.where(np.isfinite(x), x, 0.0)
    y = np.maximum(y, 0.0)
    hi = y.max() if y.size else 0.0
    return y / hi if hi > 0 else np.zeros_like(y)


def _norm_sim(sim: np.ndarray, mode: str) -> np.ndarray:
    s = np.where(np.isfinite(sim), sim, np.nan)
    if not np.isfinite(s).any():
        return np.zeros_like(s)
    hi = np.nanmax(s)
    if mode == "minmax":
        lo = np.nanmin(s)
    elif mode == "median":
        lo = np.nanmedian(s)
    elif mode == "zero":
        lo = 0.0
    else:
        raise ValueError(mode)
    out = (s - lo) / (hi - lo) if hi > lo else np.ones_like(s)
    return np.clip(np.nan_to_num(out, nan=0.0), 0.0, 1.0)


def _neighbour_index(session: np.ndarray, sequence: np.ndarray, offset: int) -> np.ndarray:
    """For each candidate, the index of the candidate at sequence + offset in the same session, or -1."""
    n = session.shape[0]
    known = (session >= 0) & (sequence >= 0)
    out = np.full(n, -1, dtype=np.int64)
    if not known.any():
        return out
    idx = np.flatnonzero(known)
    key = session[idx] * (1 << 32) + sequence[idx]
    order = np.argsort(key, kind="stable")
    skey = key[order]
    target = key + offset
    pos = np.searchsorted(skey, target)
    pos_c = np.minimum(pos, skey.shape[0] - 1)
    hit = skey[pos_c] == target
    out[idx[hit]] = idx[order[pos_c[hit]]]
    return out


def _propagate(x: np.ndarray, session: np.ndarray, sequence: np.ndarray, p: RankingParams) -> np.ndarray:
    out = x.copy()
    for d, w in enumerate(p.neighbour_weights, start=1):
        if w == 0:
            continue
        for off in (-d, d):
            nb = _neighbour_index(session, sequence, off)
            # a candidate at sequence s takes from its neighbour at s + off; if off < 0 the neighbour came
            # before it, i.e. this candidate follows a hit
            ww = w * (p.neighbour_forward if off < 0 else 1.0)
            val = np.where(nb >= 0, x[np.maximum(nb, 0)], 0.0) * ww
            if p.neighbour_mode == "sum":
                out = out + val
            else:
                out = np.maximum(out, val)
    return out


def _date_match(occurred: np.ndarray, period: DatePeriod, slack_days: float) -> np.ndarray:
    ok = np.isfinite(occurred)
    res = np.zeros(occurred.shape[0], bool)
    if not ok.any():
        return res
    t = occurred[ok].astype("int64").astype("datetime64[s]")
    years = t.astype("datetime64[Y]").astype(np.int64) + 1970
    slack = np.timedelta64(int(slack_days * 86400), "s")
    match = np.zeros(t.shape[0], bool)
    cand_years = [years, years - 1] if period.year is None else [np.full_like(years, period.year)]
    for y in cand_years:
        if period.month is None:
            start = (y - 1970).astype("datetime64[Y]").astype("datetime64[s]")
            end = (y - 1970 + 1).astype("datetime64[Y]").astype("datetime64[s]")
        else:
            m = (y - 1970) * 12 + period.month - 1
            start_m = m.astype("datetime64[M]")
            if period.day is None:
                start = start_m.astype("datetime64[s]")
                end = (start_m + 1).astype("datetime64[s]")
            else:
                start = start_m.astype("datetime64[D]").astype("datetime64[s]") + np.timedelta64(
                    (period.day - 1) * 86400, "s"
                )
                end = start + np.timedelta64(86400, "s")
        match |= (t >= start) & (t < end + slack)
    res[ok] = match
    return res


def rank(
    query: QueryFeatures, cands: CandidateArrays, params: RankingParams | None = None
) -> tuple[np.ndarray, np.ndarray]:
    p = params or RankingParams()
    n = len(cands)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0)
    v = _norm_sim(cands.similarity, p.sim_norm)
    k = _scale_max(cands.bm25)
    if p.expansion_weight > 0:
        k = _scale_max(k + p.expansion_weight * _scale_max(cands.bm25_expansion))
    structured = bool(((cands.session >= 0) & (cands.sequence >= 0)).any())
    if structured:
        k = _propagate(k, cands.session, cands.sequence, p)
        if p.renorm:
            k = _scale_max(k)
        if p.vector_neighbours > 0:
            vp = p.vector_neighbours
            v2 = _propagate(
                v,
                cands.session,
                cands.sequence,
                dataclass_replace(p, neighbour_weights=tuple(w * vp for w in p.neighbour_weights)),
            )
            v = np.maximum(v, v2 / max(v2.max(), 1e-12)) if p.neighbour_mode == "max" else v2 / max(v2.max(), 1e-12)
    score = p.alpha * v + (1 - p.alpha) * k
    if p.speaker_boost and query.speakers:
        spk = np.array([s in query.speakers if s is not None else False for s in cands.speaker], bool)
        known = np.array([s is not None for s in cands.speaker], bool)
        present = {s for s in cands.speaker if s is not None}
        if spk.any() and not present <= query.speakers:
            score = score + p.speaker_boost * spk
        del known
    if p.time_boost and query.temporal:
        score = score + p.time_boost * cands.time_ref
    if p.date_boost and query.period is not None:
        score = score + p.date_boost * _date_match(cands.occurred_at, query.period, p.date_slack_days)
    if p.session_boost and structured:
        score = score + p.session_boost * _session_support(score, cands.session, p.session_mode)
    order = np.lexsort((np.arange(n), -np.nan_to_num(cands.similarity, nan=-np.inf), -score))
    return order, score


def _session_support(score: np.ndarray, session: np.ndarray, mode: str) -> np.ndarray:
    known = session >= 0
    out = np.zeros_like(score)
    if not known.any():
        return out
    uniq, inv = np.unique(session[known], return_inverse=True)
    s = score[known]
    hi = score.max() if score.max() > 0 else 1.0
    if mode == "max":
        # best *other* score in the session
        best = np.full(uniq.shape[0], -np.inf)
        np.maximum.at(best, inv, s)
        # second best for the argmax members
        order = np.lexsort((-s, inv))
        second = np.full(uniq.shape[0], 0.0)
        first_pos = np.r_[0, np.flatnonzero(np.diff(inv[order])) + 1]
        counts = np.bincount(inv, minlength=uniq.shape[0])
        has2 = counts[inv[order][first_pos]] > 1
        second_vals = np.zeros(first_pos.shape[0])
        second_vals[has2] = s[order][first_pos[has2] + 1]
        second[inv[order][first_pos]] = second_vals
        other = np.where(s >= best[inv], second[inv], best[inv])
        out[known] = np.maximum(other, 0) / hi
    elif mode == "sum":
        tot = np.bincount(inv, weights=np.maximum(s, 0))
        out[known] = (tot[inv] - np.maximum(s, 0)) / hi
        out = out / max(out.max(), 1e-12)
    return out


def dataclass_replace(p: RankingParams, **kw: object) -> RankingParams:
    import dataclasses

    return dataclasses.replace(p, **kw)


# ---------------------------------------------------------------------------------------------
# RM3

_WORD = re.compile(r"[^\W_][\w'\-]*[^\W_]|[^\W_]")


def _terms(text: str) -> list[str]:
    text = _LEADING_STAMP.sub("", text.lower().replace("\u2019", "'"))
    out = []
    for w in _WORD.findall(text):
        w = re.sub(r"'s$", "", w)
        if len(w) >= 3 and w not in STOPWORDS and not w.isdigit():
            out.append(w)
    return out


def expansion_query(
    query: str,
    hit_texts: Sequence[str],
    hit_scores: Sequence[float] | np.ndarray | None = None,
    *,
    terms: int = 10,
    exclude: Sequence[str] = (),
) -> str:
    """RM3 expansion terms from the top keyword hits (relevance model RM1 weights), query terms excluded."""
    if not hit_texts or terms <= 0:
        return ""
    scores = np.ones(len(hit_texts)) if hit_scores is None else np.asarray(hit_scores, dtype=np.float64)
    scores = np.where(np.isfinite(scores) & (scores > 0), scores, 0.0)
    if scores.sum() <= 0:
        scores = np.ones(len(hit_texts))
    scores = scores / scores.sum()
    qterms = {_stem(t) for t in _terms(query)} | {_stem(e.lower()) for e in exclude}
    weight: Counter[str] = Counter()
    surface: dict[str, str] = {}
    for text, s in zip(hit_texts, scores, strict=False):
        ts = _terms(text)
        if not ts:
            continue
        for t, c in Counter(ts).items():
            st = _stem(t)
            if st in qterms:
                continue
            weight[st] += s * c / len(ts)
            surface.setdefault(st, t)
    best = sorted(weight.items(), key=lambda kv: (-kv[1], kv[0]))[:terms]
    return " ".join(surface[st] for st, _ in best)


def _stem(word: str) -> str:
    for suf in ("ing", "ed", "es", "s"):
        if len(word) > len(suf) + 3 and word.endswith(suf):
            return word[: -len(suf)]
    return word


__all__ = [
    "CandidateArrays",
    "DatePeriod",
    "QueryFeatures",
    "RankingParams",
    "expansion_query",
    "mentions_time",
    "query_features",
    "rank",
]

_ = (math, field)
