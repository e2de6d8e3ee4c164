"""Sentence segmentation for extraction, in linear time (pure standard library).

* fenced code blocks (```` ``` ```` / ``~~~``) are removed entirely;
* every line is classified (blank, heading, list item, block quote, chat turn with a speaker prefix,
  ``Label:`` line, plain text);
* list items, headings, chat turns and labelled lines always start a new unit; plain lines are joined
  to the previous line when the line break looks like hard wrapping (commit messages wrapped at 72
  columns);
* each unit is split into sentences at ``.``, ``!`` and ``?`` followed by whitespace, except inside
  inline code, after abbreviations (``e.g.``, ``Dr.``, ``vs.``, ``U.S.`` ...), initials, mid-sentence
  ellipses, or when the next word starts in lower case. Decimals, versions, URLs and paths never split
  because the dot is not followed by whitespace.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

__all__ = ["Sentence", "Unit", "sentences", "split_sentences", "trim_period"]

_FENCE_RE = re.compile(r"[ \t]{0,3}(```|~~~)")
_HEADING_RE = re.compile(r"[ \t]{0,3}#{1,6}(?:[ \t]+|$)")
_LIST_RE = re.compile(r"[ \t]*(?:[-*+\u2022]|\d{1,3}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?")
_QUOTE_RE = re.compile(r"[ \t]{0,3}(?:>[ \t]?)+")
# "[10:32] alice: ", "alice: ", "<bob> ", "[10:32] <bob> "
# a bracketed timestamp must contain a clock time: "[10:32]", "[2024-03-04 10:32 AM]"
_TS = r"\[[^\]\n]{0,24}?\d:\d\d[^\]\n]{0,12}\]"
_SPEAKER_RE = re.compile(
    r"[ \t]*(?P<ts>" + _TS + r"[ \t]*)?"
    r"(?:<(?P<irc>[A-Za-z][\w.\-]{0,30})>[ \t]*"
    r"|(?P<name>[A-Za-z][\w.\-]{0,30}):[ \t]+)"
)
_TIMESTAMP_RE = re.compile(r"[ \t]*" + _TS + r"[ \t]*")
# "Root cause: ...", "Note to self: ...", "Title: ..."
_LABEL_RE = re.compile(r"[ \t]*[A-Za-z][\w'\-]*(?: [\w'\-]+){0,3}:[ \t]")

_ROLE_NAMES = frozenset("user assistant human ai system bot me you moderator host guest interviewer".split())
# Words that look like "name:" at the start of a line but are labels whose
# text carries meaning ("Note: ...", "Decision: ...").
_LABEL_WORDS = frozenset(
    """
    note notes nb ps decision decisions error errors warning warn info tip tips todo fixme
    fyi til important critical update edit action actions attendees status result results
    expected actual title subject version versions steps step workaround fix fixed solution
    summary bug issue problem cause reason outcome context background goal goals owner
    eta date time location where when who what why how answer question q a re fwd
    breaking deprecated deprecation requirement requirements definition example examples
    lesson insight pattern rule agenda next caveat caution danger hint remember reminder
    keep closes fixes refs see cc bcc from to output input env task tasks
    """.split()
)

_LAST_WORD_RE = re.compile(r"[A-Za-z']+$")
_TERMINAL_END_RE = re.compile(r"[.!?:;][)\]\"'`*_]*$")
_JOIN_WORDS = frozenset(
    """
    a an the and or but nor of to in on at by for with from into onto via than as that
    which who whose when while if because so is are was were be been being must should
    can could will would may might not no per its their our your my his her this these
    those then also whether until unless after before over under between about across
    """.split()
)

# Abbreviations after which a period never ends a sentence.
_ABBR_NEVER = frozenset(
    """
    mr mrs ms mx dr prof sr jr st vs v cf approx appx ca ed eds dept e.g i.e eg ie al aka
    a.k.a resp incl excl esp viz w.r.t wrt gen gov lt col sgt capt
    """.split()
)
# Abbreviations used before numbers ("No. 5", "fig. 2"): no split before a digit.
_ABBR_NUM = frozenset("no nos fig figs ch chap sec sect vol vols pp p ref refs op eq eqs art".split())
# Abbreviations that may end a sentence: split only before an upper-case word.
_ABBR_MAYBE = frozenset(
    """
    etc inc ltd co corp llc jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues
    wed thu thur thurs fri sat sun min max avg est a.m p.m am pm
    """.split()
)

_TOKEN_STOP = frozenset(" \t\n\r\f\v([{\"'`")
_INLINE_CODE_RE = re.compile(r"`[^`\n]+`")
# the look-behind makes a match start only at the beginning of a run of
# punctuation, so long runs ("......") cannot cause quadratic backtracking.
_SENT_END_RE = re.compile(r"(?<![.!?\u2026])(?:\.{2,}|\u2026|[.!?]+)[)\]\"'\u201d\u2019*_]*(?=\s|$)")


@dataclass
class Unit:
    start: int
    end: int
    kind: str  # "heading", "list", "quote", "chat", "label", "text"
    title: bool = False


@dataclass
class Sentence:
    start: int
    end: int
    unit: Unit
    first: bool  # first sentence of its unit


def _lines(text: str):
    """Yield (start, end) of each line, end excluding the newline."""
    pos = 0
    n = len(text)
    while pos <= n:
        nl = text.find("\n", pos)
        if nl == -1:
            yield pos, n
            return
        yield pos, nl
        pos = nl + 1


def _detect_speakers(text: str, lines) -> set:
    """Names used as chat speaker prefixes ("alice:" on several lines, roles...)."""
    counts: dict = {}
    stamped = set()
    for s, e in lines:
        m = _SPEAKER_RE.match(text, s, e)
        if not m:
            continue
        name = m.group("irc") or m.group("name")
        low = name.lower()
        if m.group("irc"):
            stamped.add(low)
        if low in _LABEL_WORDS:
            continue
        counts[low] = counts.get(low, 0) + 1
        if m.group("ts"):
            stamped.add(low)
    speakers = set(stamped)
    non_label_lines = sum(counts.values())
    for low, c in counts.items():
        if low in _ROLE_NAMES or c >= 2 or (non_label_lines >= 3 and len(counts) >= 2):
            speakers.add(low)
    return speakers


def _segment_units(text: str) -> list:
    lines = list(_lines(text))
    # 1. mask fenced code blocks
    live = []
    in_fence = None
    for s, e in lines:
        m = _FENCE_RE.match(text, s, e)
        if in_fence is not None:
            if m and m.group(1) == in_fence:
                in_fence = None
            continue
        if m:
            in_fence = m.group(1)
            continue
        live.append((s, e))
    speakers = _detect_speakers(text, live)

    units: list = []
    cur = None  # unit being built (may absorb hard-wrapped lines)
    para_first = True  # is the current line the first of its paragraph?

    def close():
        nonlocal cur
        if cur is not None and cur.end > cur.start:
            units.append(cur)
        cur = None

    for idx, (s, e) in enumerate(live):
        le = e
        while le > s and text[le - 1].isspace():
            le -= 1
        if le <= s or not text[s:le].strip():
            close()
            para_first = True
            continue

        kind = None
        inner = s
        m = _HEADING_RE.match(text, s, le)
        if m:
            kind, inner = "heading", m.end()
        else:
            m = _QUOTE_RE.match(text, s, le)
            if m:
                kind, inner = "quote", m.end()
            m = _LIST_RE.match(text, inner, le)
            if m:
                kind, inner = "list", m.end()
            m = _SPEAKER_RE.match(text, inner, le)
            if m and (m.group("irc") or m.group("name")).lower() in speakers:
                kind, inner = "chat", m.end()
            if kind is None:
                mt = _TIMESTAMP_RE.match(text, inner, le)
                if mt and mt.end() < le:
                    kind, inner = "chat", mt.end()
            if kind is None and _LABEL_RE.match(text, inner, le) and not text.startswith(("http:", "https:"), inner):
                kind = "label"
        while inner < le and text[inner] in " \t":
            inner += 1
        if inner >= le:
            close()
            continue

        if kind is None and cur is not None and _should_join(text, cur, inner):
            cur.end = le
            para_first = False
            continue
        close()
        cur = Unit(inner, le, kind or "text")
        if kind in (None, "label") and para_first:
            # first line of a paragraph, without end punctuation, directly
            # followed by a blank line or the end of the text: a title.
            nxt_blank = idx + 1 >= len(live) or not text[live[idx + 1][0] : live[idx + 1][1]].strip()
            if nxt_blank and not _TERMINAL_END_RE.search(text, inner, le):
                cur.title = True
        para_first = False
    close()
    return units


def _should_join(text: str, cur: Unit, s: int) -> bool:
    """Decide whether a plain line starting at ``s`` continues ``cur``.

    Joins hard-wrapped prose: the previous line has no end punctuation and
    either the new line starts in lower case, the previous line ends with a
    comma or a function word, or the previous line is long (wrapped).
    """
    # only the tail of the unit matters (keeps joining linear)
    prev = text[max(cur.start, cur.end - 40) : cur.end]
    if _TERMINAL_END_RE.search(prev):
        return False
    first = text[s]
    if first.islower() or first in "(,;":
        return True
    if prev.endswith((",", "-", "/", "(", "&", "+")):
        return True
    m = _LAST_WORD_RE.search(prev)
    if m and m.group(0).lower() in _JOIN_WORDS:
        return True
    line_start = text.rfind("\n", 0, cur.end) + 1
    return cur.end - max(line_start, cur.start) >= 60


def _inline_code_spans(text: str, s: int, e: int):
    starts, ends = [], []
    for m in _INLINE_CODE_RE.finditer(text, s, e):
        starts.append(m.start())
        ends.append(m.end())
    return starts, ends


def _in_spans(pos: int, starts, ends) -> bool:
    i = bisect_right(starts, pos) - 1
    return i >= 0 and pos < ends[i]


def _is_split_point(text: str, unit_start: int, m: re.Match) -> bool:
    p = m.start()
    punct = text[p]
    # next non-space character
    nxt = m.end()
    n = len(text)
    while nxt < n and text[nxt].isspace():
        nxt += 1
    if nxt >= n:
        return True
    nc = text[nxt]
    if punct in "!?":
        return True
    dots = m.group(0)
    if dots.startswith("..") or dots.startswith("\u2026"):
        # ellipsis: mid-sentence when preceded by a space or followed by lower case
        if p > unit_start and text[p - 1].isspace():
            return False
        return not nc.islower()
    if nc.islower():
        return False
    # token before the period (bounded backward scan)
    a = p
    lim = max(unit_start, p - 40)
    while a > lim and text[a - 1] not in _TOKEN_STOP:
        a -= 1
    tok = text[a:p]
    low = tok.lower()
    if not tok:
        return True
    if low in _ABBR_NEVER:
        return False
    if low in _ABBR_NUM:
        return not nc.isdigit()
    if len(tok) == 1 and tok.isalpha() and tok.isupper():
        return False  # initial: "M. Kleppmann"
    if low in _ABBR_MAYBE:
        return nc.isupper()
    if "." in tok and re.fullmatch(r"(?:[A-Za-z]\.)+[A-Za-z]", tok):
        return False  # dotted acronym: "U.S.", "e.g."
    return True


def sentences(text: str) -> list:
    out = []
    for u in _segment_units(text):
        starts, ends = _inline_code_spans(text, u.start, u.end)
        s = u.start
        first = True
        for m in _SENT_END_RE.finditer(text, u.start, u.end):
            if m.end() <= s:
                continue
            if _in_spans(m.start(), starts, ends):
                continue
            if not _is_split_point(text, u.start, m):
                continue
            out.append(Sentence(s, m.end(), u, first))
            first = False
            s = m.end()
        if s < u.end:
            out.append(Sentence(s, u.end, u, first))
    # trim whitespace
    res = []
    for st in out:
        a, b = st.start, st.end
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            st.start, st.end = a, b
            res.append(st)
    return res


def split_sentences(text: str) -> list:
    """Spans ``(start, end)`` of sentences/clauses in ``text``.

    Fenced code blocks produce no spans; list markers, heading hashes, block
    quote markers and chat speaker prefixes are excluded from the spans.
    """
    return [(s.start, s.end) for s in sentences(text)]


_ENDS_ABBR_RE = re.compile(r"(?:^|[\s(])([A-Za-z](?:[A-Za-z.]*))\.$")


def trim_period(text: str, s: int, e: int) -> int:
    """The end of a sentence's span without its single closing period (kept after an abbreviation)."""
    if e - s >= 2 and text[e - 1] == "." and text[e - 2] != ".":
        m = _ENDS_ABBR_RE.search(text, max(s, e - 12), e)
        if m:
            tok = m.group(1).lower()
            if tok in _ABBR_NEVER or tok in _ABBR_MAYBE or tok in _ABBR_NUM or re.fullmatch(r"(?:[a-z]\.)+[a-z]", tok):
                return e
        return e - 1
    return e
