"""Hybrid search quality on LoCoMo dev: recall (vector), hybrid_recall at alpha 0 (keyword),
0.5, and an alpha sweep, per category (protocol: ../shared/eval/README.md).

    python -m benchmarks.hybrid_locomo                      # all 5 conversations, default sweep
    python -m benchmarks.hybrid_locomo --alphas 0.3,0.5,0.7 --conversations 2

Runs the services in-process (no MCP round trips) with the bundled model; each turn and each
question is embedded once and reused for every alpha. tests/test_hybrid.py runs the same
measurement through an MCP client on a subset.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from spatial_memory.evaluation import locomo
from spatial_memory.evaluation.embedding_cache import CachedEmbedder
from spatial_memory.evaluation.locomo import MAIN_CATEGORIES, summarize


def evaluate(
    conversations: Iterable[locomo.Conversation], rank: Callable[[locomo.Conversation, str], Sequence[str]]
) -> dict[int, list[dict[str, float]]]:
    """Score `rank(conversation, question) -> dia_ids` on every question, by category."""
    scores: dict[int, list[dict[str, float]]] = {}
    for conv in conversations:
        for q in conv.questions:
            scores.setdefault(q.category, []).append(locomo.score(list(rank(conv, q.question)), q.evidence))
    return scores


def print_table(results: dict[str, dict[str, dict[str, float]]]) -> None:
    categories = ["categories 1-4", *(locomo.CATEGORIES[c] for c in (*MAIN_CATEGORIES, 5))]
    width = max(len(m) for m in results) + 2
    print(f"{'method':<{width}}" + "".join(f"{c:>26}" for c in categories))
    print(f"{'':<{width}}" + "".join(f"{'R@10 / nDCG@10 (n)':>26}" for _ in categories))
    for method, by_cat in results.items():
        cells = []
        for c in categories:
            m = by_cat.get(c)
            cells.append(f"{m['recall@10']:.3f} / {m['ndcg@10']:.3f} ({m['queries']})" if m else "-")
        print(f"{method:<{width}}" + "".join(f"{cell:>26}" for cell in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", type=Path, default=locomo.DEFAULT_PATH)
    parser.add_argument("--alphas", default="0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9")
    parser.add_argument("--conversations", type=int, default=0, help="use only the first N conversations")
    args = parser.parse_args()

    from spatial_memory.config import Settings
    from spatial_memory.records import NewMemory
    from spatial_memory.runtime.resources import Resources
    from spatial_memory.server.app import App

    conversations = locomo.load(args.path)
    if args.conversations:
        conversations = conversations[: args.conversations]
    root = Path(tempfile.mkdtemp(prefix="sm-hybrid-"))
    from spatial_memory.embeddings import EmbeddingRouter

    embedder = CachedEmbedder(EmbeddingRouter(cache_dir=root / "models"))
    resources = Resources(Settings(path=root / "store", preload=False), embedder)
    app = App(resources)
    started = time.perf_counter()
    dia_of: dict[str, str] = {}
    for conv in conversations:
        items = [NewMemory(t.text, namespace=conv.sample_id, metadata={"dia_id": t.dia_id}) for t in conv.turns]
        records = app.memory.build_records(items)
        app.memory.store_records(records)
        dia_of.update({r.id: r.metadata["dia_id"] for r in records})
    resources.store().compact()  # steady state: every row in the full-text index
    turns = sum(len(c.turns) for c in conversations)
    print(f"stored {turns} turns of {len(conversations)} conversations in {time.perf_counter() - started:.1f} s")

    def vector(conv: locomo.Conversation, question: str) -> list[str]:
        hits = app.search.ranked(question, limit=10, alpha=1.0, namespace=conv.sample_id)
        return [dia_of[h.record.id] for h in hits]

    def hybrid(alpha: float) -> Callable[[locomo.Conversation, str], list[str]]:
        def rank(conv: locomo.Conversation, question: str) -> list[str]:
            hits = app.search.ranked(question, alpha=alpha, limit=10, namespace=conv.sample_id)
            return [dia_of[h.record.id] for h in hits]

        return rank

    results: dict[str, dict[str, dict[str, float]]] = {}
    results["vector (recall)"] = summarize(evaluate(conversations, vector))
    results["keyword (alpha 0)"] = summarize(evaluate(conversations, hybrid(0.0)))
    for alpha in sorted({0.5, *(float(a) for a in args.alphas.split(",") if a.strip())}):
        results[f"hybrid alpha {alpha:g}"] = summarize(evaluate(conversations, hybrid(alpha)))
    print_table(results)
    best = max((m for m in results if m.startswith("hybrid")), key=lambda m: results[m]["categories 1-4"]["ndcg@10"])
    print(f"\nbest by nDCG@10 on categories 1-4: {best}")
    resources.upkeep.stop()


if __name__ == "__main__":
    main()
