"""Pattern-based extraction of memorable statements from free text.

Pure module (standard library only). It turns meeting notes, chat logs, commit messages, bug reports,
markdown documents and personal notes into a list of :class:`Statement` objects worth remembering.

Pipeline
--------
1. :func:`split_sentences` (text/sentences.py) segments the text in linear time, leaving out code
   blocks, list markers, heading hashes, quote markers and chat speaker prefixes.
2. :func:`extract_candidates` scores every sentence against the pattern families in
   :data:`PATTERN_TYPES` (the rule table: text/rules.py). The best family gives a base confidence,
   which is then nudged by global cues (explicit markers raise it; questions, hedges, chat filler,
   headings/titles, very short or very long statements lower it). At most one candidate per sentence
   is kept.

Sentences longer than ``MAX_SENTENCE_CHARS`` are skipped, so the whole run is linear in the input size.
"""

from __future__ import annotations

from dataclasses import dataclass

from .rules import WORD_RE, score_sentence
from .sentences import sentences, split_sentences, trim_period

__all__ = [
    "PATTERN_TYPES",
    "Statement",
    "split_sentences",
    "extract_candidates",
    "clean_span",
]

PATTERN_TYPES = (
    "decision",
    "definition",
    "solution",
    "error",
    "pattern",
    "explicit",
    "important",
    "fact",
    "preference",
    "insight",
    "requirement",
    "problem",
)


@dataclass(frozen=True)
class Statement:
    """A statement worth remembering.

    Invariant: ``content == clean_span(text[start_pos:end_pos])`` where
    ``clean_span`` drops ``**`` bold markers and collapses whitespace.  The
    span never includes list markers, heading hashes, block-quote markers or
    chat speaker prefixes, and never a single trailing sentence period.
    """

    content: str
    confidence: float
    pattern_matched: str
    start_pos: int
    end_pos: int


MAX_SENTENCE_CHARS = 2000


def clean_span(raw: str) -> str:
    """Turn a raw span of the original text into candidate content.

    Drops ``**`` bold markers and collapses runs of whitespace (including the
    line breaks of hard-wrapped text) into single spaces.
    """
    return " ".join(raw.replace("**", "").split())


def _norm_key(content: str) -> str:
    return " ".join(w.lower() for w in WORD_RE.findall(content))


def extract_candidates(text: str, min_confidence: float = 0.5) -> list:
    """Extract memorable statements from ``text``.

    Returns candidates sorted by ``start_pos``, at most one per sentence (the
    best-scoring pattern), with ``confidence >= min_confidence`` and no two
    candidates with the same normalized content (the first one wins).
    """
    if not text:
        return []
    out = []
    seen = set()
    memo: dict = {}  # identical lines (logs, repeated bullets) are scored once
    for sent in sentences(text):
        s, e = sent.start, sent.end
        if e - s > MAX_SENTENCE_CHARS:
            continue
        e = trim_period(text, s, e)
        # drop bold markers wrapping the whole span edges
        content = clean_span(text[s:e])
        if not content:
            continue
        raw = text[s:e]
        mkey = (raw, sent.unit.kind, sent.unit.title and sent.first)
        if mkey in memo:
            ptype, conf = memo[mkey]
        else:
            ptype, conf = memo[mkey] = score_sentence(content, raw, sent)
        if not ptype or conf < min_confidence:
            continue
        key = _norm_key(content)
        if not key or key in seen:
            continue
        seen.add(key)
        out.append(Statement(content, conf, ptype, s, e))
    out.sort(key=lambda c: c.start_pos)
    return out
