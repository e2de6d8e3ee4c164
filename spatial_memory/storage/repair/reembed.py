"""`spatial-memory reembed`: every vector of a local store written again by another embedding path,
all or nothing.

The work happens on a copy: the store's directory is copied beside it (under its write lock, so no
write lands meanwhile), the copy's memories and their past versions get new vectors and the new
model record, and the copy is opened once as a store (which builds its keyword index). Only then
are the two directories swapped, by two renames; the old one is removed last. A crash before the
swap leaves the old store as it was (the copy is a leftover the next run removes); a crash between
the two renames leaves the old store under its backup name, which the next run puts back.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..table.connection import SMALL_INDEX_CACHE_BYTES, connect
from ..table.schema import DIM_KEY, HISTORY_TABLE, MODEL_KEY, TABLE_NAME
from ..writing.locking import INDEX_LOCK_FILE, LOCK_FILE, StoreLock

log = logging.getLogger(__name__)

CHUNK = 256  # texts per embedding call (the progress step)
SCRATCH_SUFFIX = ".reembed-new"
BACKUP_SUFFIX = ".reembed-old"

Embed = Callable[[list[str]], np.ndarray]
Progress = Callable[[int, int], None]


@dataclass
class Result:
    path: str
    old_model: str | None
    new_model: str
    memories: int
    past_versions: int


def recover(db_path: Path) -> str | None:
    """Finish or undo what a crashed run left: a backup without its store is put back, a copy
    that never replaced the store is removed. Returns what was done, if anything."""
    backup, scratch = _sibling(db_path, BACKUP_SUFFIX), _sibling(db_path, SCRATCH_SUFFIX)
    done = None
    if backup.is_dir() and not db_path.exists():
        os.rename(backup, db_path)
        done = f"put the store back from {backup} (a re-embedding stopped between its two renames)"
    elif backup.is_dir():
        shutil.rmtree(backup)
        done = f"removed {backup}, the store a finished re-embedding replaced"
    if scratch.exists():
        shutil.rmtree(scratch)
        done = (done + "; " if done else "") + f"removed {scratch}, the copy of a re-embedding that stopped"
    return done


def reembed(
    db_path: Path,
    model_id: str,
    dim: int,
    embed: Embed,
    *,
    progress: Progress | None = None,
    lock_timeout: float = 30.0,
    open_store: Callable[[Path], None] | None = None,
) -> Result:
    """Re-embed the store at `db_path` (a LanceDB directory) with `embed`, recorded as `model_id`.
    `open_store` opens the finished copy once as a store (building what a store builds on open)."""
    recover(db_path)
    scratch, backup = _sibling(db_path, SCRATCH_SUFFIX), _sibling(db_path, BACKUP_SUFFIX)
    with StoreLock(db_path / LOCK_FILE, lock_timeout):
        shutil.copytree(db_path, scratch, ignore=shutil.ignore_patterns(LOCK_FILE, INDEX_LOCK_FILE))
        try:
            db = connect(scratch, SMALL_INDEX_CACHE_BYTES)
            memories = db.open_table(TABLE_NAME)
            old_model = (memories.schema.metadata or {}).get(MODEL_KEY, b"").decode() or None
            tables = [TABLE_NAME] + ([HISTORY_TABLE] if HISTORY_TABLE in db.table_names() else [])
            rows = {name: db.open_table(name).to_arrow() for name in tables}
            total = sum(t.num_rows for t in rows.values())
            done = 0

            def counted(texts: list[str]) -> np.ndarray:
                nonlocal done
                out = np.empty((len(texts), dim), dtype=np.float32)
                for start in range(0, len(texts), CHUNK):
                    vectors = np.asarray(embed(texts[start : start + CHUNK]), dtype=np.float32)
                    if vectors.shape != (len(texts[start : start + CHUNK]), dim):
                        raise ValueError(f"the embedder returned vectors of shape {vectors.shape}, not (n, {dim})")
                    out[start : start + len(vectors)] = vectors
                    done += len(vectors)
                    if progress is not None:
                        progress(done, total)
                return out

            for name, table in rows.items():
                vectors = counted(table.column("content").to_pylist())
                column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), dim)
                table = table.set_column(table.schema.get_field_index("vector"), "vector", column)
                meta = dict(table.schema.metadata or {})
                meta.update({MODEL_KEY: model_id.encode(), DIM_KEY: str(dim).encode()})
                db.create_table(name, table.replace_schema_metadata(meta), mode="overwrite")
            del db, memories
            if open_store is not None:
                open_store(scratch)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        os.rename(db_path, backup)
        os.rename(scratch, db_path)
    shutil.rmtree(backup, ignore_errors=True)
    counts = {name: t.num_rows for name, t in rows.items()}
    return Result(str(db_path), old_model, model_id, counts[TABLE_NAME], counts.get(HISTORY_TABLE, 0))


def _sibling(db_path: Path, suffix: str) -> Path:
    return db_path.with_name(db_path.name + suffix)
