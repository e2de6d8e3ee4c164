"""The words keyword search indexes and matches: one analysis for documents and queries, the same as
the options LanceDB's full-text index is built with (fulltext.py `FTS_OPTIONS`), so the in-memory
keyword index (keyword_index.py) and LanceDB's agree on what a text's words are.

In order, as LanceDB applies its filters: the text is split into runs of letters and digits
(anything else separates words), words of MAX_WORD_BYTES or more UTF-8 bytes are dropped, the rest
lowercased and stemmed (Snowball English, as LanceDB's stemmer), stems in STOP_WORDS dropped, and
accents folded to ASCII.

Scripts written without spaces between words (Chinese, Japanese, Thai, Lao, Khmer, Myanmar) need a
dictionary to be split into words, which LanceDB's ICU segmentation has and this module does not:
`needs_dictionary` says when a text has them, and then LanceDB answers the search.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import lru_cache

MAX_WORD_BYTES = 40  # LanceDB's max_token_length: words this long or longer are not indexed

# English stop words, as stems (the filter runs after the stemmer, as LanceDB's does): the Snowball
# project's English list, and the pieces its contractions split into ("isn", "t", "ll"...). LanceDB's
# ICU tokenizers drop the stop words of every language it knows unless given a list, which loses
# English words such as "dog", "door", "city", "face", "care" and "want" (stop words of other
# languages); fulltext.py gives it this list.
STOP_WORDS = frozenset(
    """
    a about abov after again against all am an and ani are aren as at be becaus been befor below between
    both but by cannot could couldn d did didn do doe doesn down dure each few for from further had hadn
    has hasn have haven he her here herself him himself his how i if in into is isn it itself ll m me
    more most mustn my myself no nor not of off on onc onli or other ought our ourselv out over own re s
    same shan she should shouldn so some such t than that the their them themselv then there these they
    this those through to too under until up ve veri was wasn we were weren what when where whi which
    while who whom with would wouldn you your yourself yourselv
    """.split()
)

# Letters (with their combining marks) and digits: what LanceDB's simple split keeps together.
_WORD = re.compile(r"(?:[^\W_]|[\u0300-\u036f])+")
# Scripts segmented by dictionary, not by spaces (Unicode blocks).
_DICTIONARY_SCRIPTS = re.compile(
    "["
    "\u0e00-\u0eff"  # Thai, Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff\u19e0-\u19ff"  # Khmer
    "\u2e80-\u2fdf\u3005\u3007\u3021-\u3029\u3038-\u303b"  # CJK radicals, ideographic marks
    "\u3040-\u30ff\u31f0-\u31ff"  # Hiragana, Katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs
    "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"  # Hangul
    "\U00020000-\U0003134f"  # CJK extensions
    "]"
)
# Letters NFKD does not take apart into a base letter and marks, folded as ASCII folding does.
_FOLDS = str.maketrans({"æ": "ae", "œ": "oe", "ø": "o", "ß": "ss", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i"})


def needs_dictionary(text: str) -> bool:
    """Whether the text has words of a script only a dictionary can split (see the module's doc)."""
    return _DICTIONARY_SCRIPTS.search(text) is not None


def terms(text: str) -> list[str]:
    """The indexed words of a text, in order, repeats kept (a document's term frequencies)."""
    out = []
    for word in _WORD.findall(text):
        term = _term(word)
        if term:
            out.append(term)
    return out


@lru_cache(maxsize=200_000)
def _term(word: str) -> str:
    """One word's term, or "" when it is not indexed. Cached: a store's vocabulary is small beside
    its word count, and the stemmer is pure Python."""
    if len(word.encode("utf-8")) >= MAX_WORD_BYTES:
        return ""
    stem = _stem(word.lower())
    if stem in STOP_WORDS:
        return ""
    if stem.isascii():
        return stem
    folded = unicodedata.normalize("NFKD", stem.translate(_FOLDS))
    return "".join(ch for ch in folded if not unicodedata.combining(ch))


_stemmer_lock = threading.Lock()
_stemmer = None


def _stem(word: str) -> str:
    global _stemmer
    with _stemmer_lock:  # a Snowball stemmer object keeps state between calls
        if _stemmer is None:
            import snowballstemmer  # imported at the first keyword search, not at start-up

            _stemmer = snowballstemmer.stemmer("english")
        return _stemmer.stemWord(word)
