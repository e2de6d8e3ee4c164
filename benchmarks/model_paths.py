"""The bundled model's two paths, fp32 and int8, on LoCoMo dev (protocol: ../shared/eval/README.md).

    python -m benchmarks.model_paths

- vectors: cosine of each int8 vector to the fp32 vector of the same text (every dev turn,
  embedded in batches as ingest does; every question, alone as a query is), and how far an int8
  vector moves with its batch (the same turns embedded one at a time);
- retrieval through the server: each path's server (SPATIAL_MEMORY_EMBEDDING_PRECISION) on a
  fresh store, each conversation in its namespace with its structure and without, one `recall`
  (default ranking, and meaning only: hybrid_alpha=1) per question; recall@10 and nDCG@10 over
  categories 1-4, all five dev conversations and the two held out by benchmarks.run;
- latency of one query: embed_query in-process, both paths interleaved, and recall through each
  server (p50).
Results: benchmarks/results/model_paths.json.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from spatial_memory.evaluation import locomo

from .common import print_table, write_json
from .reference import call, ours_command, spawn

PATHS = ("fp32", "int8")
HELD_OUT = ("conv-42", "conv-43")  # benchmarks.run's held-out pair
METHODS = {
    "recall (default), with structure": ({}, True),
    "recall (default), no structure": ({}, False),
    "recall, meaning only (hybrid_alpha=1)": ({"hybrid_alpha": 1.0}, False),
}
LATENCY_QUERIES = 200


def vector_agreement(conversations, models: Path) -> tuple[dict[str, Any], dict[str, list[float]]]:
    from spatial_memory.embeddings import EmbeddingRouter

    routers = {path: EmbeddingRouter(precision=path, cache_dir=models) for path in PATHS}
    turns = [t.text for c in conversations for t in c.turns]
    questions = [q.question for c in conversations for q in c.questions]
    docs = {path: r.embed_documents(turns) for path, r in routers.items()}
    queries = {path: np.stack([r.embed_query(q) for q in questions]) for path, r in routers.items()}
    doc_cos = (docs["fp32"] * docs["int8"]).sum(axis=1)
    query_cos = (queries["fp32"] * queries["int8"]).sum(axis=1)
    sample = turns[:300]
    alone = np.stack([routers["int8"].embed_query(t) for t in sample])
    batch_cos = (alone * docs["int8"][: len(sample)]).sum(axis=1)
    agreement = {
        "turns": len(turns),
        "questions": len(questions),
        "int8_vs_fp32_turns_mean_cosine": round(float(doc_cos.mean()), 5),
        "int8_vs_fp32_turns_min_cosine": round(float(doc_cos.min()), 5),
        "int8_vs_fp32_questions_mean_cosine": round(float(query_cos.mean()), 5),
        "int8_vs_fp32_questions_min_cosine": round(float(query_cos.min()), 5),
        "int8_batched_vs_alone_mean_cosine": round(float(batch_cos.mean()), 5),
        "int8_batched_vs_alone_min_cosine": round(float(batch_cos.min()), 5),
    }
    latency: dict[str, list[float]] = {path: [] for path in PATHS}
    for i, q in enumerate(questions[:LATENCY_QUERIES]):
        for path in PATHS if i % 2 else PATHS[::-1]:
            t = time.perf_counter()
            routers[path].embed_query(q)
            latency[path].append((time.perf_counter() - t) * 1000)
    return agreement, latency


async def through_server(path: str, conversations, root: Path) -> dict[str, Any]:
    store = root / f"store-{path}"
    store.mkdir(parents=True)
    argv, env = ours_command(store, root / "user-cache")
    env["SPATIAL_MEMORY_EMBEDDING_PRECISION"] = path
    scores: dict[str, dict[str, list[dict[str, float]]]] = {m: {} for m in METHODS}
    latencies: list[float] = []
    async with spawn(argv, env, root) as (client, _pid):
        for conv in conversations:
            dia_of: dict[str, str] = {}
            for structure in (True, False):
                namespace = conv.sample_id if structure else f"{conv.sample_id}-plain"
                for start in range(0, len(conv.turns), 100):
                    chunk = conv.turns[start : start + 100]
                    batch = [t.memory(namespace, structure=structure) for t in chunk]
                    ids = (await call(client, "remember_batch", {"memories": batch}))["ids"]
                    dia_of.update({i: t.dia_id for i, t in zip(ids, chunk, strict=True)})
            for q in conv.questions:
                if q.category == 5:
                    continue
                for method, (extra, structure) in METHODS.items():
                    namespace = conv.sample_id if structure else f"{conv.sample_id}-plain"
                    t = time.perf_counter()
                    result = await call(
                        client, "recall", {"query": q.question, "limit": 10, "namespace": namespace, **extra}
                    )
                    latencies.append((time.perf_counter() - t) * 1000)
                    ranked = [dia_of[m["id"]] for m in result["memories"]]
                    scores[method].setdefault(conv.sample_id, []).append(locomo.score(ranked, q.evidence))
        model = (await call(client, "stats", {}))["embedding_model"]
    out: dict[str, Any] = {
        "path": path,
        "store_model_id": model,
        "recall_p50_ms": round(statistics.median(latencies), 2),
    }
    for method, by_conv in scores.items():
        for split, convs in (("dev (5 conversations)", list(by_conv)), ("held out (conv-42, conv-43)", HELD_OUT)):
            rows = [s for c in convs for s in by_conv.get(c, [])]
            out.setdefault(method, {})[split] = {
                "queries": len(rows),
                "recall@10": round(sum(r["recall@10"] for r in rows) / len(rows), 4),
                "ndcg@10": round(sum(r["ndcg@10"] for r in rows) / len(rows), 4),
            }
    return out


async def main_async() -> dict[str, Any]:
    conversations = locomo.load()
    root = Path(tempfile.mkdtemp(prefix="sm-paths-"))
    agreement, latency = vector_agreement(conversations, root / "models")
    print_table("int8 vectors against fp32 (LoCoMo dev texts)", [agreement])
    servers = {}
    for path in PATHS:
        servers[path] = await through_server(path, conversations, root)
        print(json.dumps(servers[path]), file=sys.stderr, flush=True)
    rows = []
    for method in METHODS:
        for split in servers["fp32"][method]:
            f, i = servers["fp32"][method][split], servers["int8"][method][split]
            rows.append(
                {
                    "method": method,
                    "split": split,
                    "queries": f["queries"],
                    "fp32 recall@10": f["recall@10"],
                    "int8 recall@10": i["recall@10"],
                    "recall@10 change": round(i["recall@10"] - f["recall@10"], 4),
                    "fp32 nDCG@10": f["ndcg@10"],
                    "int8 nDCG@10": i["ndcg@10"],
                    "nDCG@10 change": round(i["ndcg@10"] - f["ndcg@10"], 4),
                }
            )
    print_table("Retrieval on LoCoMo dev through the server, categories 1-4", rows)
    lat = [
        {
            "path": path,
            "embed_query p50 ms": round(statistics.median(latency[path]), 2),
            "embed_query p90 ms": round(float(np.percentile(latency[path], 90)), 2),
            "recall through the server p50 ms": servers[path]["recall_p50_ms"],
        }
        for path in PATHS
    ]
    print_table("One query (in-process embed interleaved; server recall p50 over every LoCoMo question)", lat)
    return {"agreement": agreement, "retrieval": rows, "latency": lat, "servers": servers}


def main() -> None:
    from .reference import host_load

    result = asyncio.run(main_async())
    write_json("model_paths", {**result, "host": host_load()})


if __name__ == "__main__":
    main()
