"""recall's, hybrid_recall's and nearby's whole results pinned: on a fixed store (the ranking pins'
conversation store, test_ranking_pins.py, with pinned memories, stored twice contents and metadata
added) the service gives exactly the results it gave before issue 45's speed-ups of the record and
ranking paths (tests/snapshots/recall_pins.json, written by the code before them): the same hits in the
same order, with the same similarities, scores, weak marks, session neighbours (context), expansion and
every field.

Cases cover the exact in-memory copy (as loaded, then with rows rewritten and added since) and
LanceDB's own searches (a tag filter). Regenerate only for an intended change of results:

    PYTHONPATH=. python tests/test_recall_pins.py --write
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from tests.test_ranking_pins import _Embedder, _memories, two_phases, write_pins

SNAPSHOT = Path(__file__).resolve().parent / "snapshots" / "recall_pins.json"
NOW = datetime(2024, 6, 1, 12, 0, tzinfo=timezone.utc)

RECALLS = [
    {"query": "What did Alice paint at the garden?", "limit": 10},
    {"query": "When did Bob go camping at the lake?", "limit": 10, "context": 2},
    {"query": "guitar concert in May 2023", "limit": 5, "context": 1},
    {"query": "Who supports the charity festival?", "limit": 10, "hybrid_alpha": 0.3},
    {"query": "pottery and cooking recipes", "limit": 10, "hybrid_alpha": 0.0},
    {"query": "pottery and cooking recipes", "limit": 10, "hybrid_alpha": 1.0, "context": 1},
    {"query": "Carol's marathon training", "limit": 20, "hybrid_alpha": 0.7},
    {"query": "museum photo book", "limit": 10, "namespace": "plain"},
    {"query": "What year did Alice and Bob adopt a dog?", "limit": 10, "namespace": "talk", "context": 2},
    {"query": "interview deadline meeting", "limit": 10, "min_similarity": 0.3},
    {"query": "sunset beach trip with family", "limit": 10, "tags": ["t1"]},
    {"query": "hiking mountain on 3 June, 2023", "limit": 10, "expand": 3},
    {"query": "xylophone", "limit": 10},
]
HYBRIDS = [
    {"query": "What did Alice paint at the garden?", "limit": 10},
    {"query": "When did Carol read the novel?", "limit": 8, "alpha": 0.4, "tags": ["t0", "t2"]},
    {"query": "pottery and cooking recipes", "limit": 10, "alpha": 0.0},
    {"query": "pottery and cooking recipes", "limit": 10, "alpha": 1.0},
    {"query": "Carol's marathon training", "limit": 15, "alpha": 0.7, "namespace": "talk"},
]
NEARBY = [1, 2, 17, 170, 201]


def _store_memories():
    """The ranking pins' memories, fixed in time, with a few pinned, two stored twice and metadata."""
    memories = []
    for i, m in enumerate(_memories()):
        m = replace(m, created_at=NOW, updated_at=NOW, last_accessed=NOW, importance=0.3 + (i % 5) / 10)
        if i in (5, 170):
            m = replace(m, pinned=True)
        if i % 7 == 0:
            m = replace(m, metadata={"n": i})
        memories.append(m)
    twice = [replace(memories[i], id=str(uuid.UUID(int=5000 + i))) for i in (3, 40, 181)]
    return memories + twice


def _compact(value: object) -> object:
    """The results with each memory's content as a short digest (the snapshot stays small; the hits'
    ids and every other field are there as they are)."""
    if isinstance(value, dict):
        return {
            k: hashlib.blake2b(v.encode(), digest_size=8).hexdigest() if k == "content" else _compact(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


def recall_output(path: Path) -> list[object]:
    """Per case, in order: recall's, hybrid_recall's and nearby's results as JSON."""
    from spatial_memory.config import Settings
    from spatial_memory.runtime.resources import Resources
    from spatial_memory.services.search import SearchService

    resources = Resources(Settings(path=path, preload=False), embedder=_Embedder(), clock=lambda: NOW)
    try:
        store = resources.store()
        memories = _store_memories()
        store.add(memories)
        service = SearchService(resources)
        out: list[object] = []
        for _ in two_phases(store, memories):
            for case in RECALLS:
                args = dict(case)
                out.append(service.recall(args.pop("query"), **args).model_dump(mode="json"))
            for case in HYBRIDS:
                args = dict(case)
                out.append(service.hybrid_recall(args.pop("query"), **args).model_dump(mode="json"))
            for i in NEARBY:
                out.append(service.nearby(str(uuid.UUID(int=i)), limit=8).model_dump(mode="json"))
        return [_compact(result) for result in out]
    finally:
        resources.upkeep.stop()


def test_recall_results_are_pinned(tmp_path):
    expected = json.loads(SNAPSHOT.read_text())
    got = json.loads(json.dumps(recall_output(tmp_path / "store")))
    cases = [*RECALLS, *HYBRIDS, *NEARBY]
    assert len(got) == len(expected) == 2 * len(cases)
    for case, result, pinned in zip(cases + cases, got, expected, strict=True):
        assert result == pinned, case


def test_rows_read_back_as_the_records_written():
    """rows_to_records (column-wise, timestamps from their integers) gives back every field as written,
    with pyarrow's own tzinfo, nulls included."""
    import numpy as np
    import pyarrow as pa

    from spatial_memory.records import Conversation, Provenance
    from spatial_memory.storage.table.schema import SUMMARY_COLUMNS, records_to_arrow, rows_to_records

    written = _store_memories()[150:170]
    written[0] = replace(written[0], expires_at=datetime(2031, 2, 3, 4, 5, 6, 789, tzinfo=timezone.utc))
    written[1] = replace(written[1], conversation=Conversation(occurred_at=datetime(1969, 7, 20, tzinfo=timezone.utc)))
    written[2] = replace(written[2], provenance=Provenance(via="remember", derived_from=("a",)), version=3)
    table = records_to_arrow(written, "test-hash-embedder", 64)
    for read in (rows_to_records(table.select(SUMMARY_COLUMNS)), rows_to_records(table)):
        assert len(read) == len(written)
        for got, want in zip(read, written, strict=True):
            stored = float(np.float32(want.importance))  # a float32 column
            assert replace(got, vector=None) == replace(want, vector=None, importance=stored)
    zone = pa.array([0], pa.timestamp("us", tz="UTC")).to_pylist()[0].tzinfo
    assert all(r.created_at.tzinfo is zone for r in rows_to_records(table))


if __name__ == "__main__":
    write_pins(recall_output, SNAPSHOT, "tests/test_recall_pins.py")
