"""Crashes: SIGKILL the server at random points during remember_batch, rename_namespace,
delete_namespace, background compaction, consolidate and import_memories, restart it, and check
that the store opens, every acknowledged write is there and nothing is half applied. Loops for
~60 s (SPATIAL_MEMORY_SOAK_SECONDS for longer)."""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from pathlib import Path

from .reliability import RawServer, budget, new_store, open_store

SCENARIOS = ("remember_batch", "rename_namespace", "delete_namespace", "compaction", "consolidate", "import_memories")
ENV = {
    "SPATIAL_MEMORY_COMPACT_FRAGMENT_THRESHOLD": "2",  # compaction after nearly every write
    "SPATIAL_MEMORY_ACCESS_FLUSH_SECONDS": "0.05",
    "SPATIAL_MEMORY_LOG_LEVEL": "WARNING",
}


class Model:
    """Every acknowledged memory: id -> (namespace, content)."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[str, str]] = {}

    def add(self, ids: list[str], namespace: str, contents: list[str]) -> None:
        self.rows.update({i: (namespace, c) for i, c in zip(ids, contents)})

    def in_namespace(self, namespace: str) -> list[str]:
        return [i for i, (ns, _) in self.rows.items() if ns == namespace]


def _snapshot(store: Path) -> dict[str, tuple[str, str]]:
    opened = open_store(store)  # must open cleanly after every kill
    rows = {r.id: (r.namespace, r.content) for r in opened.scan()}
    assert opened.count() == len(rows)
    return rows


class Round:
    """One server life: acknowledged setup, one operation in flight, a kill at a random moment."""

    def __init__(self, server: RawServer, model: Model, rng: random.Random, n: int) -> None:
        self.server, self.model, self.rng, self.n = server, model, rng, n

    def batch(self, namespace: str, contents: list[str], *, allow_duplicate: bool = False) -> list[str]:
        memories = [{"content": c, "namespace": namespace} for c in contents]
        ids = self.server.ok("remember_batch", {"memories": memories, "allow_duplicate": allow_duplicate})["ids"]
        self.model.add(ids, namespace, contents)
        return ids

    # Each returns (request id in flight, check(rows, acknowledged) -> outcome label).

    def remember_batch(self):
        count = self.rng.choice([1, 5, 50, 200, 600])
        prefix = f"batch {self.n} item"
        contents = [f"{prefix} {i}" for i in range(count)]
        request = self.server.call_id(
            "remember_batch", {"memories": [{"content": c, "namespace": "batches"} for c in contents]}
        )

        def check(rows, acked):
            landed = {i: v for i, v in rows.items() if v[1].startswith(prefix + " ")}
            assert len(landed) in (0, count), f"remember_batch of {count} half applied: {len(landed)} rows"
            assert not acked or len(landed) == count, "acknowledged batch lost"
            self.model.rows.update(landed)
            return "applied" if landed else "absent"

        return request, check

    def rename_namespace(self):
        current = sorted({ns for ns, _ in self.model.rows.values() if ns.startswith("ren-")})
        old = current[0] if current else None
        if old is None or not self.model.in_namespace(old):
            old = f"ren-{self.n}-0"
            self.batch(old, [f"rename subject {self.n} {i}" for i in range(self.rng.randint(20, 300))])
        members = set(self.model.in_namespace(old))
        new = f"ren-{self.n}-{self.rng.randint(1, 10**6)}"
        request = self.server.call_id("rename_namespace", {"old_namespace": old, "new_namespace": new})

        def check(rows, acked):
            moved = {i for i in members if rows.get(i, ("",))[0] == new}
            stayed = {i for i in members if rows.get(i, ("",))[0] == old}
            assert moved | stayed == members, "memories lost by an interrupted rename"
            assert not moved or not stayed, f"rename half applied: {len(moved)} moved, {len(stayed)} not"
            assert not acked or moved == members, "acknowledged rename lost"
            for i in members:
                self.model.rows[i] = (new if moved else old, self.model.rows[i][1])
            return "applied" if moved else "absent"

        return request, check

    def delete_namespace(self):
        namespace = f"del-{self.n}"
        members = set(self.batch(namespace, [f"doomed {self.n} {i}" for i in range(self.rng.randint(10, 300))]))
        request = self.server.call_id("delete_namespace", {"namespace": namespace, "confirm": True, "dry_run": False})

        def check(rows, acked):
            left = members & set(rows)
            assert len(left) in (0, len(members)), f"delete_namespace half applied: {len(left)} of {len(members)} left"
            assert not acked or not left, "acknowledged delete lost"
            if not left:
                for i in members:
                    del self.model.rows[i]
            return "applied" if not left else "absent"

        return request, check

    def compaction(self):
        # Writes past the fragment threshold; the upkeep thread compacts (and cleans up) right after.
        for i in range(3):
            self.batch("compaction", [f"fragment {self.n} {i} {j}" for j in range(self.rng.randint(1, 40))])
        request = self.server.call_id("stats", {})

        def check(rows, acked):
            return "survived"

        return request, check

    def consolidate(self):
        namespace = f"dup-{self.n}"
        groups = self.rng.randint(2, 12)
        contents = [f"duplicate fact {self.n} number {g} alpha beta" for g in range(groups) for _ in range(3)]
        members = set(self.batch(namespace, contents, allow_duplicate=True))  # copies for consolidate
        request = self.server.call_id(
            "consolidate",
            {"namespace": namespace, "dry_run": False, "similarity_threshold": 0.95, "strategy": "keep_newest"},
        )

        def check(rows, acked):
            left = {i: rows[i] for i in rows if rows[i][0] == namespace}
            assert len(left) in (len(members), groups), f"consolidate half applied: {len(left)} rows"
            assert not acked or len(left) == groups, "acknowledged consolidate lost"
            assert {c for _, c in left.values()} == set(contents), "consolidate lost a fact"
            for i in members:
                self.model.rows.pop(i, None)
            self.model.rows.update(left)
            return "applied" if len(left) == groups else "absent"

        return request, check

    def import_memories(self):
        source = f"exp-{self.n}"
        count = self.rng.randint(10, 300)
        contents = [f"exported {self.n} {i}" for i in range(count)]
        self.batch(source, contents)
        self.server.ok("export_memories", {"output_path": f"round-{self.n}.json", "namespace": source})
        self.server.ok("delete_namespace", {"namespace": source, "confirm": True, "dry_run": False})
        for i in self.model.in_namespace(source):
            del self.model.rows[i]
        target = f"imp-{self.n}"
        request = self.server.call_id(
            "import_memories", {"source_path": f"round-{self.n}.json", "namespace_override": target, "dry_run": False}
        )

        def check(rows, acked):
            landed = {i: v for i, v in rows.items() if v[0] == target}
            assert len(landed) in (0, count), f"import half applied: {len(landed)} of {count}"
            assert not acked or len(landed) == count, "acknowledged import lost"
            assert not landed or {c for _, c in landed.values()} == set(contents)
            self.model.rows.update(landed)
            return "applied" if landed else "absent"

        return request, check


def test_sigkill_at_random_points_loses_nothing(tmp_path):
    seed = int(os.environ.get("SPATIAL_MEMORY_CRASH_SEED", random.randrange(10**6)))
    rng = random.Random(seed)
    store = new_store(tmp_path, "store")
    model = Model()
    duration: dict[str, float] = {}  # how long each operation takes when not killed
    kills: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    deadline = time.monotonic() + budget(20)
    rounds = 0
    while time.monotonic() < deadline or rounds < len(SCENARIOS):
        rounds += 1
        with RawServer(store, **ENV) as server:
            server.initialize()
            scenario = SCENARIOS[(rounds - 1) % len(SCENARIOS)] if rounds <= len(SCENARIOS) else rng.choice(SCENARIOS)
            play = Round(server, model, rng, rounds)
            request, check = getattr(play, scenario)()
            started = time.monotonic()
            if scenario not in duration:  # first time: time it to completion, then kill the idle server
                answer = server.wait(request)
                # Every scenario's tool exists and works: a missing one fails here, not skipped.
                assert "error" not in answer and not answer["result"].get("isError"), (scenario, answer)
                duration[scenario] = time.monotonic() - started
                server._responses[request] = {}
            else:  # kill anywhere from early in the operation to just after its answer
                time.sleep(duration[scenario] * rng.uniform(0.2, 1.1))
            server.kill()
            acked = request in server._responses
            assert not server.stray_stdout, server.stray_stdout[:3]
        kills[scenario] += 1
        rows = _snapshot(store)
        outcomes[f"{scenario}: {check(rows, acked)}{' (acknowledged)' if acked else ''}"] += 1
        assert rows == model.rows, (
            f"round {rounds} ({scenario}, seed {seed}): {len(set(model.rows) - set(rows))} acknowledged rows lost, "
            f"{len(set(rows) - set(model.rows))} unexplained rows"
        )
    # A last clean start: the store serves and writes normally.
    with RawServer(store, **ENV) as server:
        server.initialize()
        assert server.ok("stats", {})["total_memories"] == len(model.rows)
        server.ok("remember", {"content": "after all the crashes"})
        assert server.close() == 0
    print(f"\n{sum(kills.values())} SIGKILLs survived (seed {seed}), {len(model.rows)} memories intact: {dict(kills)}")
    for label, n in sorted(outcomes.items()):
        print(f"  {label}: {n}")
    assert set(kills) == set(SCENARIOS)


COMPACTOR = r"""
import json, os, sys, uuid
import numpy as np
from pathlib import Path
from spatial_memory.records import MemoryRecord, utc_now
from spatial_memory.storage.store import MemoryStore

store = MemoryStore(Path(sys.argv[1]), "m", 8, compact_fragment_threshold=2, version_retention_seconds=0)
log = open(sys.argv[2], "a")
rng = np.random.default_rng()
while True:
    now, n = utc_now(), int(rng.integers(1, 60))
    vectors = rng.random((n, 8), dtype=np.float32)
    batch = [MemoryRecord(id=str(uuid.uuid4()), content="c", namespace="n", tags=[], importance=0.5,
                          source="manual", metadata={}, created_at=now, updated_at=now, last_accessed=now,
                          access_count=0, vector=v / np.linalg.norm(v)) for v in vectors]
    store.add(batch)
    log.write(json.dumps([r.id for r in batch]) + "\n")  # logged only once committed
    log.flush()
    if rng.random() < 0.3 and store.count():
        victim = store.nth(int(rng.integers(0, store.count()))).id
        # Named before the delete: a kill between its commit and the log line below must not
        # count as a lost row.
        log.write(json.dumps({"forgetting": victim}) + "\n")
        log.flush()
        gone = store.delete_ids([victim])
        log.write(json.dumps({"forgot": gone}) + "\n")
        log.flush()
    store.compact()  # compaction and cleanup of superseded versions, over and over
"""


def test_sigkill_during_compaction_and_cleanup(tmp_path):
    """The store itself, compacting (and cleaning up versions) after every write, killed at
    random moments: most kills land inside optimize() or the version cleanup."""
    import json
    import subprocess
    import sys

    from spatial_memory.storage.store import MemoryStore

    from .reliability import REPO

    db, log = tmp_path / "db", tmp_path / "acked.jsonl"
    rng = random.Random()
    kills, deadline = 0, time.monotonic() + budget(10)
    while time.monotonic() < deadline or kills < 5:
        proc = subprocess.Popen(
            [sys.executable, "-c", COMPACTOR, str(db), str(log)],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stderr=subprocess.PIPE,
        )
        # Kill only once this run has acknowledged a write (start-up imports LanceDB, 2-3 s on a
        # busy host), at a random moment of the write/compact cycles that follow.
        size = log.stat().st_size if log.exists() else 0
        started = time.monotonic()
        while (log.stat().st_size if log.exists() else 0) == size and time.monotonic() - started < 60:
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 1.0))
        proc.kill()
        _, stderr = proc.communicate(timeout=30)
        assert b"Traceback" not in stderr, stderr.decode(errors="replace")[-2000:]
        kills += 1
        batches, forgotten, maybe_forgotten = [], set(), set()
        for line in (log.read_text() if log.exists() else "").splitlines():
            entry = json.loads(line)
            if isinstance(entry, list):
                batches.append(entry)
            elif "forgot" in entry:
                forgotten.update(entry["forgot"])
            else:
                maybe_forgotten.add(entry["forgetting"])
        store = MemoryStore(db, "m", 8)  # opens cleanly
        present = {r.id for r in store.scan()}
        assert store.count() == len(present)
        for batch in batches:
            kept = set(batch) - forgotten - maybe_forgotten
            assert kept <= present, f"kill {kills}: {len(kept - present)} acknowledged rows lost"
        assert not forgotten & present, "a forgotten row came back"
    assert batches, "no write was ever acknowledged: the kills proved nothing"
    print(
        f"\n{kills} SIGKILLs during write/compact/cleanup cycles: {len(batches)} acknowledged batches, "
        f"{len(forgotten)} forgets, {len(present)} rows intact"
    )


def _ledger_entries(store: Path) -> int:
    """Access-ledger entries on disk (the store's internal ledger: see the test below)."""
    return len(open_store(store).ledger.entries(exact=True))


def test_sigkill_during_access_bookkeeping_on_an_indexed_store(tmp_path):
    """On a table with its vector index, recall's access counts live in the access ledger and
    are folded into the rows when a filter reads them. Kills during recalls, the ledger writes
    that follow, exports (which flush first) and folds: the store opens, no memory is lost or
    changed, and no count ever goes down (a fold is written before the ledger is cleared, with
    absolute values, so a kill between the two counts nothing twice and loses nothing)."""
    import numpy as np

    from spatial_memory.records import MemoryRecord, new_id
    from spatial_memory.storage.search.indexing import IndexPolicy
    from spatial_memory.storage.store import MemoryStore
    from tests.conftest import indexed_vector_rows
    from tests.hash_embedder import HashEmbedder

    from .reliability import FAKE_DIM, FAKE_MODEL_ID

    seed = int(os.environ.get("SPATIAL_MEMORY_CRASH_SEED", random.randrange(10**6)))
    rng = random.Random(seed)
    store = new_store(tmp_path, "store")
    embedder = HashEmbedder(FAKE_DIM)
    contents = [f"note {i} about subject{i % 11} and item{i % 97}" for i in range(1_200)]
    direct = MemoryStore(
        store / "lancedb", FAKE_MODEL_ID, FAKE_DIM, index_policy=IndexPolicy(1_000, scalar_index_threshold=1_000)
    )
    vectors = embedder.embed_documents(contents)
    direct.add([MemoryRecord(id=new_id(), content=c, vector=np.asarray(v)) for c, v in zip(contents, vectors)])
    direct.compact()
    assert indexed_vector_rows(direct) == len(contents)
    original = {r.id: r.content for r in direct.scan()}
    del direct
    env = {**ENV, "SPATIAL_MEMORY_VECTOR_INDEX_THRESHOLD": "1000", "SPATIAL_MEMORY_COMPACT_FRAGMENT_THRESHOLD": "24"}
    counts: dict[str, int] = {}
    ledger_seen = in_rows = 0
    outcomes: Counter[str] = Counter()
    deadline = time.monotonic() + budget(10)
    give_up = deadline + 300
    rounds = 0
    # Random rounds for the CI bound (at least 6); then, should they have missed one of the two
    # paths (slow machines move the ledger write past the kill window), rounds that wait for it.
    while time.monotonic() < deadline or rounds < 6 or not (ledger_seen and in_rows):
        assert time.monotonic() < give_up, f"paths never exercised: {ledger_seen=} {in_rows=} {dict(outcomes)}"
        catch_up = rounds >= 6 and time.monotonic() >= deadline
        rounds += 1
        with RawServer(store, **env) as server:
            server.initialize()
            for _ in range(rng.randint(3, 12)):
                server.ok("recall", {"query": f"subject{rng.randrange(11)} item{rng.randrange(97)}", "limit": 10})
            if catch_up:
                last = "fold" if ledger_seen else "recall"
            else:
                last = rng.choice(["recall", "export", "fold"])
            if last == "export":
                request = server.call_id("export_memories", {"output_path": f"round-{rounds}.json"})
            elif last == "fold":  # a filter on access_count folds the ledger into the rows first
                request = server.call_id("recall", {"query": "note", "filters": {"access_count": {"gte": 1}}})
            else:
                request = server.call_id("recall", {"query": f"subject{rng.randrange(11)}", "limit": 10})
            if catch_up and last == "fold":  # the fold lands before this kill
                server._responses[request] = server.wait(request)
            elif catch_up:  # the background ledger write lands before this kill
                waiting_until = time.monotonic() + 60
                while not _ledger_entries(store):
                    assert time.monotonic() < waiting_until, "no access ledger written 60 s after recalls"
                    time.sleep(0.05)
            else:
                # Half the kills land inside the call, half around the background ledger write
                # that follows a pause of 0.25 s after the last call.
                time.sleep(rng.uniform(0.0, 0.05) if rng.random() < 0.5 else rng.uniform(0.2, 0.5))
            server.kill()
            outcomes[f"{last}{' (answered)' if request in server._responses else ''}"] += 1
        opened = open_store(store)
        records = opened.scan()
        assert {r.id: r.content for r in records} == original, f"round {rounds}, seed {seed}: memories changed"
        now = {r.id: r.access_count for r in records}
        dropped = {i: (counts[i], now[i]) for i in counts if now[i] < counts[i]}
        assert not dropped, f"round {rounds}, seed {seed}: counts went down {list(dropped.items())[:3]}"
        counts = now
        # Where the counts sit is this test's subject, and nothing public tells the ledger's
        # entries from the rows' own values (reads merge the two): so look at each directly.
        ledger_seen = max(ledger_seen, _ledger_entries(store))
        in_rows = max(in_rows, sum(opened.table.handle.to_arrow().column("access_count").to_pylist()))
        del opened
    # Both paths were exercised: counts sat in the ledger, and folds wrote counts into rows.
    assert ledger_seen > 0 and in_rows > 0, (ledger_seen, in_rows, outcomes)
    with RawServer(store, **env) as server:
        server.initialize()
        assert server.ok("stats", {})["total_memories"] == len(original)
        assert server.ok("recall", {"query": "subject3", "filters": {"access_count": {"gte": 1}}})["memories"]
    print(f"seed {seed}: {rounds} kills {dict(outcomes)}, {sum(counts.values())} accesses counted")
