"""The cues ranking reads in a query and in its candidates' texts (pure numpy and the standard
library): whether the query asks "when", the calendar period it names, the speakers it names; whether a
memory's text refers to a time, states a date, asks a question, and how long it is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "DatePeriod",
    "QueryFeatures",
    "TextFeatures",
    "asks_question",
    "mentions_time",
    "query_features",
    "query_period",
    "stated_times",
    "word_counts",
]

# ---------------------------------------------------------------------------------------------
# query features

_TEMPORAL_QUERY = re.compile(
    r"^\W*when\b|\b(?:what|which) (?:year|month|day|date|time|week|weekend)\b|\bhow long (?:ago|has|have|had|did)\b"
    r"|\bsince when\b",
    re.IGNORECASE,
)
_MONTHS = {
    name: number
    for number, name in enumerate(
        "january february march april may june july august september october november december".split(), start=1
    )
}
_MONTH = "|".join(_MONTHS)
_ORD = r"(?:st|nd|rd|th)?"
# "October 13, 2023" / "13 October 2023" / "1 February, 2023"
_DATE_MDY = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}}){_ORD},?\s+((?:19|20)\d\d)\b", re.IGNORECASE)
_DATE_DMY = re.compile(rf"\b(\d{{1,2}}){_ORD}\s+(?:of\s+)?({_MONTH}),?\s+((?:19|20)\d\d)\b", re.IGNORECASE)
# "July 2023" / "in June" (a month without a year needs a preposition: "may" alone is mostly a verb)
_DATE_MY = re.compile(rf"\b({_MONTH}),?\s+((?:19|20)\d\d)\b", re.IGNORECASE)
_DATE_M = re.compile(rf"\b(?:in|during|since|early|late|mid)[\s-]+({_MONTH})\b", re.IGNORECASE)
_DATE_Y = re.compile(r"\b(?:in|during|since)\s+((?:19|20)\d\d)\b", re.IGNORECASE)
# "2023-05-08" / "2023-05"
_DATE_ISO = re.compile(r"\b((?:19|20)\d\d)-(0?[1-9]|1[0-2])(?:-(\d{1,2}))?\b")

# A time reference inside a memory's own words; a leading "(...)" stamp is the capture's date, not one.
_WEEKDAY = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_TIME_REF = re.compile(
    r"\b(?:yesterday|tomorrow|tonight|last night|ago|recently|lately|the other day|earlier today"
    r"|(?:last|next|this|past|previous|coming|upcoming|few|couple of)\s+(?:\w+\s+)?"
    rf"(?:weeks?|weekends?|months?|years?|summer|winter|spring|fall|autumn|nights?|days?|{_WEEKDAY})"
    rf"|(?:in|on|since|until|by|during)\s+(?:(?:early|late|mid)\s+)?(?:{_MONTH}|(?:19|20)\d\d)\b"
    rf"|{_WEEKDAY})\b"
)  # matched against lowercased text: faster than IGNORECASE
_LEADING_STAMP = re.compile(r"^\s*\([^)]{0,80}\)\s*")
_NAME_WORDS = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class DatePeriod:
    """A calendar period named by a query; None where the query does not say (no year: any year)."""

    year: int | None
    month: int | None = None
    day: int | None = None


@dataclass(frozen=True)
class QueryFeatures:
    """What the query says about who and when (build it with `query_features`).

    speakers: lowercased names of the conversation's speakers that the query names.
    temporal: a question about when ("When did ...", "What year ...", "How long ago ...").
    period: a calendar period the query names, or None.
    """

    text: str
    speakers: frozenset[str] = frozenset()
    temporal: bool = False
    period: DatePeriod | None = None


def _day(year: int, month: int, day: int) -> DatePeriod:
    """The day, or its whole month when the day cannot be in it."""
    days = (31, 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28, 31, 30, 31, 30, 31, 31, 30)
    days += (31, 30, 31)
    return DatePeriod(year, month, day if 1 <= day <= days[month - 1] else None)


def query_period(text: str) -> DatePeriod | None:
    """The first calendar period the text names: a day, a month (of a year or of any year), or a year."""
    if m := _DATE_ISO.search(text):
        if m.group(3) is None:
            return DatePeriod(int(m.group(1)), int(m.group(2)))
        return _day(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    if m := _DATE_MDY.search(text):
        return _day(int(m.group(3)), _MONTHS[m.group(1).lower()], int(m.group(2)))
    if m := _DATE_DMY.search(text):
        return _day(int(m.group(3)), _MONTHS[m.group(2).lower()], int(m.group(1)))
    if m := _DATE_MY.search(text):
        return DatePeriod(int(m.group(2)), _MONTHS[m.group(1).lower()])
    if m := _DATE_M.search(text):
        return DatePeriod(None, _MONTHS[m.group(1).lower()])
    if m := _DATE_Y.search(text):
        return DatePeriod(int(m.group(1)))
    return None


def query_features(text: str, speakers: Iterable[str | None] = ()) -> QueryFeatures:
    """Features of a query. `speakers`: the speaker names known among the candidates (or the namespace);
    empty when memories carry no speaker, which turns the speaker cue off."""
    words = {w.lower() for w in _NAME_WORDS.findall(text or "")}
    named = set()
    for s in speakers:
        if isinstance(s, str) and s.strip():
            parts = [p.lower() for p in _NAME_WORDS.findall(s)]
            if parts and all(p in words for p in parts):
                named.add(s.strip().lower())
    return QueryFeatures(
        text=text or "",
        speakers=frozenset(named),
        temporal=bool(_TEMPORAL_QUERY.search(text or "")),
        period=query_period(text or ""),
    )


# ---------------------------------------------------------------------------------------------
# text features of candidates (cheap enough per query; a server may also keep them with the memory)


def mentions_time(texts: Iterable[str | None]) -> np.ndarray:
    """Per text: does it refer to a time ("yesterday", "last week", "in May", "since 2020", a weekday)?
    A leading "(...)" stamp is the capture's own date and does not count."""
    stamp, pattern = _LEADING_STAMP.sub, _TIME_REF.search
    return np.array([pattern(stamp("", (t or "").lower(), count=1)) is not None for t in texts], dtype=bool)


def stated_times(texts: Iterable[str | None]) -> np.ndarray:
    """Per text: the date its leading "(...)" stamp names ("(1:56 pm on 8 May, 2023) ...", "(2023-05-08)
    ..."), as UTC epoch seconds of that day (of the month's first day for a month), NaN without one. A
    memory written with its date in front says when it happened even when nobody gave its occurred_at."""
    out = []
    for text in texts:
        stamp = _LEADING_STAMP.match(text or "")
        period = query_period(stamp.group()) if stamp else None
        if period is None or period.year is None or period.month is None:
            out.append(math.nan)
        else:
            day = np.datetime64(f"{period.year:04d}-{period.month:02d}-{period.day or 1:02d}", "s")
            out.append(float(day.astype(np.int64)))
    return np.array(out, dtype=np.float64)


def asks_question(texts: Iterable[str | None]) -> np.ndarray:
    """Per text: does it ask a question (contains "?")?"""
    return np.array(["?" in (t or "") for t in texts], dtype=bool)


# A memory that gives a cause or a fix, and one that only restates an error (a pasted traceback, a
# failed command): between the two, the answer is the first. Diagnostic wording only: everyday
# "because" or "it turned out" would move conversational recall (LoCoMo) for no reason.
_ANSWER_FORM = re.compile(
    r"(?i)\broot\s+cause\b|\bthe\s+(?:fix|solution|cause|culprit|problem|issue|reason)\s+(?:is|was)\b|"
    r"\b(?:fixed|solved|resolved)\s+(?:it\s+|this\s+)?(?:by|with)\b|\bcaused\s+by\b|"
    r"^fixed:|^to\s+fix\b|\bso\s+the\s+fix\b"
)
_ECHO_FORM = re.compile(
    r"Traceback \(most recent call last\)|\b[A-Z]\w*(?:Error|Exception):|^Command `[^`]*` failed:|\bfatal:|"
    r"\bcommand not found\b|\bNo such file or directory\b|\bnpm ERR!|\berror(?:\[\w+\])?:"
)


# A word every match of each pattern contains (in any case for the first, as written for the
# second): most texts hold none, and the plain substring searches that rule them out cost a
# fraction of the patterns' search.
_ANSWER_WORDS = ("cause", "fix", "solution", "culprit", "problem", "issue", "reason", "solved")
_ECHO_WORDS = (
    "Traceback",
    "Error",
    "Exception",
    "Command",
    "fatal:",
    "command not found",
    "No such file",
    "npm ERR!",
    "error",
)


def _may_state_answer(text: str) -> bool:
    if not text.isascii():  # the pattern's case folding reaches beyond ASCII (a dotless i reads as i)
        return True
    lowered = text.lower()
    return any(word in lowered for word in _ANSWER_WORDS)


def answer_forms(texts: Iterable[str | None]) -> np.ndarray:
    """Per text: 1 when it states a cause or a fix, -1 when it only restates an error, else 0."""
    out = []
    for text in texts:
        text = text or ""
        if _may_state_answer(text) and _ANSWER_FORM.search(text):
            out.append(1.0)
        elif any(word in text for word in _ECHO_WORDS) and _ECHO_FORM.search(text):
            out.append(-1.0)
        else:
            out.append(0.0)
    return np.array(out, dtype=np.float64)


def word_counts(texts: Iterable[str | None]) -> np.ndarray:
    """Per text: its length in whitespace-separated words."""
    return np.array([len((t or "").split()) for t in texts], dtype=np.float64)


class TextFeatures:
    """`word_counts`, `asks_question`, `mentions_time`, `stated_times` and `answer_forms` of texts, each
    distinct text worked out once and remembered (up to `max_texts`, then forgotten all at once): a
    server ranks the same memories' texts query after query."""

    def __init__(self, max_texts: int = 50_000) -> None:
        self._max = max_texts
        # text -> (words, question, time_ref, stated_at, form), as floats (1.0 / 0.0 for the flags)
        self._known: dict[str | None, tuple[float, float, float, float, float]] = {}

    def _rows(self, texts: Sequence[str | None]) -> np.ndarray:
        """(len(texts), 5) float64: each text's features, in `_known`'s order."""
        known = self._known
        new = [t for t in dict.fromkeys(texts) if t not in known]
        if new:
            if len(known) + len(new) > self._max:
                known = self._known = {}  # a new dict: a reader of the old one still finds its texts
            rows = zip(
                word_counts(new).tolist(),
                asks_question(new).astype(np.float64).tolist(),
                mentions_time(new).astype(np.float64).tolist(),
                stated_times(new).tolist(),
                answer_forms(new).tolist(),
            )
            known.update(zip(new, rows))
        if not texts:
            return np.zeros((0, 5))
        return np.array([known[t] for t in texts], dtype=np.float64)

    def forms(self, texts: Sequence[str | None]) -> np.ndarray:
        """`answer_forms` of the texts."""
        return self._rows(texts)[:, 4].copy()

    def of(self, texts: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(words, question, time_ref, stated_at) per text, as the four functions give them."""
        return self.all_of(texts)[:4]

    def all_of(self, texts: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(words, question, time_ref, stated_at, form) per text: `of` and `forms` in one look-up."""
        rows = self._rows(texts)
        return (
            rows[:, 0].copy(),
            rows[:, 1] != 0.0,
            rows[:, 2] != 0.0,
            rows[:, 3].copy(),
            rows[:, 4].copy(),
        )
