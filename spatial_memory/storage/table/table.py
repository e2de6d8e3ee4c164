"""The memories table on its LanceDB connection: opened (or created), upgraded, checked against the
embedding model, reconnected after compaction; the version reads check, and plain scans.

Every other part of the store reads the LanceDB table through `handle` at the moment it needs it:
a reconnect swaps it, and reads and writes already running keep the old one until they finish.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any, cast

import pyarrow as pa

from ...errors import ConfigurationError, StorageError
from ...records import MemoryRecord
from ..repair.recovery import Damage, open_last_good
from .connection import LARGE_INDEX_CACHE_BYTES, SMALL_INDEX_CACHE_BYTES, connect, in_one_trip, is_remote
from .schema import ADDED_COLUMNS, MODEL_KEY, TABLE_NAME, memory_schema, records_to_arrow
from .version_watch import VersionWatch

log = logging.getLogger(__name__)

# Lance file format of new tables: every search ends by reading its few result rows at random
# positions, which format 2.1 does much faster than LanceDB 0.40's default (2.2); full scans cost
# the same (docs/BENCHMARKS.md, "Figures moved from code comments"). A table keeps the format it
# was created with.
DATA_STORAGE_VERSION = "2.1"


class MemoryTable:
    """The `memories` table of the store at `path`, on the connection `db`."""

    def __init__(
        self,
        path: Path | str,
        db: Any,
        model_id: str,
        dim: int,
        *,
        cache_bytes: int | None,
        creation_lock: AbstractContextManager[Any],
        read_only: bool,
    ) -> None:
        self.path = path
        self.db = db
        self.model_id = model_id
        self.dim = dim
        self.damage: Damage | None = None  # set when the newest version could not be read
        self._cache_bytes = cache_bytes  # None: sized by whether the table has a vector index
        self._pinned = threading.local()  # the version `one_version` read, per thread
        self._same_data: dict[int, int] = {}  # version after a compaction -> data_version before it
        self._side_tables: dict[str, tuple[Any, Any]] = {}  # name -> (connection, table)
        self._versions = VersionWatch(
            None if is_remote(path) else Path(path) / f"{TABLE_NAME}.lance" / "_versions",
            lambda: self.handle.version,
        )
        # Two servers starting on a new store create the table once.
        with nullcontext() if read_only else creation_lock:
            if TABLE_NAME in db.list_tables().tables:
                self.handle = self._open(upgrade=not read_only)
            elif read_only:
                raise StorageError(f"there is no memory store at {path}, and none can be created there")
            else:
                self.handle = self._create()

    # ---- opening ---------------------------------------------------------------------------

    def _open(self, *, upgrade: bool) -> Any:
        """The table at its newest version or, when that cannot be read, at its last good one
        (recovery.py: `damage` then says why, and the store serves it read-only)."""
        try:
            handle = self.db.open_table(TABLE_NAME)
        except Exception as exc:
            if is_remote(self.path):
                raise  # recovery's view of the last good version is built of local symlinks
            cache = self._cache_bytes or SMALL_INDEX_CACHE_BYTES
            opened = open_last_good(Path(self.path), lambda path: connect(path, cache), exc)
            if opened is None:
                raise
            self.db, handle, self.damage = opened
            return handle
        if upgrade:
            _add_missing_columns(handle)
        return handle

    def _create(self) -> Any:
        try:
            return self.db.create_table(
                TABLE_NAME,
                schema=memory_schema(self.model_id, self.dim),
                storage_options={"new_table_data_storage_version": DATA_STORAGE_VERSION},
            )
        except (ValueError, OSError):
            return self.db.open_table(TABLE_NAME)  # another process created it between check and create

    def check_model(self) -> None:
        """Refuse a table built with another embedding model (or dimension)."""
        schema = self.handle.schema
        stored_model = (schema.metadata or {}).get(MODEL_KEY, b"").decode() or None
        stored_dim = schema.field("vector").type.list_size
        if stored_dim != self.dim or (stored_model and stored_model != self.model_id):
            raise ConfigurationError(
                f"this store was built with embedding model '{stored_model}' ({stored_dim} dimensions) "
                f"but the server is configured with '{self.model_id}' ({self.dim} dimensions). "
                "Use the original model (SPATIAL_MEMORY_EMBEDDING_MODEL) or a different SPATIAL_MEMORY_PATH, "
                "or export and re-import with regenerate_embeddings."
            )

    def cache_bytes(self, *, vector_indexed: bool) -> int:
        """The index cache the connection needs: as configured, else sized by the vector index."""
        if self._cache_bytes is not None:
            return self._cache_bytes
        return LARGE_INDEX_CACHE_BYTES if vector_indexed else SMALL_INDEX_CACHE_BYTES

    def reconnect(self, *, vector_indexed: bool) -> bool:
        """Swap in a fresh connection; False when there is none (a damaged store, or a failure).

        LanceDB keeps the files of every superseded index version open for as long as the
        connection lives - two more descriptors per compaction, until the server runs out of them
        after some thousands of writes; a new connection lets them go."""
        if self.damage is not None:
            return False  # served through recovery's view at an older version: nothing to let go
        try:
            db = connect(self.path, self.cache_bytes(vector_indexed=vector_indexed))
            handle = db.open_table(TABLE_NAME)
        except Exception as exc:  # noqa: BLE001 - the old connection still works
            log.warning("could not reopen the memory store after compaction: %s", exc)
            return False
        self.db, self.handle = db, handle
        self._versions.forget()
        return True

    def side_table(self, name: str, schema_of: Callable[[], pa.Schema] | None, *, create: bool) -> Any:
        """The small table `name` beside this one (history, relations, co-recall links): None when
        it does not exist yet and `create` is False; `schema_of()` gives its schema when it must be
        created. Opened once per connection (a reconnect reopens it)."""
        db = self.db
        cached = self._side_tables.get(name)
        if cached is not None and cached[0] is db:
            return cached[1]
        try:
            if name in db.list_tables().tables:
                table = db.open_table(name)
            elif create:
                if schema_of is None:
                    raise TypeError(f"the {name} table cannot be created without its schema")
                try:
                    table = db.create_table(name, schema=schema_of())
                except (ValueError, OSError):  # another process created it meanwhile
                    table = db.open_table(name)
            else:
                return None
        except Exception as exc:  # noqa: BLE001 - surfaced typed
            raise StorageError(f"cannot open the {name} table: {exc}") from exc
        self._side_tables[name] = (db, table)
        return table

    # ---- versions --------------------------------------------------------------------------

    @property
    def newest_version(self) -> int:
        return self.handle.version

    @property
    def version(self) -> int:
        """The table's version: the newest one (version_watch.py: LanceDB is asked only when the
        table's version files may have changed), or the one this thread's `one_version` read."""
        pinned = getattr(self._pinned, "version", None)
        if pinned is not None:
            return pinned
        return self._versions.current() if self.damage is None else self.handle.version

    @contextmanager
    def one_version(self, version: int | None = None) -> Iterator[int]:
        """Reads in this thread check the table version once (or take the one given, read by
        another thread of the same search), not once per step: each check is a hand-off to
        LanceDB's event loop thread, and a ranked recall has five steps that check it. Only for
        reads: a commit of this process during the block makes the copy move on, and the block's
        steps then ask LanceDB."""
        outer = getattr(self._pinned, "version", None)
        self._pinned.version = version = version if version is not None else self.version
        try:
            yield version
        finally:
            self._pinned.version = outer

    @property
    def data_version(self) -> int:
        """The table version, except that a version made by this process's compaction counts as
        the one it compacted: the same memories, so caches of what they show (maps, regions)
        stay valid across it."""
        version = self.version
        return self._same_data.get(version, version)

    def compacted(self, before: int, after: int) -> None:
        """This process's compaction took the table from `before` to `after`, the same memories."""
        if after != before:
            recent = dict(list(self._same_data.items())[-7:])  # a few: only the newest is asked
            self._same_data = {**recent, after: self._same_data.get(before, before)}

    # ---- plain reads -----------------------------------------------------------------------

    def count_rows(self, where: str | None = None) -> int:
        return self.handle.count_rows(where)

    def statistics(self) -> dict[str, Any]:
        """LanceDB's table statistics: a plain dict (lancedb 0.40 annotates it as its TableStatistics
        dataclass, which it does not return)."""
        return cast("dict[str, Any]", self.handle.stats())

    def fragment_count(self) -> int:
        return int(self.statistics()["fragment_stats"]["num_fragments"])

    def scan(
        self, where: str | None, columns: list[str], limit: int | None = None, *, exact_count: bool = True
    ) -> pa.Table:
        """The columns of the rows matching `where` (every one, or the first `limit`)."""
        if limit is None and exact_count:
            limit = max(self.handle.count_rows(where), 1)
        try:
            return in_one_trip(self.handle, lambda table: table.query(), columns, limit, where)
        except Exception as exc:
            raise StorageError(f"read failed: {exc}") from exc

    def to_arrow(self, records: Sequence[MemoryRecord]) -> pa.Table:
        """Records as rows of this table (every memory write goes through here)."""
        return records_to_arrow(records, self.model_id, self.dim)


def _add_missing_columns(handle: Any) -> None:
    """A store written before a column existed gains it, all null, in one commit."""
    present = set(handle.schema.names)
    missing = [f for f in ADDED_COLUMNS if f.name not in present]
    if missing:
        handle.add_columns(pa.schema(missing))
        log.info("store upgraded: added the columns %s", ", ".join(f.name for f in missing))
