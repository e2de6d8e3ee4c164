"""The table version read again only when the table's version files may have changed
(storage/table/version_watch.py): every commit, by any process, is seen at once."""

from __future__ import annotations

import os
import time

import numpy as np

from spatial_memory.records import MemoryRecord, new_id
from spatial_memory.storage.filters import build_filter
from spatial_memory.storage.store import MemoryStore
from spatial_memory.storage.table.schema import TABLE_NAME
from spatial_memory.storage.table.version_watch import SETTLED_NS, VersionWatch

DIM = 8


class Versions:
    def __init__(self) -> None:
        self.version = 1

    def read(self) -> int:
        return self.version


def test_a_directory_whose_entries_did_not_change_is_not_asked_again(tmp_path):
    versions, clock = Versions(), [0]
    watch = VersionWatch(tmp_path, versions.read, clock=lambda: clock[0])
    (tmp_path / "18446744073709551614.manifest").write_bytes(b"")
    stamp = os.stat(tmp_path).st_mtime_ns
    clock[0] = stamp + SETTLED_NS // 2  # soon after the last change: its time proves nothing yet
    assert watch.current() == 1 and watch.reads == 1
    versions.version = 2  # (a change LanceDB would know of only with a new manifest: never the case)
    assert [watch.current(), watch.current()] == [1, 1] and watch.reads == 1  # the same entries listed
    (tmp_path / "18446744073709551613.manifest").write_bytes(b"")  # a commit
    os.utime(tmp_path, ns=(stamp, stamp))  # even one that left the directory's time as it was
    assert watch.current() == 2 and watch.reads == 2
    (tmp_path / "18446744073709551614.manifest").unlink()  # an old version cleaned up
    versions.version = 3
    assert watch.current() == 3 and watch.reads == 3
    clock[0] = os.stat(tmp_path).st_mtime_ns + 2 * SETTLED_NS  # long after the last change
    assert [watch.current(), watch.current()] == [3, 3] and watch.reads == 3
    watch.forget()
    assert watch.current() == 3 and watch.reads == 4


def test_a_settled_directory_is_not_even_listed(tmp_path, monkeypatch):
    versions = Versions()
    watch = VersionWatch(tmp_path, versions.read, clock=lambda: os.stat(tmp_path).st_mtime_ns + 2 * SETTLED_NS)
    assert watch.current() == 1

    def no_listing(path):
        raise AssertionError("listed")

    monkeypatch.setattr(os, "listdir", no_listing)
    assert [watch.current(), watch.current()] == [1, 1] and watch.reads == 1


def test_no_directory_always_asks(tmp_path):
    versions = Versions()
    for watch in (VersionWatch(tmp_path / "gone", versions.read), VersionWatch(None, versions.read)):
        for _ in range(3):
            assert watch.current() == 1
        assert watch.reads == 3


def record(rng: np.random.Generator, namespace: str) -> MemoryRecord:
    vector = rng.normal(size=DIM).astype(np.float32)
    return MemoryRecord(id=new_id(), content="x", namespace=namespace, vector=vector / np.linalg.norm(vector))


def test_another_process_commit_is_seen_at_once_by_a_settled_watch(tmp_path):
    rng = np.random.default_rng(5)
    path = tmp_path / "db"
    mine = MemoryStore(path, "m", DIM)
    other = MemoryStore(path, "m", DIM)  # a second server on the same store
    mine.add([record(rng, "a") for _ in range(20)])
    versions_dir = path / f"{TABLE_NAME}.lance" / "_versions"
    settled = time.time_ns() - 10 * SETTLED_NS
    for step in range(4):
        if step % 2:
            os.utime(versions_dir, ns=(settled, settled))  # as if the last commit were long ago
        for _ in range(3):  # the copy answers from the version it knows, without asking LanceDB each time
            assert len(mine.search(record(rng, "b").vector, 50, build_filter(namespace="b"))) == 5 * step
        other.add([record(rng, "b") for _ in range(5)])  # a new manifest: the directory's time moves
        assert mine.count(build_filter(namespace="b")) == 5 * (step + 1)
        assert len(mine.search(record(rng, "b").vector, 50, build_filter(namespace="b"))) == 5 * (step + 1)
