"""The capture spool: durable appends, claims that two ingesters never share, kill -9 of a hook
mid-write losing nothing it acknowledged, and idempotent retries of an ingest that crashed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from spatial_memory.capture import spool as spool_module
from spatial_memory.capture.presence import ingesting, someone_ingesting
from spatial_memory.capture.spool import Spool


def record(i: int, session: str = "s") -> dict:
    return {
        "id": f"00000000-0000-4000-8000-{i:012d}",
        "content": f"memory {i}",
        "namespace": "ns",
        "session_id": session,
    }


def test_append_then_claim_read_done(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    assert not spool.has_work() and spool.claim() == []
    spool.append([record(1), record(2)])
    spool.append([record(3)])
    assert spool.has_work()
    claims = spool.claim()
    assert [r["content"] for c in claims for r in spool.read(c)] == ["memory 1", "memory 2", "memory 3"]
    assert not spool.has_work() and spool.claim() == []
    for c in claims:
        spool.done(c)
    assert list(spool.claimed_dir.iterdir()) == []
    assert oct(spool.dir.stat().st_mode & 0o777) == "0o700"


def test_two_ingesters_never_claim_one_file(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    for i in range(200):
        spool.append([record(i)])
    taken: list[list[str]] = [[], [], [], []]

    def take(slot: int) -> None:
        other = Spool(tmp_path)
        while True:
            claims = other.claim(limit=7)
            if not claims:
                return
            taken[slot] += [r["id"] for c in claims for r in other.read(c)]

    threads = [threading.Thread(target=take, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [i for part in taken for i in part]
    assert len(every) == 200 and len(set(every)) == 200


def test_partial_line_of_a_killed_writer_is_skipped(tmp_path: Path, monkeypatch) -> None:
    spool = Spool(tmp_path)
    spool.dir.mkdir(parents=True)
    (spool.dir / "00000000000000000001-1-aa.part").write_text('{"id": "a", "content": "x"}\n{"id": "b", "cont')
    assert not spool.has_work()  # a hook may still be writing it
    monkeypatch.setattr(spool_module, "STALE_SECONDS", -1.0)
    (claim,) = spool.claim()
    assert [r["id"] for r in spool.read(claim)] == ["a"]


def test_a_stale_claim_is_taken_again(tmp_path: Path, monkeypatch) -> None:
    spool = Spool(tmp_path)
    spool.append([record(1)])
    (first,) = spool.claim()  # this ingester dies here
    assert spool.claim() == []
    monkeypatch.setattr(spool_module, "STALE_SECONDS", -1.0)
    (again,) = spool.claim()
    assert spool.read(again)[0]["id"] == record(1)["id"] and not first.path.exists()


WRITER = textwrap.dedent(
    """
    import sys
    from spatial_memory.capture.spool import Spool
    spool = Spool(sys.argv[1])
    i = 0
    while True:
        spool.append([{"id": f"rec-{i}", "content": "x" * 2000, "namespace": "ns"}] * 3)
        print(i, flush=True)  # acknowledged: the hook would exit 0 now
        i += 1
    """
)


def test_kill_9_during_spool_writes_loses_nothing_acknowledged(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True, env=env)
    acknowledged = []
    assert proc.stdout is not None
    for line in proc.stdout:
        acknowledged.append(int(line))
        if len(acknowledged) >= 40:
            break
    os.kill(proc.pid, signal.SIGKILL)  # very likely in the middle of the next append
    proc.wait()
    acknowledged += [int(line) for line in proc.stdout.read().split()]
    spool = Spool(tmp_path)
    spool_module.STALE_SECONDS, stale = -1.0, spool_module.STALE_SECONDS  # take the killed writer's .part too
    try:
        claims = spool.claim(limit=10_000)
    finally:
        spool_module.STALE_SECONDS = stale
    found = {r["id"] for c in claims for r in spool.read(c)}
    assert {f"rec-{i}" for i in acknowledged} <= found


def test_presence_of_a_live_and_of_a_dead_ingester(tmp_path: Path) -> None:
    spool_dir = tmp_path / "spool"
    assert not someone_ingesting(spool_dir)
    with ingesting(spool_dir):
        assert someone_ingesting(spool_dir)
    assert not someone_ingesting(spool_dir)
    # A process killed while ingesting leaves its file behind, unlocked: not alive, and cleaned up.
    code = (
        "import os,sys,time; from pathlib import Path; from spatial_memory.capture.presence import ingesting\n"
        "with ingesting(Path(sys.argv[1])):\n    print('in', flush=True); time.sleep(60)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", code, str(spool_dir)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "in"
    assert someone_ingesting(spool_dir)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 5
    while someone_ingesting(spool_dir) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not someone_ingesting(spool_dir)
    assert list((spool_dir / "ingesters").glob("*.lock")) == []


@pytest.mark.skipif(os.name != "posix", reason="permissions")
def test_spool_files_are_private(tmp_path: Path) -> None:
    path = Spool(tmp_path).append([record(1)])
    assert path is not None and path.stat().st_mode & 0o077 == 0


def test_record_ids_are_the_standard_uuid5() -> None:
    import uuid

    from spatial_memory.capture.records import ID_NAMESPACE, uuid5

    for name in ("", "claude-code\0s\0tool\0fix\0Fixed: `x` passes now", "日本語 🎉"):
        assert uuid5(ID_NAMESPACE, name) == str(uuid.uuid5(uuid.UUID(ID_NAMESPACE), name))
