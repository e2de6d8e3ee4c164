"""The table version read again only when the table's version files changed
(storage/table/version_watch.py): every commit, by any process, is seen at once."""

from __future__ import annotations

import numpy as np

from spatial_memory.records import MemoryRecord, new_id
from spatial_memory.storage.filters import build_filter
from spatial_memory.storage.store import MemoryStore
from spatial_memory.storage.table import version_watch
from spatial_memory.storage.table.version_watch import VersionWatch

DIM = 8


class Versions:
    def __init__(self) -> None:
        self.version = 1

    def read(self) -> int:
        return self.version


def test_lancedb_is_asked_again_only_when_a_manifest_comes_or_goes(tmp_path):
    versions = Versions()
    watch = VersionWatch(tmp_path, versions.read)
    (tmp_path / "18446744073709551614.manifest").write_bytes(b"")
    assert watch.current() == 1 and watch.reads == 1
    versions.version = 2  # (a change LanceDB would know of only with a new manifest: never the case)
    assert [watch.current(), watch.current()] == [1, 1] and watch.reads == 1
    (tmp_path / "18446744073709551613.manifest").write_bytes(b"")  # a commit
    assert watch.current() == 2 and watch.reads == 2
    (tmp_path / "18446744073709551614.manifest").unlink()  # an old version cleaned up
    versions.version = 3
    assert [watch.current(), watch.current()] == [3, 3] and watch.reads == 3
    watch.forget()
    assert watch.current() == 3 and watch.reads == 4


def test_no_directory_or_too_many_versions_always_asks(tmp_path, monkeypatch):
    versions = Versions()
    for watch in (VersionWatch(tmp_path / "gone", versions.read), VersionWatch(None, versions.read)):
        for _ in range(3):
            assert watch.current() == 1
        assert watch.reads == 3
    monkeypatch.setattr(version_watch, "MAX_LISTED", 2)
    for name in ("1.manifest", "2.manifest", "3.manifest"):
        (tmp_path / name).write_bytes(b"")
    crowded = VersionWatch(tmp_path, versions.read)
    for _ in range(3):
        assert crowded.current() == 1
    assert crowded.reads == 3


def record(rng: np.random.Generator, namespace: str) -> MemoryRecord:
    vector = rng.normal(size=DIM).astype(np.float32)
    return MemoryRecord(id=new_id(), content="x", namespace=namespace, vector=vector / np.linalg.norm(vector))


def test_another_process_commit_is_seen_at_once(tmp_path):
    rng = np.random.default_rng(5)
    path = tmp_path / "db"
    mine = MemoryStore(path, "m", DIM)
    other = MemoryStore(path, "m", DIM)  # a second server on the same store
    mine.add([record(rng, "a") for _ in range(20)])
    for step in range(3):
        for _ in range(3):  # the copy answers from the version it knows, without asking LanceDB each time
            assert len(mine.search(record(rng, "b").vector, 50, build_filter(namespace="b"))) == 5 * step
        other.add([record(rng, "b") for _ in range(5)])  # a new manifest
        assert mine.count(build_filter(namespace="b")) == 5 * (step + 1)
        assert len(mine.search(record(rng, "b").vector, 50, build_filter(namespace="b"))) == 5 * (step + 1)
    victim = mine.scan(build_filter(namespace="b"), with_vectors=True)[0]
    other.delete_ids([victim.id])
    assert victim.id not in {h.record.id for h in mine.search(victim.vector, 5)}
