"""hybrid_recall (and recall's hybrid_alpha): LanceDB native full-text index + vector search,
fused by algorithms/ranking.py (alpha x scaled similarity + (1 - alpha) x scaled keyword score).
Through a real MCP client session unless the store itself is the subject."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import numpy as np
import pytest

from spatial_memory.config import Settings
from spatial_memory.records import MemoryRecord, new_id
from spatial_memory.storage.search.fulltext import MAX_QUERY_TERMS, match_text
from spatial_memory.storage.store import MemoryStore

from .conftest import data
from .hash_embedder import HashEmbedder
from .test_protocol_core import assert_error, remember

pytestmark = pytest.mark.anyio

NASTY_QUERIES = [
    'fox AND "dogs"',
    "fox OR dogs NOT cats",
    '"unbalanced quote',
    "fox*",
    "fo~2",
    "content:fox",
    "+fox -dogs",
    "(fox",
    "fox)",
    "[fox TO dogs]",
    "fox^3",
    "a && b || !c",
    "'; DROP TABLE memories; --",
    "x' OR '1'='1",
    "\\",
    "%_%",
    "{}",
    "/fox/",
    "🎉🚀",
    "東京",
    "Привет мир",
    "naïve café",
    "C++ C# F#",
    "NOT",
    "AND OR NOT",
    "   ",
    ":",
    "***",
    "fox\x00dogs",
    "é" * 500,
    " ".join(f"w{i}" for i in range(500)),
]


async def _ids(client, tool: str, args: dict) -> list[str]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, data(result)
    return [m["id"] for m in data(result)["memories"]]


# ---- the keyword side: native index, kept current --------------------------------------------


def _record(content: str, dim: int = 8, **kw) -> MemoryRecord:
    rng = np.random.default_rng(abs(hash(content)) % 2**32)
    vec = rng.normal(size=dim).astype(np.float32)
    return MemoryRecord(id=new_id(), content=content, vector=vec / np.linalg.norm(vec), **kw)


def test_new_store_has_native_fts_index_and_keeps_it_current(tmp_path):
    store = MemoryStore(tmp_path / "db", "unit-model", 8, compact_fragment_threshold=5)
    indices = store.stats()["indices"]
    assert [(i["column"], i["index_type"]) for i in indices] == [("content", "FTS")]
    # The tokenizer shows the index is LanceDB's native one, not tantivy; stats() does not report
    # it, so this one check reads the index's details off the store's table.
    assert store.table.handle.list_indices()[0].index_details["base_tokenizer"] == "icu/split"
    fox, dog = _record("The quick brown fox"), _record("A lazy dog sleeps")
    store.add([fox])
    store.add([dog])
    # Found a moment after being added, before any compaction (LanceDB scans unindexed rows).
    assert [r.id for r, _ in store.fts_search("fox", 10)] == [fox.id]
    stats = store.stats()
    assert stats["num_rows"] == 2 and stats["indices"][0]["num_indexed_rows"] == 0  # both rows unindexed
    assert stats["indices"][0]["status"] == "needs_update"
    store.compact()
    stats = store.stats()
    assert stats["indices"][0]["num_indexed_rows"] == 2 and stats["indices"][0]["status"] == "ready"
    assert [r.id for r, _ in store.fts_search("foxes", 10)] == [fox.id]  # stemmed
    # Changed and deleted rows are reflected at once, and after compaction.
    store.upsert([MemoryRecord(**{**fox.__dict__, "content": "A red panda"})])
    assert store.fts_search("fox", 10) == []
    assert [r.id for r, _ in store.fts_search("panda", 10)] == [fox.id]
    store.delete_ids([dog.id])
    assert store.fts_search("dog", 10) == []
    store.compact()
    assert store.fts_search("fox", 10) == [] and store.fts_search("dog", 10) == []
    assert [r.id for r, _ in store.fts_search("panda", 10)] == [fox.id]
    fresh = _record("zebra crossing")
    store.add([fresh])
    assert [r.id for r, _ in store.fts_search("zebra", 10)] == [fresh.id]


def test_index_created_when_opening_a_store_without_one(tmp_path):
    import lancedb

    from spatial_memory.storage.table.schema import TABLE_NAME, memory_schema

    db = lancedb.connect(str(tmp_path / "db"))
    db.create_table(TABLE_NAME, schema=memory_schema("unit-model", 8))
    assert db.open_table(TABLE_NAME).list_indices() == []
    store = MemoryStore(tmp_path / "db", "unit-model", 8)
    assert store.fulltext.has_index()


def test_bulk_insert_asks_for_compaction(tmp_path):
    store = MemoryStore(tmp_path / "db", "unit-model", 8, compact_fragment_threshold=50)
    store.add([_record(f"note {i}") for i in range(10)])
    assert not store.needs_compaction()
    store.add([_record(f"bulk {i}") for i in range(1000)])
    assert store.needs_compaction()  # so upkeep folds the rows into the full-text index soon


def test_access_counts_rewriting_rows_out_of_the_full_text_index_ask_for_compaction(tmp_path, monkeypatch):
    """Below the vector index, recall's access counts rewrite rows, which leave the full-text index
    (every keyword search then scans them): past FTS_UNINDEXED_MAX such rows, once keyword searches
    run, upkeep compacts without waiting for the fragment threshold or a pause in the writes."""
    from spatial_memory.storage.filters import build_filter
    from spatial_memory.storage.table import maintenance

    store = MemoryStore(tmp_path / "db", "unit-model", 8, compact_fragment_threshold=50)
    records = [_record(f"note {i}") for i in range(20)]
    store.add(records)
    store.compact()
    assert store.fulltext.unindexed_rows() == 0 and not store.needs_compaction()
    monkeypatch.setattr(maintenance, "FTS_UNINDEXED_MAX", 5)
    store.record_access({r.id: 1 for r in records[:10]})
    # Nobody searched by keywords yet (a bulk import): no compaction beside the writes; nor after a
    # search the in-memory keyword index answers, which reads no LanceDB index.
    assert store.fulltext.unindexed_rows() == 10 and not store.needs_compaction()
    assert store.fts_search("note", 5)
    assert not store.needs_compaction()
    store.fts_search("note", 5, build_filter(tags=["none"]))  # a filter only LanceDB applies
    assert store.needs_compaction()
    store.compact()
    assert store.fulltext.unindexed_rows() == 0 and not store.needs_compaction()
    assert {r.id for r, _ in store.fts_search("note", 50)} == {r.id for r in records}


def test_a_store_opened_with_rows_outside_the_full_text_index_compacts_at_once(settings, fake_embedder, monkeypatch):
    """A server that stopped after a burst of access counts left rows outside the full-text index:
    the next one to open the store asks upkeep to compact right away, before any keyword search
    (which would otherwise scan those rows in every recall until a pause between calls)."""
    from spatial_memory.runtime.resources import Resources
    from spatial_memory.storage.table import maintenance

    monkeypatch.setattr(maintenance, "FTS_UNINDEXED_MAX", 5)
    first = MemoryStore(settings.db_path, fake_embedder.model_id, fake_embedder.dimension)
    records = [_record(f"note {i}", dim=fake_embedder.dimension) for i in range(20)]
    first.add(records)
    first.compact()
    first.record_access({r.id: 1 for r in records[:10]})
    del first
    resources = Resources(settings, fake_embedder)
    store = resources.store()
    assert store.fts_lags() and resources.upkeep._poked
    resources.upkeep.run_once()
    assert store.fulltext.unindexed_rows() == 0 and not store.fts_lags()


def test_a_recall_after_a_burst_of_writes_wakes_upkeep_to_compact(settings, fake_embedder, monkeypatch):
    """Rows written since the last compaction are outside the full-text index: the first recall
    after a burst of writes whose keyword search LanceDB answers (a filter the in-memory keyword
    index cannot apply) wakes upkeep to compact, without waiting for a pause between calls (a
    client recalling back to back would otherwise scan them in every keyword search). A recall the
    in-memory index answers reads no LanceDB index and wakes nobody."""
    from spatial_memory.records import NewMemory
    from spatial_memory.runtime.resources import Resources
    from spatial_memory.server.app import App
    from spatial_memory.storage.table import maintenance

    monkeypatch.setattr(maintenance, "FTS_UNINDEXED_MAX", 5)
    resources = Resources(settings, fake_embedder)
    app = App(resources)
    app.memory.remember_batch([NewMemory(content=f"note about topic {i}") for i in range(8)])
    store = resources.store()
    resources.upkeep.run_once()  # a pass right after the writes: nobody searched, no compaction
    assert store.fulltext.unindexed_rows() == 8 and not store.fts_may_lag()
    resources.upkeep._poked = False
    assert app.search.recall("topic", limit=3).memories
    assert not store.fts_may_lag() and not resources.upkeep._poked
    app.search.recall("topic", limit=3, tags=["none"])
    assert store.fts_may_lag() and resources.upkeep._poked
    resources.upkeep.run_once()
    assert store.fulltext.unindexed_rows() == 0 and not store.fts_may_lag()


@pytest.mark.parametrize("query", NASTY_QUERIES)
def test_match_text_is_plain_words(query):
    terms = match_text(query)
    assert not any(ch in terms for ch in "\"'()[]{}:*~^+-!&|\\/%\x00")
    assert len(terms.split()) <= MAX_QUERY_TERMS


def test_match_text_examples():
    assert match_text('fox AND "dogs"') == "fox AND dogs"
    assert match_text("C++ (x) ~y* a:b -c +d") == "C x y a b c d"
    assert match_text("🎉") == "" and match_text("  ") == ""
    assert match_text("東京は日本") == "東京は日本" and match_text("नमस्ते दुनिया") == "नमस्ते दुनिया"


# ---- hybrid_recall through MCP -------------------------------------------------------------------


async def _write_corpus(client) -> dict[str, str]:
    texts = {
        "fox": "The quick brown fox jumps over the lazy dog",
        "pg": "PostgreSQL connection pool sizing for the billing service",
        "err": "Deploy failed with error code E1234 in module foo_bar",
        "jp": "東京は日本の首都です",
        "ru": "Привет, мир! Москва — столица России.",
        "cafe": "Café au lait in Zürich, naïve résumé",
        "emoji": "Emoji party 🎉 tonight",
        "cat": "The office cat is called Miso",
    }
    ids = {}
    for key, text in texts.items():
        ns = "home" if key == "cat" else "work"
        ids[key] = (await remember(client, text, namespace=ns, tags=[key], metadata={"key": key}))["id"]
    return ids


@pytest.fixture
async def corpus(client):
    return await _write_corpus(client)


@pytest.fixture(scope="module")
async def searched(tmp_path_factory):
    """One server holding the corpus, shared by the tests that only search it: the corpus is
    written once, not once per query. (client, {key: id})"""
    from mcp import Client

    from spatial_memory.server.app import create_server

    settings = Settings(path=tmp_path_factory.mktemp("hybrid") / "store", preload=False, access_flush_seconds=0.05)
    async with Client(create_server(settings, embedder=HashEmbedder())) as client:
        yield client, await _write_corpus(client)


@pytest.mark.parametrize("query", NASTY_QUERIES)
async def test_nasty_queries_never_break_the_keyword_side(searched, query):
    client, corpus = searched
    for alpha in (0.0, 0.5):
        result = await client.call_tool("hybrid_recall", {"query": query, "alpha": alpha, "limit": 10})
        if not query.strip():
            assert_error(result, "ValidationError", "empty")
            continue
        assert not result.is_error, (query, data(result))
        body = data(result)
        assert body["total"] == len(body["memories"])
        if alpha == 0.0 and not match_text(query):
            assert body["total"] == 0  # nothing left to match by keyword: no keyword hits


async def test_keyword_matches_in_any_script(searched):
    client, corpus = searched
    for query, key in [
        ("E1234", "err"),
        ("foo_bar", "err"),
        ("東京", "jp"),
        ("首都", "jp"),
        ("москва", "ru"),
        ("cafe", "cafe"),
        ("Zurich", "cafe"),
        ("postgresql", "pg"),
        ('"error" AND (code)', "err"),
    ]:
        ids = await _ids(client, "hybrid_recall", {"query": query, "alpha": 0.0})
        assert ids and ids[0] == corpus[key], query


async def test_hybrid_scores_and_search_types(searched):
    client, corpus = searched
    body = data(await client.call_tool("hybrid_recall", {"query": "error code E1234", "limit": 8}))
    assert body["search_type"] == "hybrid" and body["alpha"] == 0.5 and body["query"] == "error code E1234"
    top = body["memories"][0]
    assert top["id"] == corpus["err"] and top["fts_score"] == 1.0 and top["vector_score"] is not None
    assert {"id", "content", "similarity", "namespace", "tags", "importance", "created_at", "metadata"} <= set(top)
    scores = [m["score"] for m in body["memories"]]
    assert scores == sorted(scores, reverse=True)
    for m in body["memories"]:
        assert 0.0 <= m["similarity"] <= 1.0
        assert m["fts_score"] is None or 0.0 < m["fts_score"] <= 1.0
        if m["vector_score"] is not None:
            assert m["vector_score"] == m["similarity"]

    keyword = data(await client.call_tool("hybrid_recall", {"query": "error code E1234", "alpha": 0.0}))
    assert keyword["search_type"] == "keyword" and keyword["total"] == 1
    hit = keyword["memories"][0]
    assert hit["vector_score"] is None and hit["fts_score"] == 1.0
    # similarity is the cosine similarity to the query even for keyword-only hits.
    by_vector = data(await client.call_tool("recall", {"query": "error code E1234", "limit": 10}))
    cosine = {m["id"]: m["similarity"] for m in by_vector["memories"]}
    assert hit["similarity"] == pytest.approx(cosine[hit["id"]], abs=1e-5)

    vector = data(await client.call_tool("hybrid_recall", {"query": "error code E1234", "alpha": 1.0, "limit": 10}))
    assert vector["search_type"] == "vector"
    assert all(m["fts_score"] is None for m in vector["memories"])
    assert [m["id"] for m in vector["memories"]] == [m["id"] for m in by_vector["memories"]]


async def test_min_similarity_applies_to_keyword_only_hits(searched):
    client, corpus = searched
    body = data(await client.call_tool("hybrid_recall", {"query": "fox", "alpha": 0.0}))
    assert body["total"] == 1
    sim = body["memories"][0]["similarity"]
    above = data(await client.call_tool("hybrid_recall", {"query": "fox", "alpha": 0.0, "min_similarity": sim + 0.01}))
    assert above["total"] == 0
    mixed = data(await client.call_tool("hybrid_recall", {"query": "fox", "min_similarity": 0.3, "limit": 10}))
    assert all(m["similarity"] >= 0.3 for m in mixed["memories"])


async def test_hybrid_filters(searched):
    client, corpus = searched
    assert await _ids(client, "hybrid_recall", {"query": "cat Miso", "namespace": "work", "limit": 10}) != []
    assert corpus["cat"] not in await _ids(client, "hybrid_recall", {"query": "cat Miso", "namespace": "work"})
    assert await _ids(client, "hybrid_recall", {"query": "cat Miso", "namespace": "home"}) == [corpus["cat"]]
    assert await _ids(client, "hybrid_recall", {"query": "fox", "tags": ["pg"], "alpha": 0.0}) == []
    assert await _ids(client, "hybrid_recall", {"query": "fox", "tags": ["fox"]}) == [corpus["fox"]]
    args = {"query": "error", "filters": {"metadata.key": "err"}, "alpha": 0.0}
    assert await _ids(client, "hybrid_recall", args) == [corpus["err"]]
    args = {"query": "error", "filters": {"metadata.key": "pg"}, "alpha": 0.0}
    assert await _ids(client, "hybrid_recall", args) == []
    assert await _ids(client, "hybrid_recall", {"query": "fox", "namespace": "x' OR '1'='1"}) == []


async def test_deleted_and_new_memories_show_up_at_once(client, corpus):
    stats = data(await client.call_tool("stats", {}))
    assert stats["has_fts_index"] is True
    assert [(i["column"], i["index_type"]) for i in stats["indices"]] == [("content", "FTS")]
    assert await _ids(client, "hybrid_recall", {"query": "E1234", "alpha": 0.0}) == [corpus["err"]]
    await client.call_tool("forget", {"memory_id": corpus["err"]})
    assert await _ids(client, "hybrid_recall", {"query": "E1234", "alpha": 0.0}) == []
    fresh = await remember(client, "Incident E1234 happened again on Friday")
    assert await _ids(client, "hybrid_recall", {"query": "E1234", "alpha": 0.0}) == [fresh["id"]]


async def test_hybrid_validation(searched):
    client, corpus = searched
    assert_error(await client.call_tool("hybrid_recall", {"query": ""}), "ValidationError", "query")
    assert_error(await client.call_tool("hybrid_recall", {"query": "   "}), "ValidationError", "empty")
    assert_error(await client.call_tool("hybrid_recall", {"query": "x", "alpha": 1.5}), "ValidationError", "alpha")
    assert_error(await client.call_tool("hybrid_recall", {"query": "x", "alpha": -0.1}), "ValidationError", "alpha")
    assert_error(await client.call_tool("hybrid_recall", {"query": "x", "limit": 0}), "ValidationError", "limit")
    assert_error(await client.call_tool("hybrid_recall", {"query": "x", "limit": 101}), "ValidationError", "limit")
    assert_error(await client.call_tool("hybrid_recall", {"query": "x", "min_similarity": 2}), "ValidationError")
    assert_error(await client.call_tool("hybrid_recall", {"alpha": 0.5}), "ValidationError", "query")


async def test_limit_is_respected(client, corpus):
    for limit in (1, 3):
        assert len(await _ids(client, "hybrid_recall", {"query": "the", "limit": limit})) <= limit
    many = [{"content": f"deploy note number {i}", "namespace": "bulk"} for i in range(30)]
    await client.call_tool("remember_batch", {"memories": many})
    assert len(await _ids(client, "hybrid_recall", {"query": "deploy note", "limit": 25, "namespace": "bulk"})) == 25


async def test_recall_hybrid_alpha_delegates(searched):
    client, corpus = searched
    for alpha in (0.0, 0.3, 1.0):
        args = {"query": "error code E1234 fox", "limit": 6}
        hybrid = await _ids(client, "hybrid_recall", {**args, "alpha": alpha})
        recall = data(await client.call_tool("recall", {**args, "hybrid_alpha": alpha}))
        assert [m["id"] for m in recall["memories"]] == hybrid
        assert "fts_score" not in recall["memories"][0]  # recall keeps its own fields
    # recall's default ranking is hybrid_recall's at its default alpha.
    plain = await _ids(client, "recall", {"query": "error code E1234 fox", "limit": 6})
    assert plain == await _ids(client, "hybrid_recall", {"query": "error code E1234 fox", "limit": 6})
    assert_error(await client.call_tool("recall", {"query": "x", "hybrid_alpha": 1.2}), "ValidationError", "alpha")


# ---- LoCoMo: hybrid beats pure vector and pure keyword, out of sample ---------------------------

# Out of sample (shared/eval/README.md): the alpha asserted on is chosen here, from ALPHA_GRID,
# by nDCG@10 on the first two conversations in file order (conv-26, conv-30), and scored only on
# conv-42, which takes no part in choosing it nor the ranking's other weights (those were chosen
# on conv-26, conv-30 and conv-41 only: benchmarks/run.py HELD_OUT). benchmarks/hybrid_locomo.py
# sweeps all five conversations; its best alpha is in sample for every one of them, so it is not used.
TUNE_CONVERSATIONS = 2
TEST_CONVERSATION = "conv-42"
ALPHA_GRID = (0.2, 0.35, 0.5, 0.65)
# hybrid_recall's default alpha was fixed by the API specification ("0.5 = balanced") before
# anything was measured, so no conversation chose it: it is scored as it is. Should the default
# ever become a value tuned on this data, it must be chosen out of sample like the one above.
SPEC_DEFAULT_ALPHA = 0.5


async def test_locomo_hybrid_beats_vector_and_keyword(tmp_path, cached_embedder, locomo_dev):
    """recall@10 / nDCG@10 on categories 1-4, one namespace per conversation, one memory per turn
    (its dia_id in metadata), imported in one bulk import that re-embeds the turns. alpha is
    tuned on some conversations and the assertions are on another (see above)."""
    from mcp import Client

    from spatial_memory.evaluation import locomo
    from spatial_memory.evaluation.locomo import summarize
    from spatial_memory.server.app import create_server

    every = locomo.load(locomo_dev)
    tune = every[:TUNE_CONVERSATIONS]
    test = [c for c in every if c.sample_id == TEST_CONVERSATION]
    conversations = tune + test
    assert len(test) == 1 and not {c.sample_id for c in tune} & {c.sample_id for c in test}
    # No access-count writes during the measurement: every query sees the same table.
    settings = Settings(path=tmp_path / "store", preload=False, access_flush_seconds=3600)
    exports = settings.allowed_import_dirs[0]
    exports.mkdir(parents=True)
    turns = [
        {"content": t.text, "namespace": c.sample_id, "metadata": {"dia_id": t.dia_id}}
        for c in conversations
        for t in c.turns
    ]
    (exports / "locomo.json").write_text(json.dumps(turns))
    started = time.perf_counter()
    async with Client(create_server(settings, embedder=cached_embedder)) as client:
        imported = data(
            await client.call_tool(
                "import_memories", {"source_path": "locomo.json", "regenerate_embeddings": True, "dry_run": False}
            )
        )
        assert imported["memories_imported"] == len(turns), imported
        # The bulk import has upkeep fold the rows into the full-text index: wait for it.
        for _ in range(300):
            indices = data(await client.call_tool("stats", {}))["indices"]
            if indices and all(i["status"] == "ready" and i["num_indexed_rows"] == len(turns) for i in indices):
                break
            await anyio.sleep(0.1)
        else:
            pytest.fail(f"full-text index not brought up to date: {indices}")
        args = {"output_path": "locomo-ids.json", "include_vectors": False}
        exported = data(await client.call_tool("export_memories", args))
        assert exported["memories_exported"] == len(turns)
        memories = json.loads(Path(exported["output_path"]).read_text())["memories"]
        dia_of = {m["id"]: m["metadata"]["dia_id"] for m in memories}

        async def measure(convs, tool: str, extra: dict) -> dict[str, float]:
            scores: dict[int, list[dict[str, float]]] = {}
            for conv in convs:
                for q in conv.questions:
                    if q.category not in (1, 2, 3, 4):
                        continue
                    body = data(
                        await client.call_tool(
                            tool, {"query": q.question, "limit": 10, "namespace": conv.sample_id, **extra}
                        )
                    )
                    if tool == "hybrid_recall" and "alpha" not in extra:
                        assert body["alpha"] == SPEC_DEFAULT_ALPHA, body["alpha"]  # see SPEC_DEFAULT_ALPHA
                    ranked = [dia_of[m["id"]] for m in body["memories"]]
                    scores.setdefault(q.category, []).append(locomo.score(ranked, q.evidence))
            return summarize(scores)["categories 1-4"]

        tuning = {alpha: await measure(tune, "hybrid_recall", {"alpha": alpha}) for alpha in ALPHA_GRID}
        alpha = max(ALPHA_GRID, key=lambda a: tuning[a]["ndcg@10"])  # the first best on a tie
        results = {
            "vector": await measure(test, "recall", {"hybrid_alpha": 1.0}),
            "keyword": await measure(test, "hybrid_recall", {"alpha": 0.0}),
            "hybrid default": await measure(test, "hybrid_recall", {}),
        }
        # The default alpha is asserted per query above: tuned to it, the same ranking, not run twice.
        tuned_here = alpha == SPEC_DEFAULT_ALPHA
        results[f"hybrid {alpha:g} (tuned)"] = (
            results["hybrid default"] if tuned_here else await measure(test, "hybrid_recall", {"alpha": alpha})
        )
    elapsed = time.perf_counter() - started
    print(f"\nLoCoMo dev ({elapsed:.0f} s): alpha by nDCG@10 on {[c.sample_id for c in tune]}:")
    for a, metrics in tuning.items():
        print(f"  alpha {a:<4g} recall@10 {metrics['recall@10']:.3f}  nDCG@10 {metrics['ndcg@10']:.3f}")
    print(f"scored on {[c.sample_id for c in test]}, out of sample:")
    for label, metrics in results.items():
        print(f"  {label:<20} recall@10 {metrics['recall@10']:.3f}  nDCG@10 {metrics['ndcg@10']:.3f}")
    tuned, default = results[f"hybrid {alpha:g} (tuned)"], results["hybrid default"]
    vector, keyword = results["vector"], results["keyword"]
    for metric in ("recall@10", "ndcg@10"):
        assert tuned[metric] > vector[metric] and tuned[metric] > keyword[metric], (metric, alpha, results)
        assert default[metric] > vector[metric], (metric, results)
    assert default["recall@10"] > keyword["recall@10"], results


def test_english_words_other_languages_stop_are_found_by_both_keyword_indexes(tmp_path):
    """Keyword search drops English stop words only: words that are stop words in another language
    ("dog", "cat", "door", "city", "want") are found, by the in-memory keyword index and by
    LanceDB's (a filter only LanceDB applies), alike."""
    from spatial_memory.storage.filters import build_filter

    store = MemoryStore(tmp_path / "db", "unit-model", 8)
    texts = ["My dog sleeps by the door", "The cat wants fish", "A city of bridges", "the and of it"]
    store.add([_record(t, tags=["t"]) for t in texts])
    store.compact()
    for query, expected in (("dog", texts[0]), ("cats", texts[1]), ("doors", texts[0]), ("cities", texts[2])):
        assert [r.content for r, _ in store.fts_search(query, 5)] == [expected], query
        assert [r.content for r, _ in store.fts_search(query, 5, build_filter(tags=["t"]))] == [expected], query
    assert store.fts_search("the and of it", 5) == []  # every word a stop word: nothing to match


def test_a_full_text_index_built_with_other_stop_words_is_rebuilt_by_upkeep(tmp_path):
    """A store whose LanceDB full-text index predates the English stop words (every language's were
    dropped) gets it rebuilt by upkeep's compaction, not while the store opens."""
    import lancedb
    from lancedb.index import FTS

    from spatial_memory.storage.filters import build_filter
    from spatial_memory.storage.search.fulltext import FTS_OPTIONS
    from spatial_memory.storage.table.schema import TABLE_NAME

    def stop_words() -> list[str] | None:
        (index,) = lancedb.connect(str(path)).open_table(TABLE_NAME).list_indices()
        return index.index_details["custom_stop_words"]

    path = tmp_path / "db"
    store = MemoryStore(path, "unit-model", 8)
    store.add([_record("My dog sleeps by the door", tags=["t"])])
    old = {k: v for k, v in FTS_OPTIONS.items() if k != "custom_stop_words"}
    store.table.handle.create_index("content", config=FTS(**old), replace=True)
    store = MemoryStore(path, "unit-model", 8)
    assert stop_words() is None  # opening leaves it
    store.compact()
    assert stop_words() == sorted(FTS_OPTIONS["custom_stop_words"])
    assert [r.content for r, _ in store.fts_search("dog", 5, build_filter(tags=["t"]))] == ["My dog sleeps by the door"]
