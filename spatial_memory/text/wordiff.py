"""Word-level differences between two texts (memory_history's diff): pure, no I/O.

Texts are split into words and the runs of whitespace between them, each a token, so the parts of
a diff joined back give the old text (equal + delete) and the new text (equal + insert) exactly.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import Literal

WordOp = Literal["equal", "delete", "insert"]

_TOKEN = re.compile(r"\S+|\s+")


def words(text: str) -> list[str]:
    """The text as its words and whitespace runs, in order."""
    return _TOKEN.findall(text)


def word_diff(old: str, new: str) -> list[tuple[WordOp, str]]:
    """(op, text) parts turning `old` into `new`; op is "equal", "delete" or "insert".

    Adjacent parts of one op are merged; a replaced run is its delete then its insert."""
    a, b = words(old), words(new)
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    parts: list[tuple[WordOp, str]] = []

    def add(op: WordOp, text: str) -> None:
        if not text:
            return
        if parts and parts[-1][0] == op:
            parts[-1] = (op, parts[-1][1] + text)
        else:
            parts.append((op, text))

    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            add("equal", "".join(b[j1:j2]))
        else:
            add("delete", "".join(a[i1:i2]))
            add("insert", "".join(b[j1:j2]))
    return parts
