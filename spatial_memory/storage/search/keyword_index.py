"""Keyword search over the exact copy's rows (exact_index.py), in memory: BM25 as LanceDB scores it,
on the words terms.py finds, without a LanceDB query.

A LanceDB full-text query costs a few milliseconds whatever the table's size (planning, its own
threads, reading the index), and it ran beside the query's embedding on the same cores: most of
a recall's time on a small store (docs/BENCHMARKS.md, 45). While the exact copy answers searches
(below the approximate index's size), this index answers keyword searches from postings it keeps
beside the copy.

Postings are kept per copy load (`Snapshot.load`): rows of one load never change their content
(this process appends the rows it writes, deletes hide rows, rewrites in place only touch other
columns), so a later snapshot of the same load only adds rows, indexed when first searched. A new
load indexes every row again. Statistics (document count, average length, document frequency)
are those of the live rows of every namespace, as LanceDB's index holds every namespace; a
search keeps the rows its namespace and expiry allow.
"""

from __future__ import annotations

import threading
from array import array
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ...algorithms.bm25 import bm25_weights
from .exact_index import Snapshot
from .terms import terms


@dataclass
class _Postings:
    load: int
    rows: int = 0  # rows [0, rows) of the load are indexed
    vocabulary: dict[str, int] = field(default_factory=dict)
    postings: list[array] = field(default_factory=list)  # term -> rows holding it ('i')
    frequencies: list[array] = field(default_factory=list)  # term -> its count in each of those rows
    lengths: array = field(default_factory=lambda: array("i"))  # row -> its number of terms


class KeywordIndex:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._postings: _Postings | None = None

    def search(self, snap: Snapshot, query: str, limit: int, live: np.ndarray) -> list[tuple[int, float]] | None:
        """(row, BM25 score) of the best `limit` rows among the `live` ones (a mask over rows
        [0, snap.n)) that hold a word of the query, best first, ties in row order; None when the
        copy does not hold every row's content (then LanceDB answers)."""
        words = list(dict.fromkeys(terms(query)))
        if snap.summary.num_rows < snap.n:
            return None
        if not words or limit <= 0 or snap.n == 0:
            return []
        # Copies, not views, of the growing arrays: an append while a view of one exists raises
        # BufferError in the thread extending the postings, and a view could outlive the lock.
        with self._lock:
            postings = self._covering(snap)
            alive = snap.alive[: snap.n]
            lengths = np.array(postings.lengths[: snap.n], dtype=np.int32)
            documents = int(np.count_nonzero(alive))
            if documents == 0:
                return []
            average = float(lengths[alive].sum()) / documents
            scores = np.zeros(snap.n, dtype=np.float64)
            for word in words:
                term = postings.vocabulary.get(word)
                if term is None:
                    continue
                rows = np.array(postings.postings[term], dtype=np.int32)
                counts = np.array(postings.frequencies[term], dtype=np.int32)
                if rows.size and rows[-1] >= snap.n:  # rows of a later snapshot of the same load
                    kept = rows < snap.n
                    rows, counts = rows[kept], counts[kept]
                held = alive[rows]
                rows, counts = rows[held], counts[held]
                if rows.size:
                    scores[rows] += bm25_weights(counts, lengths[rows], average, rows.size, documents)
        found = np.flatnonzero((scores > 0) & live)
        if found.size == 0:
            return []
        if found.size > limit:
            found = found[np.argpartition(-scores[found], limit - 1)[:limit]]
        found = found[np.lexsort((found, -scores[found]))]
        return [(int(row), float(scores[row])) for row in found]

    def cover(self, snap: Snapshot) -> None:
        """Index the snapshot's rows not indexed yet (upkeep does, so a search rarely has to)."""
        if snap.summary.num_rows >= snap.n:
            with self._lock:
                self._covering(snap)

    def release(self) -> None:
        """Drop the postings (the copy is gone: its memory is not kept for a load that may not come)."""
        with self._lock:
            self._postings = None

    def _covering(self, snap: Snapshot) -> _Postings:  # under self._lock
        """The postings of the snapshot's load, holding at least its rows."""
        postings = self._postings
        if postings is None or postings.load != snap.load:
            postings = self._postings = _Postings(snap.load)
        if postings.rows < snap.n:
            contents = snap.summary.column("content").slice(postings.rows, snap.n - postings.rows).to_pylist()
            _add(postings, postings.rows, contents)
            postings.rows = snap.n
        return postings


def _add(postings: _Postings, first_row: int, contents: list[str | None]) -> None:
    vocabulary, rows_of, counts_of = postings.vocabulary, postings.postings, postings.frequencies
    lengths = postings.lengths
    for row, content in enumerate(contents, start=first_row):
        words = terms(content) if content else []
        lengths.append(len(words))
        for word, count in Counter(words).items():
            term = vocabulary.get(word)
            if term is None:
                term = vocabulary[word] = len(rows_of)
                rows_of.append(array("i"))
                counts_of.append(array("i"))
            rows_of[term].append(row)
            counts_of[term].append(count)
