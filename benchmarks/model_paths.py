"""The bundled model's paths (fp32, int8-row, int8) on LoCoMo dev (protocol: ../shared/eval/README.md).

    python -m benchmarks.model_paths                          # fp32 and int8-row
    python -m benchmarks.model_paths --paths fp32,int8-row,int8

- vectors: cosine of each path's vector to the fp32 vector of the same text, over 5,000 dev texts
  (the turns as stored, the questions, then the turns' utterances without their date), embedded
  in batches as ingest does; how far a vector moves with its batch (the first 300 texts one at a
  time, and the same texts in reverse order: largest absolute difference of a coordinate);
- retrieval through the server: each path's server (SPATIAL_MEMORY_EMBEDDING_PRECISION) on a
  fresh store, each conversation in its namespace with its structure and without, one `recall`
  (default ranking, and meaning only: hybrid_alpha=1) per question; recall@10 and nDCG@10 over
  categories 1-4, all five dev conversations and the two held out by benchmarks.run;
- latency of one query: embed_query in-process, the paths interleaved, and recall through each
  server (p50).
Results: benchmarks/results/model_paths.json.
"""

from __future__ import annotations

import argparse
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

HELD_OUT = ("conv-42", "conv-43")  # benchmarks.run's held-out pair
METHODS = {
    "recall (default), with structure": ({}, True),
    "recall (default), no structure": ({}, False),
    "recall, meaning only (hybrid_alpha=1)": ({"hybrid_alpha": 1.0}, False),
}
LATENCY_QUERIES = 200
DEV_TEXTS = 5000
BATCH_CHECK = 300


def dev_texts(conversations, n: int = DEV_TEXTS) -> list[str]:
    """n texts of LoCoMo dev: every turn as stored, every question, then utterances without their date."""
    turns = [t.text for c in conversations for t in c.turns]
    questions = [q.question for c in conversations for q in c.questions]
    utterances = [t.text.split(") ", 1)[-1] for c in conversations for t in c.turns]
    return (turns + questions + utterances)[:n]


def vector_agreement(conversations, models: Path, paths: tuple[str, ...]):
    from spatial_memory.embeddings import EmbeddingRouter

    routers = {path: EmbeddingRouter(precision=path, cache_dir=models) for path in paths}
    texts = dev_texts(conversations)
    questions = [q.question for c in conversations for q in c.questions]
    docs = {path: r.embed_documents(texts) for path, r in routers.items()}
    rows = []
    for path in paths:
        cos = (docs["fp32"] * docs[path]).sum(axis=1)
        sample = texts[:BATCH_CHECK]
        alone = np.stack([routers[path].embed_query(t) for t in sample])
        reverse = routers[path].embed_documents(sample[::-1])[::-1]
        rows.append(
            {
                "path": path,
                "texts": len(texts),
                "mean cosine to fp32": round(float(cos.mean()), 5),
                "min cosine to fp32": round(float(cos.min()), 5),
                f"batched vs alone, max abs diff ({BATCH_CHECK} texts)": float(
                    f"{np.abs(alone - docs[path][:BATCH_CHECK]).max():.3g}"
                ),
                "batched vs reverse order, max abs diff": float(
                    f"{np.abs(reverse - docs[path][:BATCH_CHECK]).max():.3g}"
                ),
            }
        )
    latency: dict[str, list[float]] = {path: [] for path in paths}
    for i, q in enumerate(questions[:LATENCY_QUERIES]):
        for path in paths if i % 2 else paths[::-1]:
            t = time.perf_counter()
            routers[path].embed_query(q)
            latency[path].append((time.perf_counter() - t) * 1000)
    return rows, latency


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


async def main_async(paths: tuple[str, ...]) -> dict[str, Any]:
    from .reference import host_load

    conversations = locomo.load()
    root = Path(tempfile.mkdtemp(prefix="sm-paths-"))
    agreement, latency = vector_agreement(conversations, root / "models", paths)
    print_table(f"Vectors against fp32 ({DEV_TEXTS:,} LoCoMo dev texts; {host_load()})", agreement)
    servers = {}
    for path in paths:
        servers[path] = await through_server(path, conversations, root)
        servers[path]["host"] = host_load()
        print(json.dumps(servers[path]), file=sys.stderr, flush=True)
    rows = []
    for path in paths[1:]:
        for method in METHODS:
            for split in servers["fp32"][method]:
                f, i = servers["fp32"][method][split], servers[path][method][split]
                rows.append(
                    {
                        "path": path,
                        "method": method,
                        "split": split,
                        "queries": f["queries"],
                        "fp32 recall@10": f["recall@10"],
                        "recall@10": i["recall@10"],
                        "recall@10 change": round(i["recall@10"] - f["recall@10"], 4),
                        "fp32 nDCG@10": f["ndcg@10"],
                        "nDCG@10": i["ndcg@10"],
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
        for path in paths
    ]
    print_table("One query (in-process embed interleaved; server recall p50 over every LoCoMo question)", lat)
    return {"agreement": agreement, "retrieval": rows, "latency": lat, "servers": servers}


def main() -> None:
    from .reference import host_load

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paths", default="fp32,int8-row", help="comma-separated; fp32 first (the baseline)")
    args = parser.parse_args()
    paths = tuple(args.paths.split(","))
    if paths[0] != "fp32":
        parser.error("fp32 comes first: every figure is against it")
    result = asyncio.run(main_async(paths))
    write_json("model_paths", {**result, "host": host_load()})


if __name__ == "__main__":
    main()
