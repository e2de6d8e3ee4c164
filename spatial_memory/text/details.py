"""Text helpers for `consolidate` (pure, standard library plus the extraction splitter).

- :func:`detail_signature` / :func:`polarity`: the specifics of a statement (numbers,
  days, months, time units, environments, negation; polar words such as
  enabled/disabled). Embeddings
  barely tell "100 requests per minute" from "1000 requests per hour" (cosine 0.94
  with MiniLM, higher than most paraphrases), so two memories are only near-duplicates
  when their signatures are equal, they use no opposite words, and their vectors are close. A paraphrase that
  words a detail differently is left alone: not merging is always safe, merging
  look-alikes loses a fact.
- :func:`merge_texts`: the content of a merged memory, keeping every distinct sentence
  of every member (the representative's text verbatim first, then the sentences of
  the others that it does not already contain, compared case- and
  whitespace-insensitively).
- :func:`content_covered`: whether a text's every sentence survives in another text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .extraction import split_sentences

__all__ = [
    "detail_signature",
    "polarity",
    "specifics",
    "opposed",
    "split_opposed",
    "sentence_pieces",
    "piece_key",
    "merge_texts",
    "content_covered",
]

_NUMBER_RE = re.compile(r"\d+(?:[.,:]\d+)*")
_WORD_RE = re.compile(r"[a-z]+(?:'[a-z]+)*")
_THOUSANDS_RE = re.compile(r"\d{1,3}(?:,\d{3})+")
_MAY_RE = re.compile(r"(?<![.!?]\s)(?<!^)\bMay\b")

_NUMBER_WORDS = {
    "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
    "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "twenty": "20", "thirty": "30",
    "forty": "40", "fifty": "50", "hundred": "100", "thousand": "1000", "million": "1000000",
    "billion": "1000000000", "once": "1", "twice": "2",
}  # fmt: skip


def _canon(groups: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for canonical, words in groups.items():
        for word in words.split():
            out[word] = canonical
    return out


# words whose difference makes two otherwise similar statements different facts
_DETAIL_WORDS = _canon(
    {
        "monday": "monday mondays mon", "tuesday": "tuesday tuesdays tue tues",
        "wednesday": "wednesday wednesdays", "thursday": "thursday thursdays thu thur thurs",
        "friday": "friday fridays fri", "saturday": "saturday saturdays", "sunday": "sunday sundays",
        "january": "january jan", "february": "february feb", "march": "march", "april": "april apr",
        "june": "june jun", "july": "july jul", "august": "august aug", "september": "september sep sept",
        "october": "october oct", "november": "november nov", "december": "december dec",
        "morning": "morning mornings", "afternoon": "afternoon afternoons", "evening": "evening evenings",
        "night": "night nights nightly overnight", "noon": "noon midday", "midnight": "midnight",
        "am": "am", "pm": "pm",
        "millisecond": "ms millisecond milliseconds msec", "second": "second seconds sec secs",
        "minute": "minute minutes min mins", "hour": "hour hours hourly hr hrs",
        "day": "day days daily", "week": "week weeks weekly", "month": "month months monthly",
        "quarter": "quarter quarters quarterly", "year": "year years yearly annually annual",
        "kb": "kb kib kilobyte kilobytes", "mb": "mb mib megabyte megabytes",
        "gb": "gb gib gigabyte gigabytes", "tb": "tb tib terabyte terabytes",
        "percent": "percent", "staging": "staging", "production": "production prod",
        "development": "development", "sandbox": "sandbox",
        "windows": "windows", "macos": "macos osx", "linux": "linux", "ios": "ios", "android": "android",
    }
)  # fmt: skip

# pairs of opposite words: statements using opposite sides are different facts
_POLAR_PAIRS = [
    ("enable enabled enables enabling", "disable disabled disables disabling"),
    ("true", "false"),
    (
        "allow allowed allows permit permitted",
        "deny denied denies forbid forbidden block blocked disallow disallowed prohibited",
    ),
    ("public", "private"),
    ("minimum least lowest", "maximum max most highest"),
    ("increase increased increases raise raised", "decrease decreased decreases reduce reduced"),
    ("before prior", "after"),
    ("more higher greater larger bigger", "less fewer lower smaller"),
    ("faster quicker", "slower"),
    ("sync synchronous synchronously", "async asynchronous asynchronously"),
    ("required mandatory", "optional"),
    ("success succeeded succeeds passed passes", "failure failed fails"),
    ("like likes love loves prefer prefers", "dislike dislikes hate hates"),
    ("internal", "external"),
    ("inbound incoming", "outbound outgoing"),
    ("ascending", "descending"),
    ("light", "dark"),
    ("oldest earliest", "newest latest"),
    ("accept accepted accepts approve approved", "reject rejected rejects"),
    ("include included includes", "exclude excluded excludes"),
    ("online", "offline"),
    ("frontend", "backend"),
    ("client", "server"),
]  # fmt: skip
_POLAR = [(frozenset(a.split()), frozenset(b.split())) for a, b in _POLAR_PAIRS]


def _polar_sides(pairs: list[tuple[frozenset[str], frozenset[str]]]) -> dict[str, list[tuple[int, int]]]:
    """word -> each (pair, side) it belongs to: side +1 the pair's first words, -1 its second."""
    sides: dict[str, list[tuple[int, int]]] = {}
    for pair, (first, second) in enumerate(pairs):
        for side, words in ((1, first), (-1, second)):
            for word in words:
                sides.setdefault(word, []).append((pair, side))
    return sides


_POLAR_SIDES = _polar_sides(_POLAR)

_NEGATIONS = frozenset("not no never cannot without none nothing nobody neither nor nowhere".split())


def _words(text: str) -> list[str]:
    return _WORD_RE.findall(text.lower().replace("\u2019", "'"))


def detail_signature(text: str) -> tuple[frozenset[str], bool]:
    """(specific details, negated): statements must share both to be the same fact.

    Details are numbers (``1,000`` = ``1000``, small number words included), days,
    months, times of day, time and size units, environments and platforms.
    """
    return _signature_of(text, _words(text))


def _signature_of(text: str, words: list[str]) -> tuple[frozenset[str], bool]:
    details = set()
    for number in _NUMBER_RE.findall(text):
        if _THOUSANDS_RE.fullmatch(number):
            number = number.replace(",", "")
        details.add(number)
    negated = False
    for word in words:
        if word in _NEGATIONS or word.endswith("n't"):
            negated = True
        elif word in _NUMBER_WORDS:
            details.add(_NUMBER_WORDS[word])
        elif word in _DETAIL_WORDS:
            details.add(_DETAIL_WORDS[word])
    # "May" is a month only when capitalised mid-sentence ("due in May", not "we may")
    if _MAY_RE.search(text):
        details.add("may")
    return frozenset(details), negated


def polarity(text: str) -> tuple[int, ...]:
    """Per pair of opposite words (enabled/disabled, light/dark, ...): +1, -1 or 0 (neither or both)."""
    return _polarity_of(_words(text))


def _polarity_of(words: list[str]) -> tuple[int, ...]:
    positive = [0] * len(_POLAR)
    negative = [0] * len(_POLAR)
    for word in words:
        for pair, side in _POLAR_SIDES.get(word, ()):
            (positive if side > 0 else negative)[pair] = 1
    return tuple(p - n for p, n in zip(positive, negative, strict=True))


def specifics(text: str) -> tuple[tuple[frozenset[str], bool], tuple[int, ...]]:
    """(detail_signature(text), polarity(text)), reading the text's words once."""
    words = _words(text)
    return _signature_of(text, words), _polarity_of(words)


def opposed(p: tuple[int, ...], q: tuple[int, ...]) -> bool:
    """True when two statements use opposite words of some pair ("enabled" vs "disabled")."""
    return any(x * y < 0 for x, y in zip(p, q, strict=True))


def split_opposed(texts: Sequence[str], smallest: int) -> list[list[int]]:
    """Indexes of `texts` in groups where no two use opposite words (enabled / disabled), each text
    in the first group it agrees with; groups of at least `smallest`, each in index order."""
    polar = [polarity(text) for text in texts]
    parts: list[list[int]] = []
    for index in range(len(texts)):
        home = next((p for p in parts if not any(opposed(polar[index], polar[j]) for j in p)), None)
        if home is None:
            parts.append([index])
        else:
            home.append(index)
    return [p for p in parts if len(p) >= smallest]


def sentence_pieces(text: str) -> list[str]:
    """``text`` cut after each sentence end; together the pieces hold every character.

    Unlike :func:`split_sentences` nothing is dropped: code blocks, list markers and
    headings stay attached to the piece they precede.
    """
    pieces = []
    start = 0
    for _, end in split_sentences(text):
        if end > start:
            pieces.append(text[start:end])
            start = end
    pieces.append(text[start:])
    return [p.strip() for p in pieces if p.strip()]


def piece_key(piece: str) -> str:
    """Comparison key: case-folded, whitespace collapsed, without trailing punctuation."""
    return " ".join(piece.casefold().split()).rstrip(" .!?;:,")


def merge_texts(texts: Sequence[str]) -> str:
    """The first text verbatim, then every sentence of the others it does not contain yet.

    Each later text contributes its new sentences (in their order) as one line.
    """
    if not texts:
        return ""
    merged = texts[0].strip()
    seen = {piece_key(p) for p in sentence_pieces(merged)}
    for text in texts[1:]:
        fresh = []
        for piece in sentence_pieces(text):
            key = piece_key(piece)
            if key and key not in seen:
                seen.add(key)
                fresh.append(piece)
        if fresh:
            joiner = "\n" if any("\n" in p for p in fresh) else " "
            merged += "\n" + joiner.join(fresh)
    return merged


def content_covered(original: str, container: str) -> bool:
    """True when every sentence of ``original`` appears in ``container`` (case/space-insensitive)."""
    haystack = " ".join(container.casefold().split())
    return all(piece_key(p) in haystack for p in sentence_pieces(original))
