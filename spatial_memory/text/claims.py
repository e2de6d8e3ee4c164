"""What a statement claims, beyond its wording: the parts a restatement must keep.

Two statements that say the same thing in other words ("no production deploys on Fridays" /
"Friday deploys to production are forbidden") share their specifics - numbers, ordinals, days,
months, times of day, units, environments -, the people and things they name, and their stance
(negated or not: "not", "never", "no" and prohibitive words like "forbidden" count alike). Two
that disagree on any of these are different claims however close their embeddings are
(`disagreement`); `overlap` measures how much of their content words they share.

Names are capitalised words, except a sentence's first word, which is a name only when the
same word is capitalised inside a sentence somewhere in the texts read together (`claims`):
"Deploy rule: ..." names nothing, "Caroline went ..." names Caroline once some text says
"... Caroline ...".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..algorithms.keywords import STOPWORDS, tokenize
from .details import detail_signature, opposed, polarity

__all__ = ["Claim", "claims", "disagreement", "overlap"]

_WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
_MONTHS = frozenset("january february march april may june july august september october november december".split())
_TIMES = frozenset("morning afternoon evening night noon midnight am pm".split())
_PLACES = frozenset("staging production development sandbox windows macos linux ios android".split())
_ORDINALS = {
    "first": "1", "second": "2", "third": "3", "fourth": "4", "fifth": "5", "sixth": "6",
    "seventh": "7", "eighth": "8", "ninth": "9", "tenth": "10",
}  # fmt: skip
# Words that negate what they govern ("deploys are banned" = "we do not deploy"), besides the
# stance axes' own (forbidden, blocked, hates: details.polarity) and the contrastive "instead of".
_PROHIBITIVE = frozenset("forbids ban bans banned prohibit prohibits disallows instead".split())
# Events that undo each other: the same object bought or sold, opened or closed is another claim.
_EVENT_PAIRS = [
    ("buy buys bought purchase purchased", "sell sells sold"),
    ("open opens opened opening launch launched start started starting begin began", "close closes closed closing"),
    ("start started starting begin began", "finish finished complete completed end ended done"),
    ("win wins won victory", "lose loses lost"),
    ("join joined joins enrol enrolled register registered", "quit quits leave left stop stopped"),
    ("adopt adopted adopts", "died die dies passed"),
    ("last ago previous past", "next upcoming"),
    ("automatic automatically", "manual manually hand"),
    ("public external", "internal private"),
]
# The polarity axes (details.polarity) that are a stance, compared through the sign above
# rather than word against word ("not allowed" = "forbidden").
_STANCE_AXES = tuple(i for i, side in enumerate(polarity("allowed likes enabled accepted included")) if side)
_EVENTS = [(frozenset(a.split()), frozenset(b.split())) for a, b in _EVENT_PAIRS]
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*|[\"(]\s*)$")
_ORDINAL = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b", re.IGNORECASE)
_CLOCK = re.compile(r"\b0?(\d{1,2}):00\b")
_SUFFIXES = ("ing", "ed", "es", "s", "ly")


@dataclass(frozen=True)
class Claim:
    """The parts of a statement a restatement keeps."""

    numbers: frozenset[str]
    ordinals: frozenset[str]
    days: frozenset[str]
    months: frozenset[str]
    times: frozenset[str]
    units: frozenset[str]
    places: frozenset[str]
    names: frozenset[str]
    sign: int  # -1: negated (or prohibitive), +1: affirmed
    polar: tuple[int, ...]  # the other opposite-word axes (enabled/disabled, before/after, ...)
    events: tuple[int, ...]  # the same for events that undo each other (bought/sold, opened/closed)
    words: frozenset[str]  # content words, crudely stemmed


def claims(texts: Sequence[str]) -> list[Claim]:
    """The claim of each text; names are found across all of them (see the module's docstring)."""
    inside = {word for text in texts for word, first in _capitalised(text) if not first}
    return [_claim(text, inside) for text in texts]


def disagreement(a: Claim, b: Claim) -> str | None:
    """Why two statements are different claims, or None when nothing says so."""
    for name in ("numbers", "ordinals", "units"):  # each must say the same
        mine, theirs = getattr(a, name), getattr(b, name)
        if mine and theirs and mine != theirs:
            return name
    for name in ("days", "months", "times", "places"):  # one may be more precise than the other
        mine, theirs = getattr(a, name), getattr(b, name)
        if mine and theirs and not mine & theirs:
            return name
    if a.names - b.names and b.names - a.names:  # each names someone the other does not
        return "names"
    if a.sign != b.sign:
        return "negation"
    if opposed(a.polar, b.polar) or opposed(a.events, b.events):
        return "opposite words"
    return None


def overlap(a: Claim, b: Claim) -> float:
    """Shared content words over the content words of the shorter statement (0 when either has none)."""
    smaller = min(len(a.words), len(b.words))
    return len(a.words & b.words) / smaller if smaller else 0.0


def _claim(text: str, inside: set[str]) -> Claim:
    details, negated = detail_signature(_CLOCK.sub(r"\1", text))
    words = re.findall(r"[a-z]+", text.lower())
    ordinals = {_ORDINALS[w] for w in words if w in _ORDINALS}
    ordinals |= set(_ORDINAL.findall(text))
    numbers = {d.lstrip("0") or "0" for d in details if d[:1].isdigit()} - ordinals
    polar = polarity(text)
    sign = -1 if negated else 1
    if any(w in _PROHIBITIVE for w in words):
        sign = -sign
    for axis in _STANCE_AXES:
        if polar[axis] < 0:
            sign = -sign
    names = {
        word.lower()
        for word, first in _capitalised(text)
        if (not first or word in inside) and word.lower() not in STOPWORDS and not detail_signature(word)[0]
    }
    return Claim(
        numbers=frozenset(numbers),
        ordinals=frozenset(ordinals),
        days=details & _WEEKDAYS,
        months=details & _MONTHS,
        times=details & _TIMES,
        units=frozenset(d for d in details if not d[:1].isdigit()) - _WEEKDAYS - _MONTHS - _TIMES - _PLACES,
        places=details & _PLACES,
        names=frozenset(names),
        sign=sign,
        polar=tuple(0 if i in _STANCE_AXES else side for i, side in enumerate(polar)),
        events=_sides(words, _EVENTS),
        words=frozenset(_stem(w) for w in tokenize(text)),
    )


def _sides(words: list[str], pairs: list[tuple[frozenset[str], frozenset[str]]]) -> tuple[int, ...]:
    """Per pair: +1 when only its first words occur, -1 when only its second, else 0."""
    present = set(words)
    return tuple(bool(first & present) - bool(second & present) for first, second in pairs)


def _capitalised(text: str) -> list[tuple[str, bool]]:
    """Capitalised words (possessive dropped) and whether each starts a sentence."""
    found = []
    for match in _WORD.finditer(text):
        word = match.group()
        if word[0].isupper() and word != "I":
            found.append((word, bool(_SENTENCE_START.search(text[: match.start()]))))
    return found


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word
