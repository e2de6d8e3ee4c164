"""`spatial-memory doctor`: check a store file by file, and repair what can be repaired safely.

The check reads the store without writing to it: the versions on disk (every manifest decoded),
the model record in the schema, every fragment's rows (so a missing or damaged data file is found
and the memories in it named when anything still holds their ids), the indexes, and how many rows
can be read. The repair only moves or copies: damaged newest manifests go to a
`doctor-backup-<time>` folder beside the table (with copies of the data and transaction files no
readable version lists, which may hold the rows those versions added), so the table opens at its
last good version again and takes writes. Nothing is deleted. A missing data file is reported, not
repaired: only a copy of that file brings its rows back.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..table.connection import SMALL_INDEX_CACHE_BYTES, connect
from ..table.schema import DIM_KEY, MODEL_KEY, TABLE_NAME
from ..writing.locking import LOCK_FILE, StoreLock
from .manifests import DATA_DIR, Fragment, ManifestError, manifest_files, read_manifest
from .recovery import open_last_good, table_dir

TAKE_CHUNK = 8192
PREVIEW = 80
TRANSACTIONS_DIR = "_transactions"


@dataclass
class Finding:
    check: str  # versions, model, fragments, indexes, rows
    ok: bool
    message: str


@dataclass
class LostFragment:
    fragment: int
    rows: int
    missing_files: list[str]
    error: str
    ids_known: bool


@dataclass
class Report:
    path: str
    findings: list[Finding] = field(default_factory=list)
    opened_version: int | None = None
    damaged_versions: list[int] = field(default_factory=list)
    lost_fragments: list[LostFragment] = field(default_factory=list)
    lost_memories: list[dict[str, Any]] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    backup: str | None = None

    @property
    def healthy(self) -> bool:
        return all(f.ok for f in self.findings)

    def add(self, check: str, ok: bool, message: str) -> None:
        self.findings.append(Finding(check, ok, message))

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "healthy": self.healthy}


def resolve_db_path(path: Path) -> Path:
    """The LanceDB directory for `path`: a SPATIAL_MEMORY_PATH (holding lancedb/) or the directory itself."""
    return path / "lancedb" if (path / "lancedb" / f"{TABLE_NAME}.lance").is_dir() else path


def check(db_path: Path) -> Report:
    report = Report(str(db_path))
    if not table_dir(db_path).is_dir():
        report.add("versions", False, f"no memory store at {db_path} (no {TABLE_NAME}.lance)")
        return report
    opened = _open(db_path, report)
    if opened is None:
        return report
    _db, table, _damage = opened  # _damage keeps recovery's view alive while the table is read
    _check_model(table, report)
    readable_ids = _check_fragments(db_path, table, report)
    _check_indexes(table, report, fragments_ok=not report.lost_fragments)
    if report.lost_fragments:
        _recover_lost_ids(db_path, report, readable_ids)
    return report


def repair(db_path: Path) -> Report:
    """Move the damaged newest manifests aside (under the store's write lock), then check again."""
    before = check(db_path)
    if not before.damaged_versions:
        before.repairs.append("nothing to repair" if before.healthy else "nothing doctor can repair (see above)")
        return before
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = db_path / f"doctor-backup-{stamp}" / f"{TABLE_NAME}.lance"
    repairs = []
    with StoreLock(db_path / LOCK_FILE, 30.0):
        source = table_dir(db_path)
        kept_versions = backup / "_versions"
        kept_versions.mkdir(parents=True, exist_ok=True)
        damaged = [m for m in manifest_files(source) if m.version in before.damaged_versions]
        for manifest in damaged:
            shutil.move(str(manifest.path), kept_versions / manifest.path.name)
            repairs.append(f"moved the damaged manifest of version {manifest.version} to {kept_versions}")
        copied = _copy_orphans(source, backup)
        if copied:
            repairs.append(
                f"copied {copied} data/transaction file(s) no readable version lists (they may hold rows the "
                f"damaged version(s) added) to {backup}"
            )
    after = check(db_path)
    after.repairs = repairs
    after.backup = str(backup.parent)
    if after.opened_version is not None:
        after.repairs.append(f"the store opens at version {after.opened_version} and takes writes again")
    return after


# ---- the checks ------------------------------------------------------------------------------


def _connect(path: Path):
    return connect(path, SMALL_INDEX_CACHE_BYTES)


def _open(db_path: Path, report: Report):
    files = manifest_files(table_dir(db_path))
    unreadable = []
    for manifest in files:
        try:
            read_manifest(manifest.path)
        except ManifestError as exc:
            unreadable.append((manifest.version, str(exc)))
    span = f"{len(files)} version(s) on disk ({files[-1].version}-{files[0].version})" if files else "no versions"
    try:
        db = _connect(db_path)
        table = db.open_table(TABLE_NAME)
    except Exception as exc:  # noqa: BLE001 - reported, then the last good version is tried
        recovered = open_last_good(db_path, _connect, exc)
        if recovered is None:
            report.add("versions", False, f"{span}; the table cannot be opened at any version: {exc}")
            return None
        db, table, damage = recovered
        report.damaged_versions = damage.damaged_versions
        report.add(
            "versions",
            False,
            f"{span}; newest version(s) {_listing(damage.damaged_versions)} unreadable, last good version "
            f"{damage.opened_version}. `spatial-memory doctor --repair` restores it (moves the damaged "
            "manifests to a backup folder)",
        )
    else:
        older = [v for v, _ in unreadable if v != table.version]
        note = f"; older version(s) {_listing(older)} unreadable (only time travel to them fails)" if older else ""
        report.add("versions", True, f"{span}; newest version {table.version} opens{note}")
    report.opened_version = table.version
    return db, table, locals().get("damage")


def _check_model(table, report: Report) -> None:
    meta = table.schema.metadata or {}
    model = meta.get(MODEL_KEY, b"").decode() or None
    dim = meta.get(DIM_KEY, b"").decode() or None
    if model and dim:
        report.add("model", True, f"model record: {model}, {dim} dimensions")
    else:
        report.add("model", False, "no model record in the table's schema: the store was not written by spatial-memory")


def _check_fragments(db_path: Path, table, report: Report) -> set[str]:
    """Read every fragment's rows; record the unreadable ones. Returns the ids that read."""
    manifest = _manifest_of(db_path, table.version)
    data_dir = table_dir(db_path) / DATA_DIR
    readable: set[str] = set()
    for fragment in manifest.fragments:
        missing = [name for name in fragment.files if not (data_dir / name).exists()]
        try:
            ids = _read_fragment(table, fragment, None)
        except Exception as exc:  # noqa: BLE001 - recorded as a damaged fragment
            error = _short(exc)
            try:  # the id column may sit in another data file than the one lost
                ids = _read_fragment(table, fragment, ["id"])
            except Exception:  # noqa: BLE001
                ids = None
            report.lost_fragments.append(
                LostFragment(fragment.id, fragment.rows, [f"{DATA_DIR}/{m}" for m in missing], error, ids is not None)
            )
            for memory_id in ids or []:
                report.lost_memories.append({"id": memory_id, "content": None, "source": "id column still readable"})
            continue
        readable.update(ids)
    total = sum(f.rows for f in manifest.fragments)
    lost = sum(f.rows for f in report.lost_fragments)
    if report.lost_fragments:
        parts = [
            f"fragment {f.fragment} ({', '.join(f.missing_files) + ' missing' if f.missing_files else f.error}): "
            f"{f.rows} memor{'y' if f.rows == 1 else 'ies'}"
            for f in report.lost_fragments
        ]
        unreadable = f"{len(report.lost_fragments)} of {len(manifest.fragments)} unreadable"
        report.add("fragments", False, f"{unreadable}: {'; '.join(parts)}")
    else:
        report.add("fragments", True, f"{len(manifest.fragments)} fragment(s), every row readable")
    report.add("rows", not lost, f"{total - lost} of {total} memories readable")
    return readable


def _read_fragment(table, fragment: Fragment, columns: list[str] | None) -> list[str]:
    ids: list[str] = []
    base = fragment.id << 32  # a row address: fragment id, then the row's offset in it
    for start in range(0, fragment.physical_rows, TAKE_CHUNK):
        addresses = list(range(base + start, base + min(start + TAKE_CHUNK, fragment.physical_rows)))
        query = table.take_row_ids(addresses)
        if columns is not None:
            query = query.select(columns)
        ids.extend(query.to_arrow().column("id").to_pylist())
    return ids


def _check_indexes(table, report: Report, *, fragments_ok: bool) -> None:
    try:
        indices = list(table.list_indices())
    except Exception as exc:  # noqa: BLE001
        report.add("indexes", False, f"the index list cannot be read: {_short(exc)}")
        return
    if not indices:
        report.add("indexes", True, "no indexes (searches are exact)")
        return
    problems, described = [], []
    for index in indices:
        try:
            stats = table.index_stats(index.name)
            indexed = int(getattr(stats, "num_indexed_rows", 0) or 0)
            described.append(f"{index.name} ({index.index_type}, {indexed} rows)")
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{index.name}: {_short(exc)}")
    if fragments_ok:  # a query touching an unreadable fragment fails anyway: said above
        problems.extend(_query_indexes(table, indices))
    if problems:
        report.add("indexes", False, "; ".join(problems))
    else:
        report.add("indexes", True, ", ".join(described))


def _query_indexes(table, indices) -> list[str]:
    """Run one query through each kind of index the table has."""
    problems = []
    kinds = {str(i.index_type).upper() for i in indices}
    if kinds & {"FTS", "INVERTED"}:
        from lancedb.query import MatchQuery  # imported here: see connection.py's docstring

        try:
            table.search(
                MatchQuery("memory", "content"),  # pyright: ignore[reportCallIssue] - lancedb's pydantic dataclass: the checker sees none of its field defaults
                query_type="fts",
            ).select(["id", "_score"]).limit(1).to_arrow()
        except Exception as exc:  # noqa: BLE001
            problems.append(f"keyword search through the full-text index fails: {_short(exc)}")
    if any("HNSW" in k or "IVF" in k for k in kinds):
        dim = table.schema.field("vector").type.list_size
        probe = np.full(dim, 1 / np.sqrt(dim), dtype=np.float32)
        try:
            table.search(probe, vector_column_name="vector").select(["id"]).limit(1).to_arrow()
        except Exception as exc:  # noqa: BLE001
            problems.append(f"vector search through the vector index fails: {_short(exc)}")
    return problems


def _recover_lost_ids(db_path: Path, report: Report, readable: set[str]) -> None:
    """The memories a lost fragment held, when an older version still has them elsewhere: the
    version just before the fragment appeared, in the fragments that vanished when it did (a
    compaction, or an update, rewrote their rows into it). Rows appended by that commit, or in
    fragments whose own files are gone, cannot be named."""
    history = []
    for manifest_file in reversed(manifest_files(table_dir(db_path))):  # oldest first
        try:
            history.append(read_manifest(manifest_file.path))
        except ManifestError:
            continue
    data_dir = table_dir(db_path) / DATA_DIR
    known = {m["id"] for m in report.lost_memories} | readable
    for lost in report.lost_fragments:
        if lost.ids_known:
            continue
        first = next((i for i, m in enumerate(history) if any(f.id == lost.fragment for f in m.fragments)), None)
        if not first:  # unknown, or there since the oldest version on disk
            continue
        before, after = history[first - 1], history[first]
        remaining = {f.id for f in after.fragments}
        vanished = [f for f in before.fragments if f.id not in remaining]
        if not vanished:
            continue
        try:
            table = _connect(db_path).open_table(TABLE_NAME, version=before.version)
        except Exception:  # noqa: BLE001 - an older version that cannot be read does not help
            continue
        for fragment in vanished:
            if not all((data_dir / name).exists() for name in fragment.files):
                continue
            try:
                rows = _take(table, fragment, ["id", "content", "namespace"])
            except Exception:  # noqa: BLE001
                continue
            for row in rows:
                if row["id"] in known:
                    continue
                known.add(row["id"])
                report.lost_memories.append(
                    {
                        "id": row["id"],
                        "content": row["content"][:PREVIEW],
                        "namespace": row["namespace"],
                        "source": f"fragment {lost.fragment}, as read from version {before.version}",
                    }
                )
    named = sum(1 for m in report.lost_memories if m["content"] is not None)
    unknown = sum(f.rows for f in report.lost_fragments if not f.ids_known)
    if named < unknown:
        report.add(
            "rows",
            False,
            f"{unknown - named} lost memories cannot be named: no readable file of this store holds their ids "
            "(only a copy of the missing data file brings them back)",
        )


def _take(table, fragment: Fragment, columns: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    base = fragment.id << 32
    for start in range(0, fragment.physical_rows, TAKE_CHUNK):
        addresses = list(range(base + start, base + min(start + TAKE_CHUNK, fragment.physical_rows)))
        rows.extend(table.take_row_ids(addresses).select(columns).to_arrow().to_pylist())
    return rows


# ---- helpers ---------------------------------------------------------------------------------


def _manifest_of(db_path: Path, version: int):
    for manifest in manifest_files(table_dir(db_path)):
        if manifest.version == version:
            return read_manifest(manifest.path)
    raise ManifestError(f"no manifest file for version {version}")


def _copy_orphans(source: Path, backup: Path) -> int:
    """Copy the data and transaction files that no readable manifest lists into the backup."""
    listed: set[str] = set()
    txns: set[str] = set()
    for manifest_file in manifest_files(source):
        try:
            manifest = read_manifest(manifest_file.path)
        except ManifestError:
            continue
        txns.add(manifest.transaction_file)
        for fragment in manifest.fragments:
            listed.update(fragment.files)
    copied = 0
    for folder, keep in ((DATA_DIR, lambda p: p.name not in listed), (TRANSACTIONS_DIR, lambda p: p.name not in txns)):
        directory = source / folder
        if not directory.is_dir():
            continue
        for path in directory.iterdir():
            if path.is_file() and keep(path):
                (backup / folder).mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, backup / folder / path.name)
                copied += 1
    return copied


def _listing(versions: list[int]) -> str:
    return ", ".join(str(v) for v in sorted(versions))


def _short(exc: BaseException) -> str:
    return str(exc).split(", /")[0][:300]


def render(report: Report) -> str:
    """The report as text for a terminal."""
    lines = [f"spatial-memory doctor: {report.path}"]
    for finding in report.findings:
        lines.append(f"  {finding.check:<10} {'ok' if finding.ok else 'PROBLEM':<8} {finding.message}")
    if report.lost_memories or report.lost_fragments:
        lines.append("lost memories:")
        for memory in report.lost_memories:
            content = f' "{memory["content"]}"' if memory.get("content") else ""
            lines.append(f"  {memory['id']}{content}  [{memory['source']}]")
        for fragment in report.lost_fragments:
            if not fragment.ids_known:
                lines.append(f"  fragment {fragment.fragment}: {fragment.rows} memories, ids not readable")
    for repair_done in report.repairs:
        lines.append(f"repair: {repair_done}")
    lines.append("healthy" if report.healthy else "problems found")
    return "\n".join(lines)
