"""Recall's ranking pinned: `SearchService.ranked` on a fixed store gives exactly the hits, order and
scores it gave before its speed-ups (tests/snapshots/ranking_pins.json, written by the code before them).

The store mixes conversation structure (sessions, sequences, speakers, dates, questions, time words) and
plain memories, and the cases cover the exact in-memory copy (as loaded, then with rows written since)
and LanceDB's own searches (a tag filter), every alpha, namespaces and min_similarity. Regenerate only for an intended ranking change
(last: 45, English stop words only in both keyword indexes, so "dog" or "cat" count as words):

    PYTHONPATH=. python tests/test_ranking_pins.py --write
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import uuid
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

SNAPSHOT = Path(__file__).resolve().parent / "snapshots" / "ranking_pins.json"
DIM = 64

_WORDS = (
    "garden painting hiking camping adoption school music guitar concert beach sunset dog cat pottery "
    "marathon library museum bakery cooking recipe family sister brother mentor support group charity "
    "festival trip lake mountain photo book novel poetry career interview project deadline meeting"
).split()
_TIME = ("yesterday", "last week", "in May", "next summer", "on Friday", "a few days ago", "since 2020")
_SPEAKERS = ("Alice", "Bob", "Carol")
CASES = [
    {"query": "What did Alice paint at the garden?", "limit": 10},
    {"query": "When did Bob go camping at the lake?", "limit": 10},
    {"query": "guitar concert in May 2023", "limit": 5},
    {"query": "Who supports the charity festival?", "limit": 10, "alpha": 0.3},
    {"query": "pottery and cooking recipes", "limit": 10, "alpha": 0.0},
    {"query": "pottery and cooking recipes", "limit": 10, "alpha": 1.0},
    {"query": "Carol's marathon training", "limit": 20, "alpha": 0.7},
    {"query": "museum photo book", "limit": 10, "namespace": "plain"},
    {"query": "What year did Alice and Bob adopt a dog?", "limit": 10, "namespace": "talk"},
    {"query": "interview deadline meeting", "limit": 10, "min_similarity": 0.3},
    {"query": "sunset beach trip with family", "limit": 10, "tags": ["t1"]},
    {"query": "When did Carol read the novel?", "limit": 8, "tags": ["t0", "t2"], "alpha": 0.4},
    {"query": "hiking mountain on 3 June, 2023", "limit": 10},
    {"query": "xylophone", "limit": 10},
]


def _embed(text: str) -> np.ndarray:
    """A deterministic bag-of-words hashing embedding (the tests' HashEmbedder, unit norm)."""
    vec = np.zeros(DIM, dtype=np.float32)
    for word in re.findall(r"\w+", text.lower()) or [text]:
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        vec[int.from_bytes(digest[:4], "little") % DIM] += 1.0
        vec[int.from_bytes(digest[4:], "little") % DIM] += 0.5
    norm = np.linalg.norm(vec)
    return vec / norm if norm else np.full(DIM, 1 / np.sqrt(DIM), np.float32)


class _Embedder:
    model_id = "test-hash-embedder"
    dimension = DIM
    loaded = True

    def load(self) -> None:
        pass

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.stack([_embed(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return _embed(text)


def _memories():
    from spatial_memory.records import Conversation, MemoryRecord

    rng = np.random.default_rng(16)
    start = datetime(2023, 3, 1, tzinfo=timezone.utc)
    records = []
    for i in range(240):
        words = " ".join(rng.choice(_WORDS, size=int(rng.integers(3, 40))))
        structured = i < 160
        speaker = _SPEAKERS[i % 3] if structured else None
        text = f"{speaker or 'I'} talked about {words}"
        if rng.random() < 0.2:
            text += " " + _TIME[int(rng.integers(len(_TIME)))]
        if rng.random() < 0.15:
            text += "?"
        conversation = Conversation()
        if structured:
            conversation = Conversation(
                session_id=f"s{i // 20}",
                sequence=i % 20,
                speaker=speaker,
                occurred_at=start + timedelta(days=9 * (i // 20), minutes=i % 20),
            )
        records.append(
            MemoryRecord(
                id=str(uuid.UUID(int=i + 1)),
                content=text,
                namespace="talk" if structured else "plain",
                tags=[f"t{i % 3}"],
                conversation=conversation,
                vector=_embed(text),
            )
        )
    return records


def two_phases(store, memories):
    """Yields twice: on the store as written, then with rows written since the exact copy was loaded
    (rewritten ones and new ones)."""
    yield
    store.upsert(memories[::2])
    store.add([replace(m, id=str(uuid.UUID(int=1000 + i))) for i, m in enumerate(memories[:30])])
    yield


def ranking_output(path: Path) -> list[list[list[object]]]:
    """Per case: [id, score, similarity, vector_score, fts_score] of each hit, best first."""
    from spatial_memory.config import Settings
    from spatial_memory.runtime.resources import Resources
    from spatial_memory.services.search import SearchService

    resources = Resources(Settings(path=path, preload=False), embedder=_Embedder())
    try:
        store = resources.store()
        memories = _memories()
        store.add(memories)
        service = SearchService(resources)
        out = []
        for _ in two_phases(store, memories):
            for case in CASES:
                args = dict(case)
                query = args.pop("query")
                hits = service.ranked(query, **args)
                out.append([[h.record.id, h.score, h.similarity, h.vector_score, h.fts_score] for h in hits])
        return out
    finally:
        resources.upkeep.stop()


def test_ranking_output_is_pinned(tmp_path):
    expected = json.loads(SNAPSHOT.read_text())
    got = ranking_output(tmp_path / "store")
    assert len(got) == len(expected) == 2 * len(CASES)
    for case, hits, pinned in zip(CASES + CASES, got, expected, strict=True):
        assert [h[0] for h in hits] == [p[0] for p in pinned], case
        for hit, pin in zip(hits, pinned, strict=True):
            assert hit[1:] == pin[1:], (case, hit, pin)


def write_pins(output, snapshot: Path, script: str) -> None:
    """A pins test's --write: `output` on a fresh store, written to `snapshot`."""
    import tempfile

    if "--write" not in sys.argv:
        sys.exit(f"usage: PYTHONPATH=. python {script} --write")
    with tempfile.TemporaryDirectory() as tmp:
        result = output(Path(tmp) / "store")
    snapshot.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {snapshot}: {len(result)} cases")


if __name__ == "__main__":
    write_pins(ranking_output, SNAPSHOT, "tests/test_ranking_pins.py")
