"""A store on object storage: SPATIAL_MEMORY_PATH=s3://bucket/prefix against a local S3 server (moto),
one server over stdio and two replicas sharing one store under concurrent clients."""

from __future__ import annotations

import itertools
import logging
import os
import sys
import threading
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import pytest

from spatial_memory.storage.side_tables.access_ledger import RECHECK_SECONDS
from spatial_memory.storage.writing.lease import LeaseLock
from spatial_memory.storage.writing.locking import LOCK_FILE, StoreLock

from .conftest import call
from .reliability import FAKE_DIM, FAKE_MODEL_ID, REPO

pytestmark = pytest.mark.anyio

BUCKET = "memories"
_prefixes = itertools.count()


class Requests:
    """What the S3 server was asked: (method, key, If-None-Match header, status) of every request."""

    def __init__(self, app) -> None:
        self._app = app
        self.seen: list[tuple[str, str, str | None, int]] = []

    def __call__(self, environ, start_response):
        request = (environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), environ.get("HTTP_IF_NONE_MATCH"))

        def record(status: str, headers, *exc_info):
            self.seen.append((*request, int(status.split()[0])))
            return start_response(status, headers, *exc_info)

        return self._app(environ, record)


@pytest.fixture(scope="module")
def s3_env():
    """A moto S3 server on a free 127.0.0.1 port with one bucket, its requests recorded; the AWS_*
    variables that point LanceDB (in this process and in the servers it starts) at it."""
    pytest.importorskip("moto.server")
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    requests = server._server.app = Requests(server._server.app)  # werkzeug reads .app per request
    env = {
        "AWS_ENDPOINT_URL": "http://{}:{}".format(*server.get_host_and_port()),
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
    }
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name="us-east-1").create_bucket(Bucket=BUCKET)
        yield requests
    server.stop()


def new_uri() -> str:
    return f"s3://{BUCKET}/store-{next(_prefixes)}"


def open_store(location):
    from spatial_memory.storage.store import MemoryStore

    return MemoryStore(location, FAKE_MODEL_ID, FAKE_DIM, version_retention_seconds=0)


def two_replicas(rows: int, seed: int):
    """Two stores on one new S3 prefix (replicas in one process, each with its own connection and
    lease holder) that index from 1,000 rows, and `rows` memories with random unit vectors, not stored."""
    import numpy as np

    from spatial_memory.records import MemoryRecord, new_id
    from spatial_memory.storage.search.indexing import IndexPolicy
    from spatial_memory.storage.store import MemoryStore

    uri = new_uri()
    policy = IndexPolicy(vector_index_threshold=1_000, scalar_index_threshold=1_000)
    a, b = (MemoryStore(uri, FAKE_MODEL_ID, FAKE_DIM, index_policy=policy, version_retention_seconds=0) for _ in "ab")
    vectors = np.random.default_rng(seed).normal(size=(rows, FAKE_DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    memories = [
        MemoryRecord(id=new_id(), content=f"memory {i}", namespace="ns", vector=v) for i, v in enumerate(vectors)
    ]
    return a, b, memories


def replica(uri: str, local: Path, errlog, **extra: str):
    """A stdio server (the shipped server with the fake embedder) on the store `uri`."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {k: v for k, v in os.environ.items() if not k.startswith("SPATIAL_MEMORY_")}
    env.update(
        {
            "SPATIAL_MEMORY_PATH": uri,
            "SPATIAL_MEMORY_LOCAL_PATH": str(local),
            "PYTHONPATH": str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
            "SPATIAL_MEMORY_WARM_UP_PROJECTION": "false",
            "OMP_NUM_THREADS": "1",
            "HF_HUB_OFFLINE": "1",
            **extra,
        }
    )
    local.mkdir(parents=True, exist_ok=True)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tests.reliability_server"], env=env, cwd=str(local)
    )
    return stdio_client(params, errlog=errlog)


def test_the_lock_is_a_lease_on_s3_and_a_lock_file_locally(s3_env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    remote = open_store(new_uri())
    assert isinstance(remote.writer.lock, LeaseLock)
    assert remote.health_facts()["lock"] == "free"
    with remote.exclusive():
        assert remote.health_facts()["lock"] == "held"
    assert not list(tmp_path.rglob(LOCK_FILE)), "a store on S3 wrote a local lock file"
    local = open_store(tmp_path / "local")
    assert isinstance(local.writer.lock, StoreLock)
    assert (tmp_path / "local" / LOCK_FILE).exists()


def test_a_lease_is_exclusive_across_holders_and_taken_over_once_expired(s3_env):
    from spatial_memory.errors import StorageError
    from spatial_memory.storage.table.connection import connect
    from spatial_memory.storage.writing.lease import open_lease_table

    table = open_lease_table(connect(new_uri(), 1 << 20))
    first = LeaseLock(table, "memories", 0.2, lease_seconds=60)
    second = LeaseLock(table, "memories", 0.2, lease_seconds=60)
    with first:
        with pytest.raises(StorageError, match="busy"):
            second.__enter__()
    with second:
        assert first.probe() == "held"
    # A holder that died (never released) blocks the others only until its term ends.
    dead = LeaseLock(table, "memories", 1.0, lease_seconds=0.3)
    dead._lock_shared(time.monotonic() + 1.0)
    dead._released.set()  # its renewals stop, as they would with its process
    taker = LeaseLock(table, "memories", 10.0, lease_seconds=60)
    with taker:
        assert taker._row()["holder"] == taker._token != dead._token


def test_lance_commits_with_conditional_puts_that_the_local_s3_enforces(s3_env):
    """Replicas lose no commit because Lance writes each version's manifest with If-None-Match: *
    and S3 refuses it once that version exists; the loser re-reads and commits the next version.
    Both halves are checked on this server, then writers on separate connections lose nothing."""
    import boto3
    import pyarrow as pa
    from botocore.exceptions import ClientError

    from spatial_memory.storage.table.connection import connect

    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    client.put_object(Bucket=BUCKET, Key="probe/once", Body=b"1")
    with pytest.raises(ClientError, match="PreconditionFailed"):
        client.put_object(Bucket=BUCKET, Key="probe/once", Body=b"2", IfNoneMatch="*")
    uri = new_uri()
    connect(uri, 1 << 20).create_table("t", pa.table({"i": [-1]}))

    def append(k: int) -> None:
        table = connect(uri, 1 << 20).open_table("t")
        for i in range(4):
            table.add(pa.table({"i": [k * 10 + i]}))

    threads = [threading.Thread(target=append, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert connect(uri, 1 << 20).open_table("t").count_rows() == 13
    store = "/" + uri.removeprefix("s3://") + "/"
    manifests = [r for r in s3_env.seen if r[0] == "PUT" and r[1].startswith(store) and "/_versions/" in r[1]]
    assert manifests and all(if_none_match == "*" for _, _, if_none_match, _ in manifests)


def test_one_lease_holder_at_a_time_across_connections(s3_env):
    """Replicas starting together create the lease table once, and then hold the lease in turn."""
    from spatial_memory.storage.table.connection import connect
    from spatial_memory.storage.writing.lease import open_lease_table

    uri = new_uri()
    inside: list[int] = []
    overlaps: list[list[int]] = []
    turns: list[int] = []

    def holder(k: int) -> None:
        lock = LeaseLock(open_lease_table(connect(uri, 1 << 20)), "memories", 60.0)
        for _ in range(2):
            with lock:
                inside.append(k)
                if len(inside) > 1:
                    overlaps.append(list(inside))
                time.sleep(0.02)
                inside.remove(k)
                turns.append(k)

    threads = [threading.Thread(target=holder, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(turns) == [0, 0, 1, 1, 2, 2] and not overlaps


def test_upkeep_with_two_replicas_builds_once_and_counts_every_access(s3_env, caplog):
    """Two stores on one S3 prefix (replicas in one process, each with its own connection and lease
    holder): each one's exact copy follows the other's commits; while one builds the vector index the
    other skips its turn; both compacting at once lose nothing and build the index once; recall
    accesses recorded by both add up, through the rows or the access ledger."""
    from .conftest import indexed_vector_rows

    a, b, rows = two_replicas(1_201, seed=7)
    a.add(rows[:-1])
    assert b.search(rows[5].vector, 1)[0].record.id == rows[5].id  # b's exact copy, at a's version
    a.add(rows[-1:])
    assert b.search(rows[-1].vector, 1)[0].record.id == rows[-1].id  # reloaded at a's newer version

    with a.writer.index_lock:
        b.maintenance.maintain_indexes()  # a is building: b skips its turn
    assert indexed_vector_rows(b) is None

    caplog.set_level(logging.INFO, logger="spatial_memory.storage.table.maintenance")
    both = [threading.Thread(target=store.compact) for store in (a, b)]
    for t in both:
        t.start()
    for t in both:
        t.join()
    assert a.count() == b.count() == len(rows)
    assert indexed_vector_rows(a) == indexed_vector_rows(b) == len(rows)
    assert len([r for r in caplog.records if "built vector index" in r.getMessage()]) == 1

    def recall_twice(store) -> None:
        for _ in range(2):
            store.record_access({rows[0].id: 1, rows[1].id: 2})

    both = [threading.Thread(target=recall_twice, args=(store,)) for store in (a, b)]
    for t in both:
        t.start()
    for t in both:
        t.join()
    # A replica that found no access ledger looks for one again after RECHECK_SECONDS (see
    # test_recall_counts_add_up_while_a_replica_has_not_seen_the_new_vector_index): wait that long.
    time.sleep(RECHECK_SECONDS)
    for store in (a, b):
        assert [r.access_count for r in store.get_many([rows[0].id, rows[1].id])] == [4, 8]
    assert b.search(rows[9].vector, 1)[0].record.id == rows[9].id  # through the index now


@pytest.mark.parametrize("where", [["--path", "s3://memories/x"], []])
def test_doctor_refuses_a_store_on_object_storage(where, monkeypatch, capsys):
    from spatial_memory.cli import main

    monkeypatch.setenv("SPATIAL_MEMORY_PATH", "gs://bucket/team")
    with pytest.raises(SystemExit) as exit_:
        main(["doctor", *where])
    assert exit_.value.code == 2
    assert "on object storage" in capsys.readouterr().err


async def test_a_memory_life_on_s3_over_stdio(s3_env, tmp_path):
    from mcp import Client

    uri = new_uri()
    local = tmp_path / "local"
    with open(tmp_path / "server.log", "w") as errlog:
        async with Client(replica(uri, local, errlog), read_timeout_seconds=120) as c:
            first = await call(c, "remember", content="The staging server runs on port 8443", namespace="ops")
            await call(c, "remember", content="Lunch is at noon on Fridays", namespace="ops")
            found = await call(c, "recall", query="staging server port", namespace="ops", limit=1)
            assert found["memories"][0]["id"] == first["id"]
            await call(c, "update_memory", memory_id=first["id"], content="The staging server runs on port 9443")
            history = await call(c, "memory_history", memory_id=first["id"])
            assert [v["version"] for v in history["versions"]] == [2, 1]
            old = await call(c, "remember", content="Deploys happen on Tuesdays", namespace="ops")
            new = await call(
                c, "remember", content="Deploys happen on Thursdays", namespace="ops", supersedes=[old["id"]]
            )
            got = await call(c, "get_memories", memory_ids=[old["id"], new["id"]])
            assert {m["id"] for m in got["memories"]} >= {new["id"]}
            exported = await call(c, "export_memories", output_path="ops.json", namespace="ops", format="json")
            assert Path(exported["output_path"]).parent == local / "exports"
            await call(c, "forget", memory_id=first["id"])
            imported = await call(
                c,
                "import_memories",
                source_path="ops.json",
                namespace_override="copy",
                dry_run=False,
                regenerate_embeddings=True,
            )
            assert imported["memories_imported"] >= 2
            stats = await call(c, "stats")
            assert stats["storage_path"] == uri and stats["storage_bytes"] > 0
            assert stats["memories_by_namespace"]["ops"] == 2
    assert not (local / "lancedb").exists()  # the memories live on S3; the model cache and exports here


async def test_two_replicas_keep_every_acknowledged_write(s3_env, tmp_path):
    """Two servers on one S3 store, each with concurrent writers, upkeep compacting on both: every
    acknowledged memory is there at the end, concurrent updates of one memory keep unique versions
    and a complete history, and each replica reads what the other wrote."""
    from mcp import Client

    uri = new_uri()
    extra = {"SPATIAL_MEMORY_COMPACT_FRAGMENT_THRESHOLD": "3", "SPATIAL_MEMORY_VERSION_RETENTION_SECONDS": "0"}
    acknowledged: list[str] = []
    updates: list[str] = []
    async with AsyncExitStack() as stack:
        clients = []
        for k in range(2):
            errlog = stack.enter_context(open(tmp_path / f"server-{k}.log", "w"))  # noqa: SIM115
            clients.append(
                await stack.enter_async_context(
                    Client(replica(uri, tmp_path / f"local-{k}", errlog, **extra), read_timeout_seconds=240)
                )
            )
        a, b = clients
        shared = await call(a, "remember", content="shared counter at version one")

        async def writer(client, k: int, w: int) -> None:
            for i in range(2):
                body = await call(client, "remember", content=f"replica {k} writer {w} note {i}", namespace="team")
                acknowledged.append(body["id"])
                if i % 2 == 0:
                    text = f"shared counter set by replica {k} writer {w} round {i}"
                    await call(client, "update_memory", memory_id=shared["id"], content=text)
                    updates.append(text)

        async with anyio.create_task_group() as tg:
            for k, client in enumerate(clients):
                for w in range(2):
                    tg.start_soon(writer, client, k, w)

        # Each replica reads the other's writes (its exact copy follows the other's commits).
        mine = await call(a, "remember", content="written by replica a for b to find", namespace="probe")
        found = await call(b, "recall", query="written by replica a for b to find", namespace="probe", limit=1)
        assert [m["id"] for m in found["memories"]] == [mine["id"]]
        history = await call(b, "memory_history", memory_id=shared["id"], limit=100)
        got = await call(b, "get_memories", memory_ids=acknowledged)
    versions = [v["version"] for v in history["versions"]]
    assert versions == list(range(len(updates) + 1, 0, -1)), versions  # unique, none missing
    assert {v["content"] for v in history["versions"]} >= set(updates)
    assert {m["id"] for m in got["memories"]} == set(acknowledged), "acknowledged memories lost"
    store = open_store(uri)
    assert store.count() == len(acknowledged) + 2
    for k in range(2):
        text = (tmp_path / f"server-{k}.log").read_text(errors="replace")
        assert "Traceback" not in text, text[-3000:]


@pytest.mark.parametrize("order", ["aba", "bbaa"])
def test_recall_counts_add_up_while_a_replica_has_not_seen_the_new_vector_index(s3_env, order):
    """A replica learns that another built the vector index up to half a minute later. Until then it
    writes recall counts into the rows (folding the ledger in first) while the other writes them to
    the access ledger, laid over the rows: the counts of both add up. The replica that writes the
    ledger reads the sum at once. So does the other one when it has read the ledger ("aba": its
    fold did); when the ledger was created after it last looked for one ("bbaa"), it reads the sum
    once it looks again, every RECHECK_SECONDS, which spares each read a listing of the bucket.
    Reading b's counts without that wait made the test above flaky."""
    from .conftest import indexed_vector_rows

    a, b, rows = two_replicas(1_100, seed=8)
    a.add(rows)
    assert b.count() == len(rows)
    b.indexed.refresh()  # b looks now: no index yet, and it will not look again for half a minute
    a.compact()  # a builds it
    assert indexed_vector_rows(a) == len(rows)

    for step, store in enumerate(order):
        {"a": a, "b": b}[store].record_access({rows[0].id: 2**step})
    total = 2 ** len(order) - 1
    assert a.get(rows[0].id).access_count == total
    if order == "bbaa":
        time.sleep(RECHECK_SECONDS)
    assert b.get(rows[0].id).access_count == total


def test_a_create_that_loses_the_race_for_the_lease_table_opens_the_winners(tmp_path):
    """Two replicas creating the lease table at the same moment: Lance refuses the second commit
    ("Retryable commit conflict"); that replica opens the table the first one created."""
    import lancedb

    from spatial_memory.storage.writing.lease import LEASE_TABLE, open_lease_table

    db = lancedb.connect(str(tmp_path))
    winner = open_lease_table(db)

    class LosesTheRace:
        def list_tables(self):
            return type("Listed", (), {"tables": []})()

        def create_table(self, name, rows):
            raise RuntimeError(
                "lance error: Retryable commit conflict for version 2: preempted by concurrent transaction"
            )

        def open_table(self, name):
            return db.open_table(name)

    opened = open_lease_table(LosesTheRace())
    assert opened.name == LEASE_TABLE and opened.count_rows() == winner.count_rows() == 2

    class Broken(LosesTheRace):
        def create_table(self, name, rows):
            raise RuntimeError("lance error: out of disk")

    with pytest.raises(RuntimeError, match="out of disk"):
        open_lease_table(Broken())
