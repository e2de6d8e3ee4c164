"""The benchmark suite: drives the real server over stdio and prints tables + writes JSON.

    python -m benchmarks.run                 # fast subset (< 10 min on 2 cores)
    python -m benchmarks.run --large         # adds 100,000 and 1,000,000 memories
    python -m benchmarks.run --only cold_start,latency

Results go to benchmarks/results/<section>.json and are summarized in docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spatial_memory.evaluation import locomo
from spatial_memory.evaluation.soak import open_fds, rss_mb, short_texts

from . import reference
from .common import call, call_result, host_probe_ms, percentiles, print_table, server, write_json

if TYPE_CHECKING:
    import numpy as np

SECTIONS = ("cold_start", "ingest", "latency", "spatial", "quality", "changes", "connections")


def _fresh_store(root: Path, name: str, models: Path | None) -> Path:
    store = root / name
    if store.exists():  # a kept store from an earlier run: cold start means empty
        shutil.rmtree(store)
    store.mkdir(parents=True)
    if models is not None:
        # Share the once-built ONNX graph, as every start after the first does.
        (store / "models").symlink_to(models)
    return store


def _shared_models(root: Path) -> Path:
    """The ONNX graphs the run's stores share: the cold start's, or built here once when that
    section did not run. Building them (in a child process since issue 39) takes a few seconds
    once per install, which would otherwise be charged to whichever section runs first."""
    models = root / "cold-first" / "models"
    if not models.exists():
        from spatial_memory.embeddings.onnx_encoder import OnnxSentenceEncoder, bundled_model_dir
        from spatial_memory.embeddings.router import NEW_STORE_PATH

        for precision in (NEW_STORE_PATH, "fp32"):  # a new store's path; fp32: stores written before it, decisions
            OnnxSentenceEncoder(bundled_model_dir(), models, precision=precision).encode(["builds the graph"])
    return models


async def cold_start(root: Path, runs: int = 5) -> dict[str, Any]:
    first_store = _fresh_store(root, "cold-first", None)
    # A user cache of its own, empty before the first run: that run finds no cached handshake
    # answers (handshake.py) and records them, as a first start after installing does.
    user_cache = root / "cold-user-cache"
    shutil.rmtree(user_cache, ignore_errors=True)
    rows = []
    for run in range(runs + 1):
        store = first_store if run == 0 else _fresh_store(root, f"cold-{run}", first_store / "models")
        t0 = time.perf_counter()
        async with server(store, XDG_CACHE_HOME=str(user_cache)) as (client, pid):
            t_init = time.perf_counter() - t0
            await client.list_tools()
            t_list = time.perf_counter() - t0
            await call(client, "remember", {"content": "The first memory of this store."})
            t_remember = time.perf_counter() - t0
            await call(client, "recall", {"query": "first memory"})
            t_recall = time.perf_counter() - t0
            memory = rss_mb(pid) if pid else {}
        rows.append(
            {
                "run": "first ever (builds ONNX graph, no cached handshake)" if run == 0 else f"#{run}",
                "initialize_s": round(t_init, 3),
                "tools_list_s": round(t_list, 3),
                "first_remember_s": round(t_remember, 3),
                "first_recall_s": round(t_recall, 3),
                "peak_rss_mb": memory.get("peak_rss_mb"),
            }
        )
    warm = rows[1:]

    def median(key: str) -> float:
        values = sorted(r[key] for r in warm)
        return values[len(values) // 2]

    summary = {k: median(k) for k in ("initialize_s", "tools_list_s", "first_remember_s", "first_recall_s")}
    print_table("Cold start (spawn -> ..., seconds)", rows + [{"run": "median of warm runs", **summary}])
    return {"runs": rows, "median": summary}


def raw_model_throughput(texts: list[str], chunk: int = 100) -> dict[str, float]:
    """The embedding model alone, in this process: the physical limit for ingest. Batched
    throughput encodes the texts in the same 100-text chunks remember_batch receives (one
    call of 10,000 could sort them by length across the whole set and pad less)."""
    from spatial_memory.config import Settings
    from spatial_memory.embeddings import EmbeddingRouter

    settings = Settings()
    router = EmbeddingRouter(cache_dir=Path(tempfile.mkdtemp()) / "models", batch_size=settings.embedding_batch_size)
    router.load()
    router.embed_documents(texts[:16])
    t = time.perf_counter()
    for start in range(0, len(texts), chunk):
        router.embed_documents(texts[start : start + chunk])
    batched = len(texts) / (time.perf_counter() - t)
    sample = texts[:300]
    t = time.perf_counter()
    for text in sample:
        router.embed_query(text)
    single = len(sample) / (time.perf_counter() - t)
    return {"batched_per_s": round(batched, 1), "one_at_a_time_per_s": round(single, 1)}


async def ingest(root: Path, sizes: tuple[int, ...]) -> dict[str, Any]:
    rows = []
    for n in sizes:
        texts = short_texts(n, seed=n)
        before = raw_model_throughput(texts)
        store = _fresh_store(root, f"ingest-batch-{n}", _shared_models(root))
        async with server(store) as (client, pid):
            await call(client, "remember", {"content": "warm-up"})
            t = time.perf_counter()
            for start in range(0, n, 100):
                batch = [
                    {"content": c, "namespace": f"ns{(start + i) % 10}"}
                    for i, c in enumerate(texts[start : start + 100])
                ]
                await call(client, "remember_batch", {"memories": batch})
            batch_rate = n / (time.perf_counter() - t)
            batch_rss = rss_mb(pid) if pid else {}
        # The host's speed drifts by a third within minutes: the raw figure is the mean of one
        # measurement just before and one just after the server's run.
        after = raw_model_throughput(texts)
        raw = {key: round((before[key] + after[key]) / 2, 1) for key in before}
        store = _fresh_store(root, f"ingest-single-{n}", _shared_models(root))
        single_n = min(n, 2000)
        async with server(store) as (client, pid):
            await call(client, "remember", {"content": "warm-up"})
            t = time.perf_counter()
            for text in texts[:single_n]:
                await call(client, "remember", {"content": text})
            single_rate = single_n / (time.perf_counter() - t)
        rows.append(
            {
                "memories": n,
                "remember_batch_per_s": round(batch_rate, 1),
                "model_raw_batched_per_s": raw["batched_per_s"],
                "batch_vs_raw": f"{batch_rate / raw['batched_per_s']:.0%}",
                "remember_one_by_one_per_s": round(single_rate, 1),
                "one_by_one_measured_over": single_n,
                "model_raw_single_per_s": raw["one_at_a_time_per_s"],
                "peak_rss_mb": batch_rss.get("peak_rss_mb"),
            }
        )
    print_table("Ingest throughput (memories per second)", rows)
    return {"rows": rows}


SYNTHETIC_TEXTS = 50_000
# Each stored vector is the MiniLM embedding of its text plus Gaussian noise of this scale per
# dimension (noise norm ~0.5 against a unit vector: cosine ~0.9 to the text's own embedding),
# so the copies of one text are distinct points near it.
SYNTHETIC_NOISE = 0.025


def text_embeddings(texts: list[str], cache: Path) -> np.ndarray:
    """MiniLM embeddings of the synthetic texts on the path a new store gets (NEW_STORE_PATH),
    computed once per store root and path (~4 minutes here)."""
    import numpy as np

    from spatial_memory.embeddings.onnx_encoder import OnnxSentenceEncoder, bundled_model_dir
    from spatial_memory.embeddings.router import NEW_STORE_PATH

    saved = cache / f"synthetic-embeddings-{len(texts)}-{NEW_STORE_PATH}.npy"
    if saved.exists():
        return np.load(saved)
    cache.mkdir(parents=True, exist_ok=True)
    encoder = OnnxSentenceEncoder(bundled_model_dir(), cache / "models", precision=NEW_STORE_PATH, batch_size=32)
    vectors = encoder.encode(texts)
    np.save(saved, vectors)
    return vectors


def build_synthetic_store(path: Path, n: int, seed: int = 0) -> None:
    """A store of n memories with realistic text and synthetic unit vectors (large sizes only):
    50,000 distinct texts, each stored n / 50,000 times, each copy's vector its text's MiniLM
    embedding plus noise. Queries written like the texts then land near stored memories, as
    they do in real use; purely random vectors would put every query far from all of them."""
    import numpy as np

    from spatial_memory.embeddings.router import NEW_STORE_PATH, PATH_IDS
    from spatial_memory.records import MemoryRecord, new_id
    from spatial_memory.storage.store import MemoryStore

    rng = np.random.default_rng(seed)
    # Recorded as a new store's server would: the default path's id, so the server embeds queries on it.
    store = MemoryStore(path / "lancedb", PATH_IDS[NEW_STORE_PATH], 384, compact_fragment_threshold=10**9)
    texts = short_texts(min(n, SYNTHETIC_TEXTS), seed=seed)
    base = text_embeddings(texts, path.parent)
    chunk = 50_000
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        which = (start + np.arange(m)) % len(texts)
        vectors = base[which] + rng.normal(scale=SYNTHETIC_NOISE, size=(m, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        records = [
            MemoryRecord(id=new_id(), content=texts[which[i]], namespace=f"ns{(start + i) % 10}", vector=vectors[i])
            for i in range(m)
        ]
        store.add(records)
    store.compact()


ANN_CHECK_FROM = 100_000  # sizes served by the approximate index


def vector_index_state(store: Path) -> str:
    """The vector index as the run found or left it: which build, its segments, and the rows
    it does not cover. A write during the run, or an index rebuild upkeep starts (19 minutes
    of CPU at 1M), would change it, so a large-size row says which index it measured."""
    from spatial_memory.storage.search.indexing import vector_index
    from spatial_memory.storage.table.connection import connect as _connect

    index = vector_index(_connect(store / "lancedb", 64 << 20).open_table("memories"))
    if index is None:
        return "none"
    return f"{str(index.index_uuid)[:8]}/{index.num_segments}seg/{index.num_unindexed_rows}unindexed"


async def ann_recall(client, store: Path, questions: list[str], samples: int = 50) -> dict[str, float]:
    """recall@10 of the server's answers against exact brute force over every stored vector:
    `nearby` of stored memories (queries close to the data, as recalls of stored facts are), and
    `recall` by meaning only (hybrid_alpha 1.0: the fused ranking is not a cosine order) of free
    text, over the whole store and within one namespace (the index's filtered search)."""
    import numpy as np

    from spatial_memory.embeddings.onnx_encoder import OnnxSentenceEncoder, bundled_model_dir
    from spatial_memory.embeddings.router import NEW_STORE_PATH
    from spatial_memory.storage.table.connection import connect as _connect

    table = _connect(store / "lancedb", 64 << 20).open_table("memories")
    scan = table.search().select(["id", "namespace", "vector"]).limit(None).to_arrow()
    ids = np.array(scan.column("id").to_pylist(), dtype=object)
    in_ns3 = np.asarray(scan.column("namespace").to_pylist(), dtype=object) == "ns3"
    vectors = scan.column("vector").combine_chunks().values.to_numpy().reshape(len(ids), -1)
    del scan

    def exact(query: np.ndarray, skip: str | None = None, only: np.ndarray | None = None) -> set[str]:
        scores = vectors @ query
        if only is not None:
            scores = np.where(only, scores, -np.inf)
        top = np.argpartition(-scores, 11)[:11]
        ranked = [ids[i] for i in top[np.argsort(-scores[top])] if ids[i] != skip]
        return set(ranked[:10])

    rng = np.random.default_rng(7)
    near = []
    for row in rng.choice(len(ids), samples, replace=False):
        got = await call(client, "nearby", {"memory_id": ids[row], "limit": 10})
        near.append(len({m["id"] for m in got["neighbors"]} & exact(vectors[row], skip=ids[row])) / 10)
    # The server built it there, on the store's path (synthetic stores: the new-store path).
    encoder = OnnxSentenceEncoder(bundled_model_dir(), store / "models", precision=NEW_STORE_PATH)
    far, far_ns = [], []
    for question, query in zip(questions[:samples], encoder.encode(questions[:samples])):
        args = {"query": question, "limit": 10, "hybrid_alpha": 1.0}
        got = await call(client, "recall", args)
        far.append(len({m["id"] for m in got["memories"]} & exact(query)) / 10)
        got = await call(client, "recall", {**args, "namespace": "ns3"})
        far_ns.append(len({m["id"] for m in got["memories"]} & exact(query, only=in_ns3)) / 10)
    return {
        "ann_recall_at_10_nearby": round(float(np.mean(near)), 3),
        "ann_recall_at_10_text": round(float(np.mean(far)), 3),
        "ann_recall_at_10_text_ns": round(float(np.mean(far_ns)), 3),
    }


BUILT_MARK = "built"  # written into a synthetic store once its build (indexes included) finished


def latency_store(root: Path, n: int) -> Path:
    """The store the latency section measures at n memories: one a run kept under the store
    root (an ingest store, or a synthetic store whose build finished), or a new synthetic one.
    A synthetic store without the mark is an interrupted build and is built again."""
    ingest_store = root / f"ingest-batch-{n}"
    if ingest_store.exists():
        return ingest_store
    from spatial_memory.embeddings.router import NEW_STORE_PATH

    name = f"latency-{n}-{NEW_STORE_PATH}"  # one per path: a store's vectors are its path's
    store = root / name
    if (store / BUILT_MARK).exists():
        return store
    store = _fresh_store(root, name, _shared_models(root))
    t = time.perf_counter()
    build_synthetic_store(store, n)
    (store / BUILT_MARK).write_text(f"{n} memories in {time.perf_counter() - t:.0f} s\n")
    print(f"built synthetic store of {n:,} in {time.perf_counter() - t:.1f} s")
    return store


async def latency(root: Path, sizes: tuple[int, ...], queries: int = 200, rounds: int = 3) -> dict[str, Any]:
    """Per size, `rounds` rounds of `queries` calls of each tool in turn in one server (other
    questions each round), the host probed before each round (common.host_probe_ms); p50 and p95
    over every round's calls, and each round's recall p50 beside its probe."""
    rows = []
    models = _shared_models(root)
    for n in sizes:
        store = latency_store(root, n)
        async with server(store) as (client, pid):
            tools = {t.name for t in (await client.list_tools()).tools}
            await call(client, "recall", {"query": "warm-up"})
            ids = [m["id"] for m in (await call(client, "recall", {"query": "deploy", "limit": 50}))["memories"]]
            row: dict[str, Any] = {"memories": n}
            timings: dict[str, list[float]] = {"recall": [], "recall_ns": [], "hybrid_recall": [], "nearby": []}
            validation: list[float] = []
            round_p50: list[float] = []
            probes: list[float] = []
            fds_before = open_fds(pid) if pid else -1
            index_before = vector_index_state(store) if n >= ANN_CHECK_FROM else ""
            for r in range(rounds):
                probes.append(host_probe_ms(models))
                recalls_before = len(timings["recall"])
                for i, q in enumerate(short_texts(queries, seed=12345 + r)):
                    for name, args in (
                        ("recall", {"query": q, "limit": 10}),
                        ("recall_ns", {"query": q, "limit": 10, "namespace": "ns3"}),
                        ("hybrid_recall", {"query": q, "limit": 10}),
                        ("nearby", {"memory_id": ids[i % len(ids)], "limit": 10}),
                    ):
                        tool = "recall" if name == "recall_ns" else name
                        if tool not in tools:
                            continue
                        t = time.perf_counter()
                        result = await call_result(client, tool, args)
                        timings[name].append((time.perf_counter() - t) * 1000)
                        if name == "recall":
                            # The SDK client re-validates every result against the tool's output schema;
                            # timing that step again shows how much of the round trip is the client's.
                            t = time.perf_counter()
                            await client.session.validate_tool_result(tool, result)
                            validation.append((time.perf_counter() - t) * 1000)
                if len(timings["recall"]) > recalls_before:
                    round_p50.append(percentiles(timings["recall"][recalls_before:])["p50_ms"])
            if validation:
                row["recall_client_validation_p50_ms"] = percentiles(validation)["p50_ms"]
            for name, samples in timings.items():
                if samples:
                    stats = percentiles(samples)
                    row[f"{name}_p50_ms"] = stats["p50_ms"]
                    row[f"{name}_p95_ms"] = stats["p95_ms"]
            row["recall_p50_by_round_ms"] = " / ".join(f"{p:g}" for p in round_p50)
            row["host_probe_by_round_ms"] = " / ".join(f"{p:g}" for p in probes)
            memory = rss_mb(pid) if pid else {}
            row["peak_rss_mb"] = memory.get("peak_rss_mb")
            row["open_fds_before_after"] = f"{fds_before}->{open_fds(pid) if pid else -1}"
            if n >= ANN_CHECK_FROM:
                row["vector_index_before_after"] = f"{index_before} -> {vector_index_state(store)}"
                row.update(await ann_recall(client, store, short_texts(queries, seed=12345)[:50]))
        rows.append(row)
    print_table("Query latency through the protocol (ms)", rows)
    return {"rows": rows}


async def spatial(root: Path, sizes: tuple[int, ...]) -> dict[str, Any]:
    rows = []
    for n in sizes:
        store = _fresh_store(root, f"spatial-{n}", _shared_models(root))
        texts = short_texts(n, seed=7)
        async with server(store) as (client, pid):
            for start in range(0, n, 500):
                await call(client, "remember_batch", {"memories": [{"content": c} for c in texts[start : start + 500]]})
            row: dict[str, Any] = {"memories": n}
            for name, args in (
                ("regions", {"min_cluster_size": 5}),
                ("visualize", {"max_memories": n, "format": "json"}),
                ("visualize_svg", {"max_memories": n, "format": "svg"}),
            ):
                tool = name.split("_")[0]
                for attempt in ("first", "repeat"):
                    t = time.perf_counter()
                    await call(client, tool, args)
                    row[f"{name}_{attempt}_s"] = round(time.perf_counter() - t, 3)
            row["peak_rss_mb"] = (rss_mb(pid) if pid else {}).get("peak_rss_mb")
        rows.append(row)
    print_table("regions / visualize (seconds; first call in a fresh server, then repeated)", rows)
    return {"rows": rows}


# The ranking's defaults (spatial_memory/algorithms/ranking.py: DEFAULT_PARAMS) were chosen by
# benchmarks/ranking_study.py on the first three dev conversations only; figures on these two are out
# of sample, the others are reported apart and labelled in sample.
HELD_OUT = ("conv-42", "conv-43")


async def quality(root: Path, alphas: tuple[float, ...] = (0.5,)) -> dict[str, Any]:
    """LoCoMo dev through the server: each conversation stored twice, with its conversation structure
    (session_id, sequence, speaker, occurred_at) and without; recall's default ranking on both, meaning
    only (hybrid_alpha=1.0, also checked against brute-force cosine) and hybrid_recall's alphas."""
    if not locomo.DEFAULT_PATH.exists():
        print("LoCoMo data not found; skipping quality")
        return {}
    conversations = locomo.load()
    store = _fresh_store(root, "quality", _shared_models(root))
    per_split: dict[str, dict[str, dict[str, list[dict[str, float]]]]] = {}
    import numpy as np

    from spatial_memory.embeddings import EmbeddingRouter

    embedder = EmbeddingRouter(cache_dir=Path(tempfile.mkdtemp()) / "models")
    agree = total = 0
    async with server(store) as (client, _pid):
        methods = [
            ("recall (default), with structure", "recall", {}, True),
            ("recall (default), no structure", "recall", {}, False),
            ("recall, meaning only (hybrid_alpha=1)", "recall", {"hybrid_alpha": 1.0}, False),
        ]
        methods += [(f"hybrid_recall a={a}, no structure", "hybrid_recall", {"alpha": a}, False) for a in alphas]
        for conv in conversations:
            split = "held out" if conv.sample_id in HELD_OUT else "tuning set (in sample)"
            dia_of: dict[str, str] = {}
            plain_ids: list[str] = []  # in turn order, for the brute-force check
            for structure in (True, False):
                namespace = conv.sample_id if structure else f"{conv.sample_id}-plain"
                for start in range(0, len(conv.turns), 200):
                    batch = [t.memory(namespace, structure=structure) for t in conv.turns[start : start + 200]]
                    ids = (await call(client, "remember_batch", {"memories": batch}))["ids"]
                    dia_of.update({i: t.dia_id for i, t in zip(ids, conv.turns[start : start + 200])})
                    if not structure:
                        plain_ids += ids
            matrix = embedder.embed_documents([t.text for t in conv.turns])
            for q in conv.questions:
                for label, tool, extra, structure in methods:
                    namespace = conv.sample_id if structure else f"{conv.sample_id}-plain"
                    result = await call(
                        client, tool, {"query": q.question, "limit": 10, "namespace": namespace, **extra}
                    )
                    ranked = [dia_of[m["id"]] for m in result["memories"]]
                    if extra.get("hybrid_alpha") == 1.0:
                        exact = np.argsort(-(matrix @ embedder.embed_query(q.question)), kind="stable")[:10]
                        agree += [m["id"] for m in result["memories"]] == [plain_ids[i] for i in exact]
                        total += 1
                    cat = locomo.CATEGORIES[q.category]
                    by_cat = per_split.setdefault(split, {}).setdefault(label, {})
                    by_cat.setdefault(cat, []).append(locomo.score(ranked, q.evidence))
    rows = []
    summary: dict[str, Any] = {}
    for split, per_method in sorted(per_split.items()):
        for label, by_cat in per_method.items():
            overall = [s for cat, scores in by_cat.items() if cat != "adversarial" for s in scores]
            groups = {"categories 1-4": overall, **by_cat}
            for cat, scores in groups.items():
                metrics = {k: round(sum(s[k] for s in scores) / len(scores), 4) for k in scores[0]}
                rows.append({"split": split, "method": label, "category": cat, "queries": len(scores), **metrics})
                summary.setdefault(split, {}).setdefault(label, {})[cat] = metrics
    print_table(f"Retrieval quality on LoCoMo dev (held out: {', '.join(HELD_OUT)})", rows)
    exactness = {"queries": total, "top10_identical_to_brute_force": round(agree / max(total, 1), 4)}
    print_table("recall by meaning only: top-10 vs brute-force MiniLM cosine top-10", [exactness])
    return {"held_out": list(HELD_OUT), "rows": rows, "summary": summary, "exactness": exactness}


async def main_async(args: argparse.Namespace) -> None:
    only = set(args.only.split(",")) if args.only else set(SECTIONS)
    root = Path(args.store_root) if args.store_root else Path(tempfile.mkdtemp(prefix="sm-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    try:
        if "cold_start" in only:
            results["cold_start"] = await cold_start(root, runs=args.runs)
        if "ingest" in only:
            results["ingest"] = await ingest(root, tuple(int(x) for x in args.ingest_sizes.split(",")))
        if "latency" in only:
            sizes = tuple(int(x) for x in args.latency_sizes.split(",")) + ((100_000, 1_000_000) if args.large else ())
            if args.build_only:
                for n in sizes:
                    latency_store(root, n)
                return
            results["latency"] = await latency(root, sizes, rounds=args.latency_rounds)
        if "spatial" in only:
            results["spatial"] = await spatial(root, tuple(int(x) for x in args.spatial_sizes.split(",")))
        if "changes" in only:
            from .changes import changes

            results["changes"] = await changes(root, 10_000, build_synthetic_store, _fresh_store)
        if args.reference:
            results["reference"] = await reference.compare(Path(args.ref_venv), args.ref_rounds)
        if "connections" in only:
            from .connections import connections

            results["connections"] = await connections(root, 10_000, build_synthetic_store, _fresh_store)
        if "quality" in only:
            results["quality"] = await quality(root, tuple(float(a) for a in args.alphas.split(",")))
        for name, payload in results.items():
            write_json(name, payload)
        print(f"\nJSON written to {Path(__file__).parent / 'results'}")
    finally:
        if not args.keep and not args.store_root:
            shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--large", action="store_true", help="also measure 100,000 and 1,000,000 memories")
    parser.add_argument("--only", default="", help=f"comma-separated sections: {', '.join(SECTIONS)}")
    parser.add_argument("--runs", type=int, default=5, help="cold-start runs (median reported)")
    parser.add_argument("--alphas", default="0.35,0.5", help="hybrid_recall alphas for the quality section")
    parser.add_argument("--ingest-sizes", default="1000,10000")
    parser.add_argument("--latency-sizes", default="1000,10000")
    parser.add_argument("--latency-rounds", type=int, default=3, help="rounds of the latency section per size")
    parser.add_argument("--spatial-sizes", default="1000,5000")
    parser.add_argument(
        "--reference",
        action="store_true",
        help=f"also measure spatial-memory-mcp {reference.REFERENCE_VERSION} beside ours (benchmarks/reference.py)",
    )
    parser.add_argument("--ref-venv", default=str(Path(tempfile.gettempdir()) / "ref-venv"))
    parser.add_argument("--ref-rounds", type=int, default=3)
    parser.add_argument("--store-root", default="", help="reuse/keep stores here (e.g. a prebuilt 1M store)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary stores")
    parser.add_argument(
        "--build-only",
        action="store_true",
        help="only build the latency section's synthetic stores under --store-root (measure them in a later run)",
    )
    args = parser.parse_args()
    if args.build_only and not args.store_root:
        parser.error("--build-only needs --store-root (the stores it builds are for a later run)")
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
