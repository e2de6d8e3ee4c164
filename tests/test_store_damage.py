"""Stores that cannot be written or are damaged (issue 19): a read-only store serves reads and refuses
writes with a typed error; a store whose newest version is unreadable opens at its last good one;
`spatial-memory doctor` finds the damage, names the memories a lost data file held, and repairs a
damaged newest version without deleting anything.

Tests run as root here, which ignores file permissions, so a read-only store is made three ways:
SPATIAL_MEMORY_READ_ONLY; the lock file's open failing with EROFS (monkeypatched); and, where the
machine allows it, a real read-only bind mount in a private mount namespace (`unshare -m`).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from spatial_memory.config import Settings
from spatial_memory.errors import ReadOnlyStoreError
from spatial_memory.records import MemoryRecord, new_id
from spatial_memory.storage.repair import doctor
from spatial_memory.storage.repair.manifests import manifest_files
from spatial_memory.storage.store import MemoryStore

from .conftest import data
from .hash_embedder import HashEmbedder

ROOT = Path(__file__).resolve().parents[1]
FACTS = ["The staging server runs on port 8443", "Lunch is at noon on Fridays", "The cat is called Miso"]


@asynccontextmanager
async def mcp_client(settings: Settings):
    from mcp import Client

    from spatial_memory.server.app import create_server

    async with Client(create_server(settings, embedder=HashEmbedder())) as client:
        yield client


async def fill(settings: Settings, facts=FACTS) -> list[str]:
    async with mcp_client(settings) as client:
        return [data(await client.call_tool("remember", {"content": fact}))["id"] for fact in facts]


def table_dir(settings: Settings) -> Path:
    return settings.db_path / "memories.lance"


def truncate_newest_manifest(settings: Settings) -> int:
    newest = manifest_files(table_dir(settings))[0]
    newest.path.write_bytes(b"")
    return newest.version


def all_files(root: Path) -> set[str]:
    return {p.name for p in root.rglob("*") if p.is_file()}


async def assert_reads_work(client, expected_ids: list[str], tmp_path: Path) -> dict:
    found = data(await client.call_tool("recall", {"query": "staging server port", "limit": 5}))
    assert {m["id"] for m in found["memories"]} == set(expected_ids)
    spaces = data(await client.call_tool("namespaces", {}))
    assert spaces["total_memories"] == len(expected_ids)
    exported = data(await client.call_tool("export_memories", {"output_path": "backup.json"}))
    assert exported["memories_exported"] == len(expected_ids), exported
    return data(await client.call_tool("stats", {}))


async def assert_writes_refused(client, memory_id: str, fragment: str) -> None:
    for name, arguments in (("remember", {"content": "something new"}), ("forget", {"memory_id": memory_id})):
        result = await client.call_tool(name, arguments)
        assert result.is_error, result
        body = data(result)
        assert body["error"] == "ReadOnlyStoreError", body
        assert fragment in body["message"], body


# ---- read-only ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_read_only_setting_serves_reads_and_refuses_writes(settings, tmp_path):
    ids = await fill(settings)
    async with mcp_client(settings.model_copy(update={"read_only": True})) as client:
        stats = await assert_reads_work(client, ids, tmp_path)
        assert stats["read_only"] is True and "SPATIAL_MEMORY_READ_ONLY" in stats["read_only_reason"]
        assert stats["damaged_versions"] == []
        await assert_writes_refused(client, ids[0], "read-only")
    async with mcp_client(settings) as client:  # nothing was changed
        assert data(await client.call_tool("stats", {}))["total_memories"] == len(ids)


@pytest.mark.anyio
async def test_lock_file_on_read_only_media_means_read_only(settings, tmp_path, monkeypatch):
    ids = await fill(settings)
    real_open = os.open

    def refusing_open(path, flags, *args):
        if str(path).endswith(".lock") and flags & (os.O_RDWR | os.O_WRONLY):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", refusing_open)
    async with mcp_client(settings) as client:
        stats = await assert_reads_work(client, ids, tmp_path)
        assert stats["read_only"] is True and "Read-only file system" in stats["read_only_reason"]
        await assert_writes_refused(client, ids[0], "read-only")


def test_directory_without_write_permission_means_read_only(tmp_path, monkeypatch):
    embedder = HashEmbedder()
    store = MemoryStore(tmp_path / "db", embedder.model_id, embedder.dimension)
    store.add([MemoryRecord(id=new_id(), content="kept", vector=embedder.embed_query("kept"))])
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False)  # what root sees on read-only media
    reopened = MemoryStore(tmp_path / "db", embedder.model_id, embedder.dimension)
    assert reopened.read_only and "not writable" in reopened.read_only_reason
    assert [r.content for r in reopened.scan()] == ["kept"]
    assert not reopened.needs_compaction()
    with pytest.raises(ReadOnlyStoreError):
        reopened.delete_ids([reopened.scan()[0].id])


PROBE = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from tests.hash_embedder import HashEmbedder
    from spatial_memory.errors import ReadOnlyStoreError
    from spatial_memory.records import MemoryRecord, new_id
    from spatial_memory.storage.store import MemoryStore

    e = HashEmbedder()
    store = MemoryStore(Path(sys.argv[1]), e.model_id, e.dimension)
    out = {"read_only": store.read_only, "reason": store.read_only_reason, "count": store.count(),
           "found": [h.record.content for h in store.search(e.embed_query("staging server port"), 1)]}
    try:
        store.add([MemoryRecord(id=new_id(), content="x", vector=e.embed_query("x"))])
    except ReadOnlyStoreError as exc:
        out["write"] = type(exc).__name__
    print(json.dumps(out))
    """
)


def test_real_read_only_mount(tmp_path):
    """A store on a read-only bind mount, in a private mount namespace (where the machine allows one)."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    db = tmp_path / "db"
    embedder = HashEmbedder()
    store = MemoryStore(db, embedder.model_id, embedder.dimension)
    store.add([MemoryRecord(id=new_id(), content=f, vector=embedder.embed_query(f)) for f in FACTS])
    del store
    (db / "memories.lock").unlink()  # a snapshot copied without it: it cannot be created either
    # sh -c SCRIPT sh PROBE: the probe is $1, so no quoting of its text is needed.
    script = f'mount --bind -o ro "{db}" "{db}" && exec "{sys.executable}" -c "$1" "{db}"'
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", PROBE],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=str(ROOT),
        timeout=120,
    )
    if done.returncode != 0 and ("unshare" in done.stderr or "mount" in done.stderr):
        pytest.skip(f"no private read-only mount here: {done.stderr.strip()[:200]}")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["read_only"] is True, out
    assert out["count"] == 3 and out["found"] == [FACTS[0]]
    assert out["write"] == "ReadOnlyStoreError"
    assert not (db / "memories.lock").exists()


# ---- a damaged newest version -------------------------------------------------------------------


@pytest.mark.anyio
async def test_damaged_newest_version_opens_at_last_good_and_doctor_repairs_it(settings, tmp_path):
    ids = await fill(settings)
    damaged = truncate_newest_manifest(settings)  # the commit that stored the last fact
    async with mcp_client(settings) as client:
        stats = await assert_reads_work(client, ids[:2], tmp_path)
        assert stats["read_only"] is True and stats["damaged_versions"] == [damaged]
        assert stats["table_version"] == damaged - 1 and "doctor --repair" in stats["read_only_reason"]
        await assert_writes_refused(client, ids[0], "doctor --repair")

    report = doctor.check(settings.db_path)
    assert not report.healthy and report.damaged_versions == [damaged] and report.opened_version == damaged - 1
    assert {f.check for f in report.findings if not f.ok} == {"versions"}

    before = all_files(settings.db_path)
    repaired = doctor.repair(settings.db_path)
    assert repaired.healthy, doctor.render(repaired)
    assert before <= all_files(settings.db_path)  # nothing deleted: the manifest moved into the backup
    backup = Path(repaired.backup)
    assert backup.name.startswith("doctor-backup-") and any(backup.rglob("*.manifest"))

    async with mcp_client(settings) as client:
        stats = data(await client.call_tool("stats", {}))
        assert stats["read_only"] is False and stats["damaged_versions"] == []
        new = data(await client.call_tool("remember", {"content": "The staging server moved to port 9443"}))
        found = data(await client.call_tool("recall", {"query": "staging server port", "limit": 5}))
        assert new["id"] in {m["id"] for m in found["memories"]}
        assert data(await client.call_tool("forget", {"memory_id": ids[1]}))["deleted"] == 1


def test_doctor_command_line_reports_and_repairs(tmp_path):
    import anyio

    settings = Settings(path=tmp_path / "store", preload=False)
    anyio.run(fill, settings)
    truncate_newest_manifest(settings)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPATIAL_MEMORY_")} | {"PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "spatial_memory", "doctor", "--path", str(settings.path)]

    checked = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert checked.returncode == 1, checked.stderr
    assert "unreadable, last good version" in checked.stdout and "problems found" in checked.stdout

    fixed = subprocess.run([*command, "--repair", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    report = json.loads(fixed.stdout)
    assert report["healthy"] and report["backup"] and report["repairs"]

    again = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert again.returncode == 0 and again.stdout.rstrip().endswith("healthy"), again.stdout


def test_doctor_on_a_missing_store(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "spatial_memory", "doctor", "--path", str(tmp_path / "nothing")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 2 and "no memory store" in done.stdout


# ---- a missing data file ------------------------------------------------------------------------


def one_fragment_each(tmp_path: Path) -> tuple[MemoryStore, list[MemoryRecord]]:
    embedder = HashEmbedder()
    store = MemoryStore(tmp_path / "db", embedder.model_id, embedder.dimension)
    records = [MemoryRecord(id=new_id(), content=f, vector=embedder.embed_query(f)) for f in FACTS]
    for record in records:
        store.add([record])  # a fragment, and a data file, each
    return store, records


def data_file_of(store: MemoryStore, memory_id: str) -> Path:
    """The data file holding a memory's row, found by moving each file away and reading."""
    data_dir = store.table.path / "memories.lance" / "data"
    for path in sorted(data_dir.iterdir()):
        aside = path.with_suffix(".aside")
        path.rename(aside)
        try:
            store.get(memory_id)
        except Exception:  # noqa: BLE001 - this file holds it
            return path
        finally:
            aside.rename(path)
    raise AssertionError("no data file holds it")


def test_missing_data_file_reads_fail_typed_and_doctor_counts_the_loss(tmp_path):
    from spatial_memory.errors import StorageError

    store, records = one_fragment_each(tmp_path)
    data_file_of(store, records[1].id).unlink()
    with pytest.raises(StorageError):
        store.scan()
    report = doctor.check(store.table.path)
    assert not report.healthy
    assert [(f.rows, f.ids_known) for f in report.lost_fragments] == [(1, False)]
    assert report.lost_fragments[0].missing_files  # names the file
    assert "2 of 3 memories readable" in doctor.render(report)
    assert "cannot be named" in doctor.render(report)  # said honestly: no readable file holds the id


def test_doctor_names_the_memories_a_lost_compacted_file_held(tmp_path):
    from spatial_memory.storage.table.maintenance import KEEP_ALL_VERSIONS

    store, records = one_fragment_each(tmp_path)
    store.maintenance.optimize(KEEP_ALL_VERSIONS)  # one new fragment from the three; the old versions keep theirs
    assert store.table.fragment_count() == 1
    data_file_of(store, records[0].id).unlink()
    report = doctor.check(store.table.path)
    assert [f.rows for f in report.lost_fragments] == [3]
    lost = {m["id"]: m["content"] for m in report.lost_memories}
    assert lost == {r.id: r.content for r in records}, doctor.render(report)
    assert all("version" in m["source"] for m in report.lost_memories)
