"""Distinctive keywords per cluster via class-based TF-IDF (BERTopic style)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise

_WORDS = """
a about above across after afterwards again against ago ain all almost alone
along already also although always am among amongst amount an and another any
anybody anyhow anymore anyone anything anyway anyways anywhere are aren around
as aside at away back be became because become becomes becoming been before
beforehand behind being below beside besides best better between beyond both
bottom but by came can cannot cant could couldn did didn do does doesn doing
don done down due during each either else elsewhere enough etc even ever every
everybody everyone everything everywhere except few fine first for former
formerly from further get gets getting give given gives go goes going gone
gonna got gotta had hadn has hasn have haven having he hence her here
hereafter hereby herein hereupon hers herself him himself his how however i
ie if in indeed instead into is isn it its itself just keep kind kinda know
known last later latter least less let lets like likely lol lot lots made
make makes making many may maybe me meanwhile might mine more moreover most
mostly much must mustn my myself namely need needed needs neither never
nevertheless new next no nobody none noone nor not nothing now nowhere of
off often oh ok okay old on once one only onto or other others otherwise our
ours ourselves out over own part per perhaps please plus put quite rather
re really right said same say says see seem seemed seeming seems seen
several shall she should shouldn show since so some somebody somehow someone
something sometime sometimes somewhere soon still stuff such sure take taken
than thank thanks that the their theirs them themselves then thence there
thereafter thereby therefore therein thereupon these they thing things think
this those though through throughout thru thus to today together too took
toward towards try trying under unless until up upon us use used uses using
usually very via want wanted wants was wasn way we well went were weren what
whatever when whence whenever where whereafter whereas whereby wherein
whereupon wherever whether which while whither who whoever whole whom whose
why will with within without won would wouldn yeah yep yes yet you your yours
yourself yourselves
one two three four five six seven eight nine ten hundred thousand
i'm i've i'd i'll you're you've you'd you'll he's she's it's we're we've
we'd we'll they're they've they'd they'll that's there's here's what's
who's where's how's let's isn't aren't wasn't weren't hasn't haven't hadn't
doesn't don't didn't won't wouldn't shan't shouldn't can't couldn't mustn't
ain't y'all
hmm huh hey hello hi um uh ah yup nope gotcha basically actually literally
totally pretty thing anyway whatever cool great good nice awesome stuff
e.g i.e etc http https www com
"""

STOPWORDS: frozenset[str] = frozenset(_WORDS.split())

# A token starts with a letter/digit and may contain + # . - ' inside, ending
# in a word character, + or # (keeps "c++", "c#", "node.js", "gpt-4").
_TOKEN = re.compile(r"[^\W_](?:[\w+#.'\-]*[\w+#])?")
_POSSESSIVE = re.compile(r"'s$")
_MIN_LENGTH = 3
_MIN_BIGRAM_DOCS = 2
_MERGE_WINDOW = 3


def _raw_tokens(text: str) -> list[str | None]:
    """Tokens in order, with None where a stopword/short token broke adjacency."""
    out: list[str | None] = []
    for match in _TOKEN.finditer(text.lower().replace("\u2019", "'")):
        token = match.group()
        if token not in STOPWORDS:
            token = _POSSESSIVE.sub("", token)
        keep = len(token) >= _MIN_LENGTH and token not in STOPWORDS and any(ch.isalpha() for ch in token)
        out.append(token if keep else None)
    return out


def tokenize(text: str) -> list[str]:
    """Lowercased content words: length >= 3, no stopwords, no pure numbers."""
    return [t for t in _raw_tokens(text) if t is not None]


def _bigrams(raw: list[str | None]) -> list[str]:
    return [f"{a} {b}" for a, b in pairwise(raw) if a is not None and b is not None and a != b]


def class_tfidf_keywords(documents_per_cluster: Sequence[Sequence[str]], top_n: int = 5) -> list[list[str]]:
    """Top ``top_n`` distinctive terms for each cluster (list of its documents).

    score = tf * log(1 + A / f) * log(1 + C / c), where tf is the term's count
    in the cluster over the cluster's word count, A the average word count per
    cluster, f the term's total count, C the number of clusters and c the
    number of clusters using the term. The last factor (beyond BERTopic) pushes
    words shared by every cluster down even when frequent. Bigrams count if
    they occur in >= 2 documents of a cluster and replace their already chosen
    words. Ties break alphabetically.
    """
    if top_n < 0:
        raise ValueError("top_n must be >= 0")
    counts: list[Counter[str]] = []
    lengths: list[int] = []
    for documents in documents_per_cluster:
        unigrams: Counter[str] = Counter()
        bigrams: Counter[str] = Counter()
        bigram_docs: Counter[str] = Counter()
        for doc in documents:
            raw = _raw_tokens(doc)
            unigrams.update(t for t in raw if t is not None)
            pairs = _bigrams(raw)
            bigrams.update(pairs)
            bigram_docs.update(set(pairs))
        lengths.append(sum(unigrams.values()))
        frequent = {b: n for b, n in bigrams.items() if bigram_docs[b] >= _MIN_BIGRAM_DOCS}
        counts.append(unigrams + Counter(frequent))

    n_classes = len(counts)
    if n_classes == 0:
        return []
    total: Counter[str] = Counter()
    spread: Counter[str] = Counter()
    for class_counts in counts:
        total.update(class_counts)
        spread.update(class_counts.keys())
    avg_words = sum(lengths) / n_classes

    keywords: list[list[str]] = []
    for class_counts, length in zip(counts, lengths, strict=True):
        scored = sorted(
            (
                (
                    -(n / length) * math.log(1 + avg_words / total[term]) * math.log(1 + n_classes / spread[term]),
                    term,
                )
                for term, n in class_counts.items()
            ),
        )
        keywords.append(_select([term for _, term in scored], top_n))
    return keywords


def _select(ranked: list[str], top_n: int) -> list[str]:
    """Take terms in rank order; a bigram takes the place of its chosen words.

    Bigrams ranked within the first ``3 * top_n`` terms may still merge their
    words after the list is full (e.g. "index", "funds" -> "index funds").
    """
    chosen: list[str] = []
    covered: set[str] = set()
    for rank, term in enumerate(ranked):
        full = len(chosen) >= top_n
        if full and rank >= _MERGE_WINDOW * top_n:
            break
        parts = term.split(" ")
        if len(parts) == 1:
            if not full and term not in covered:
                chosen.append(term)
                covered.add(term)
            continue
        present = [i for i, word in enumerate(chosen) if word in parts]
        if present:
            chosen[present[0]] = term
            for i in reversed(present[1:]):
                del chosen[i]
        elif not full:
            chosen.append(term)
        else:
            continue
        covered.update(parts)
    return chosen
