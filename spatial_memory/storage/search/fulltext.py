"""Keyword search: LanceDB's native BM25 full-text index on `content`, and queries reduced to
plain words so no user syntax reaches it."""

from __future__ import annotations

import logging
import unicodedata
from typing import Any

from ...errors import StorageError
from ...records import MemoryRecord
from ..filters import NO_MATCH, Filter
from ..side_tables.access_counts import AccessCounts
from ..table.connection import ROW_ID
from ..table.reads import Reads, summary_columns
from ..table.schema import rows_to_records
from ..table.table import MemoryTable
from ..writing.writer import WriteActivity, Writer
from .exact_index import Snapshot
from .exact_search import ExactSearch
from .terms import STOP_WORDS, needs_dictionary
from .vector_search import NamespaceSearch

log = logging.getLogger(__name__)

# Native LanceDB full-text index (not tantivy). "icu/split" segments CJK and Thai text into
# words and otherwise splits like the "simple" tokenizer; English is stemmed, English stop words
# dropped (terms.py: without a list, every language's would be), accents folded and case ignored,
# the same way for documents and queries, and as the in-memory keyword index does (terms.py).
FTS_OPTIONS: dict[str, Any] = {
    "base_tokenizer": "icu/split",
    "language": "English",
    "with_position": False,
    "custom_stop_words": sorted(STOP_WORDS),
}
MAX_QUERY_TERMS = 64
_KEEP_CATEGORIES = ("L", "M", "N")  # letters, combining marks, numbers


def match_text(text: str) -> str:
    """A query reduced to plain words: punctuation, symbols (emoji, operators such as + - * ~ :),
    quotes and brackets become spaces, so nothing the user typed is read as query syntax.
    Operator words (AND, OR, NOT) stay plain words. At most MAX_QUERY_TERMS distinct words."""
    if not isinstance(text, str):
        return ""
    normalized = unicodedata.normalize("NFKC", text)
    kept = "".join(ch if unicodedata.category(ch)[0] in _KEEP_CATEGORIES else " " for ch in normalized)
    words = list(dict.fromkeys(kept.split()))
    return " ".join(words[:MAX_QUERY_TERMS])


class FullTextSearch:
    def __init__(
        self,
        table: MemoryTable,
        writer: Writer,
        reads: Reads,
        exact: ExactSearch,
        namespace_search: NamespaceSearch,
        accesses: AccessCounts,
        activity: WriteActivity,
    ) -> None:
        self._table = table
        self._writer = writer
        self._reads = reads
        self._exact = exact
        self._namespace_search = namespace_search
        self._accesses = accesses
        self._activity = activity

    def _index(self) -> Any:
        return next(
            (
                index
                for index in self._table.handle.list_indices()
                if list(index.columns) == ["content"] and str(index.index_type).upper() in ("FTS", "INVERTED")
            ),
            None,
        )

    def has_index(self) -> bool:
        return self._index() is not None

    def unindexed_rows(self) -> int:
        """Rows the full-text index does not cover yet (every keyword search scans them); 0 without an index."""
        index = self._index()
        return int(getattr(index, "num_unindexed_rows", 0) or 0) if index is not None else 0

    def ensure_index(self, *, rebuild_outdated: bool = False) -> None:
        """Create LanceDB's native full-text index on `content` when the table has none; with
        `rebuild_outdated` (the upkeep thread, never a store's opening: it rewrites the whole
        index), also build again one made with other options than FTS_OPTIONS (a store indexed
        before its stop words were English only), so LanceDB's answers and the in-memory
        index's agree.

        Rows written after the index was built are still searched (LanceDB scans the
        unindexed rows too) and compaction folds them into the index. Failing to build it
        only makes keyword search slower, so it is logged, not raised.
        """
        from lancedb.index import FTS  # imported here: see connection.py's docstring

        try:
            if self._writer.read_only or not self._needs_index(rebuild_outdated):
                return
            with self._writer.lock:
                if self._needs_index(rebuild_outdated):
                    self._table.handle.create_index("content", config=FTS(**FTS_OPTIONS), replace=True)
        except Exception as exc:  # noqa: BLE001 - keyword search works unindexed, just slower
            log.warning("could not create the full-text index on content: %s", exc)

    def _needs_index(self, rebuild_outdated: bool) -> bool:
        index = self._index()
        if index is None:
            return True
        if not rebuild_outdated:
            return False
        # Only an index whose details say which stop words it dropped is judged: a LanceDB that does
        # not report them would otherwise have every compaction rebuild the whole index.
        details = getattr(index, "index_details", None) or {}
        if "custom_stop_words" not in details:
            return False
        return set(details["custom_stop_words"] or ()) != STOP_WORDS

    def search(
        self, text: str, limit: int, flt: Filter | None = None, *, with_vectors: bool = False
    ) -> list[tuple[MemoryRecord, float]]:
        """Best keyword matches for `text` with their BM25 scores, best first.

        The text is reduced to plain words first (see `match_text`), so no user syntax
        ever reaches the query; nothing left means no hits.
        """
        found = self.rows(text, limit, flt)
        if found is not None:
            snap, hits = found
            records = self._exact.fetch_rows(snap, [row for row, _ in hits], with_vectors=with_vectors)
            if records is not None:
                return list(zip(records, [score for _, score in hits], strict=True))
        # With the exact in-memory copy, only ids and scores come from the index and the rows
        # from the copy: LanceDB's random-access row fetch is most of a keyword search's time.
        if self._exact.snapshot(load=False) is not None:
            hits = self.ids(text, limit, flt)
            if hits is None:
                return []
            records = self._reads.get_many([i for i, _ in hits], with_vectors=with_vectors)
            if len(records) == len(hits):
                return list(zip(records, [score for _, score in hits], strict=True))
            found_ids = {r.id: r for r in records}  # a row deleted since the search: left out
            return [(found_ids[i], score) for i, score in hits if i in found_ids]
        table = self.query(text, limit, flt, summary_columns(with_vectors))
        if table is None:
            return []
        scores = [float(s) for s in table.column("_score").to_pylist()]
        records = self._accesses.apply(rows_to_records(table.drop_columns(["_score"])))
        return list(zip(records, scores, strict=True))

    def rows(self, text: str, limit: int, flt: Filter | None = None) -> tuple[Snapshot, list[tuple[int, float]]] | None:
        """The exact copy and the (row, BM25 score) of the best keyword matches in it, best first,
        from the in-memory keyword index (keyword_index.py); None when LanceDB must answer: no copy
        answers under this filter, or the query has words only LanceDB's dictionary can split."""
        words = match_text(text)
        if needs_dictionary(words):
            return None
        found = self._exact.answering(flt)
        if found is None:
            return None
        snap, namespace = found
        hits = self._exact.keyword_rows(snap, words, limit, namespace)
        return None if hits is None else (snap, hits)

    def ids(self, text: str, limit: int, flt: Filter | None = None) -> list[tuple[str, float]] | None:
        """(id, BM25 score) of the best keyword matches, best first; None when nothing can match."""
        return self._column_hits(text, limit, flt, "id")

    def addresses(self, text: str, limit: int, flt: Filter | None = None) -> list[tuple[int, float]] | None:
        """(row address, BM25 score) of the best keyword matches, best first; None when nothing can
        match. No column of the rows is read: the exact copy knows most rows by address, and reading
        the ids was over a third of an unfiltered search's time (docs/BENCHMARKS.md, 45)."""
        return self._column_hits(text, limit, flt, ROW_ID)

    def _column_hits(self, text: str, limit: int, flt: Filter | None, column: str) -> list[tuple[Any, float]] | None:
        table = self.query(text, limit, flt, [column])
        if table is None:
            return None
        return list(zip(table.column(column).to_pylist(), [float(s) for s in table.column("_score").to_pylist()]))

    def query(self, text: str, limit: int, flt: Filter | None, columns: list[str]) -> Any:
        """The keyword search's Arrow table (the columns and _score), or None when nothing can match."""
        from lancedb.query import MatchQuery  # imported here: see ensure_index

        terms = match_text(text)
        if not terms:
            return None
        where = self._reads.search_where(flt)
        if where is NO_MATCH:
            return None
        self._activity.keyword_searches += 1  # see Maintenance.fts_may_lag
        try:
            return self._namespace_search.run(
                lambda table, rows, share: table.query().nearest_to_text(
                    MatchQuery(terms, "content")  # pyright: ignore[reportCallIssue] - lancedb's pydantic dataclass: the checker sees none of its field defaults
                ),
                columns,
                "_score",
                limit,
                flt,
                where,
            )
        except Exception as exc:
            raise StorageError(f"keyword search failed: {exc}") from exc
