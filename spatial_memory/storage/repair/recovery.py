"""Opening a table whose newest version is unreadable at its last good version instead.

A manifest truncated to zero bytes (a crash before the file system wrote it out, a bad disk) makes
LanceDB fail every open of the table, though every older version is intact, and it offers no way
around it: opening at an older version opens the newest first. So the last good version is opened
through a *view*: a private temporary directory with symbolic links to the store's files, whose
`_versions` holds only the manifests up to that version. Nothing in the store is changed, so this
also works on read-only media; the store is then served read-only, since a commit through the view
would put its manifest in the temporary directory. `spatial-memory doctor --repair` (doctor.py)
makes the store writable again by moving the damaged manifests aside.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..table.schema import TABLE_NAME
from .manifests import VERSIONS_DIR, ManifestError, manifest_files, read_manifest

log = logging.getLogger(__name__)

# Older versions tried before giving up: each try opens the table once.
MAX_VERSIONS_TRIED = 8


@dataclass
class Damage:
    """The store was opened at `opened_version` because the newer ones could not be read."""

    opened_version: int
    damaged_versions: list[int]
    error: str
    view: Path | None = field(default=None, repr=False)

    @property
    def message(self) -> str:
        return (
            f"the newest version of the memory store ({max(self.damaged_versions)}) is damaged, so it is "
            f"served read-only at its last good version ({self.opened_version}): nothing was changed. "
            "Run `spatial-memory doctor --repair` (it keeps the damaged files in a backup folder), then "
            "restart the server."
        )


def table_dir(db_path: Path) -> Path:
    return db_path / f"{TABLE_NAME}.lance"


def open_last_good(db_path: Path, connect: Callable[[Path], Any], error: Exception) -> tuple[Any, Any, Damage] | None:
    """(connection, table, damage) at the newest version that opens, when the newest does not;
    None when no older version helps (the caller raises `error`, the newest version's failure)."""
    files = manifest_files(table_dir(db_path))
    tried = 0
    for i, candidate in enumerate(files[1:], start=1):
        try:
            read_manifest(candidate.path)
        except ManifestError:
            continue
        if tried >= MAX_VERSIONS_TRIED:
            break
        tried += 1
        view = make_view(db_path, keep_up_to=candidate.version)
        try:
            db = connect(view)
            table = db.open_table(TABLE_NAME)
            table.count_rows()
        except Exception as exc:  # noqa: BLE001 - try the next older version
            log.debug("version %d does not open either: %s", candidate.version, exc)
            shutil.rmtree(view, ignore_errors=True)
            continue
        damage = Damage(candidate.version, [f.version for f in files[:i]], str(error), view)
        weakref.finalize(damage, shutil.rmtree, str(view), True)
        log.warning(
            "the memory store's newest version%s %s cannot be read (%s); serving version %d read-only. "
            "Run `spatial-memory doctor --repair`.",
            "s" if i > 1 else "",
            ", ".join(str(v) for v in damage.damaged_versions),
            _short(error),
            candidate.version,
        )
        return db, table, damage
    return None


def make_view(db_path: Path, *, keep_up_to: int) -> Path:
    """A temporary directory that reads as the store with only the versions up to `keep_up_to`."""
    view = Path(tempfile.mkdtemp(prefix="spatial-memory-view-"))
    try:
        source = table_dir(db_path)
        for entry in db_path.iterdir():
            if entry != source:
                os.symlink(entry, view / entry.name)
        target = view / source.name
        target.mkdir()
        for entry in source.iterdir():
            if entry.name != VERSIONS_DIR:
                os.symlink(entry, target / entry.name)
        versions = target / VERSIONS_DIR
        versions.mkdir()
        for manifest in manifest_files(source):
            if manifest.version <= keep_up_to:
                os.symlink(manifest.path, versions / manifest.path.name)
    except BaseException:
        shutil.rmtree(view, ignore_errors=True)
        raise
    return view


def _short(error: Exception) -> str:
    text = str(error)
    return text.split(", /")[0][:200]  # LanceDB appends the Rust source location
