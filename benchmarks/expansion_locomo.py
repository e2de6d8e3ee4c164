"""Does recall's expand (spreading activation) help multi-hop questions without hurting the rest?
LoCoMo dev (protocol: ../shared/eval/README.md), with conversation structure, out of sample:
parameters are tuned on three conversations and scored on the other two.

    python -m benchmarks.expansion_locomo

Two comparisons per setting, each against plain recall over lists of the same length:
- added: the 10 hits plus up to `e` expanded memories, scored as recall@(10+e), against plain
  recall with limit 10+e (are the memories activation adds better than the next hits?);
- within 10: the first 10-e hits plus `e` expanded memories, against plain recall@10.
LoCoMo has no relations, and co-recall links would come from the questions themselves (the
answers' evidence recalled together), so only conversation neighbours spread activation here;
co_recall_weight is 0. Runs the services in-process with the bundled model.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import tempfile
import time
from pathlib import Path

import numpy as np

from spatial_memory.evaluation import locomo
from spatial_memory.evaluation.embedding_cache import CachedEmbedder

TUNE = ("conv-26", "conv-30", "conv-41")
SCORE = ("conv-42", "conv-43")
MAIN = (1, 2, 3, 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", type=Path, default=locomo.DEFAULT_PATH)
    parser.add_argument("--expand", default="1,3,5")
    parser.add_argument(
        "--similar", action="store_true", help="also spread to memories similar to each node (similar_weight)"
    )
    args = parser.parse_args()

    from spatial_memory.app import App
    from spatial_memory.config import Settings
    from spatial_memory.embeddings import EmbeddingRouter
    from spatial_memory.runtime.resources import Resources
    from spatial_memory.services.expansion import EXPANSION, expand
    from spatial_memory.storage.filters import build_filter

    conversations = locomo.load(args.path)
    root = Path(tempfile.mkdtemp(prefix="sm-expand-"))
    embedder = CachedEmbedder(EmbeddingRouter(cache_dir=root / "models"))
    resources = Resources(Settings(path=root / "store", preload=False), embedder)
    app = App(resources)
    started = time.perf_counter()
    dia_of = locomo.store_turns(app, conversations)
    resources.store().compact()
    print(f"stored {len(dia_of)} turns in {time.perf_counter() - started:.1f} s", flush=True)

    ranked: dict[tuple[str, str], list] = {}

    def hits_of(conv, question: str) -> list:
        """recall's ranking for the question (limit 15: the candidates, so the order, are those of
        limit 10 too), computed once and reused by every setting."""
        key = (conv.sample_id, question)
        if key not in ranked:
            hits, vector = app.search._ranked(question, limit=15, namespace=conv.sample_id)
            ranked[key] = (vector, hits)
        return ranked[key]

    def run(convs, params, e: int) -> dict[int, list[tuple[float, float, float, float]]]:
        """Per category: (plain R@10, within-10 R@10, plain R@(10+e), added R@(10+e)). The expansion
        is recall's own (services/expansion.py::expand) from the same top 10 recall returns."""
        out: dict[int, list[tuple[float, float, float, float]]] = {}
        for conv in convs:
            flt = build_filter(namespace=conv.sample_id)
            for q in conv.questions:
                vector, hits = hits_of(conv, q.question)
                top = hits[:10]
                seeds = top[: params.seeds]
                grown = expand(app.resources.store(), vector, seeds, {h.record.id for h in top}, flt, e, params)
                p = [dia_of[h.record.id] for h in hits]
                shown = [dia_of[h.record.id] for h in top]
                extra = [dia_of[m.id] for m in grown]
                within = shown[: 10 - len(extra)] + extra
                out.setdefault(q.category, []).append(
                    (
                        locomo.recall_at(p, q.evidence, 10),
                        locomo.recall_at(within, q.evidence, 10),
                        locomo.recall_at(p, q.evidence, 10 + e),
                        locomo.recall_at(shown + extra, q.evidence, 10 + e),
                    )
                )
        return out

    def summary(scores) -> dict[str, np.ndarray]:
        rows = {locomo.CATEGORIES[c]: np.mean(scores[c], axis=0) for c in sorted(scores)}
        rows["categories 1-4"] = np.mean([s for c in MAIN for s in scores.get(c, [])], axis=0)
        return rows

    tune = [c for c in conversations if c.sample_id in TUNE]
    held = [c for c in conversations if c.sample_id in SCORE]
    grid = {
        "seeds": (1, 3, 5, 10),
        "query_gate": (0.0, 0.5, 1.0),
        "conversation_radius": (1, 2),
    }
    if args.similar:
        grid = {
            "seeds": (1, 3),
            "query_gate": (0.5, 1.0),
            "conversation_weight": (0.0,),
            "similar_weight": (1.0,),
            "hops": (1, 2),
        }
    tuning_e = 3
    best, best_gain = None, -np.inf
    print(f"tuning on {', '.join(TUNE)} (expand={tuning_e}, criterion: categories 1-4 recall@13, added)")
    for values in itertools.product(*grid.values()):
        params = dataclasses.replace(EXPANSION, co_recall_weight=0.0, **dict(zip(grid, values)))
        s = summary(run(tune, params, tuning_e))
        gain = s["categories 1-4"][3] - s["categories 1-4"][2]
        multi = s["multi-hop"][3] - s["multi-hop"][2]
        print(f"  {dict(zip(grid, values))}: gain {gain:+.4f} (multi-hop {multi:+.4f})", flush=True)
        if gain > best_gain:
            best, best_gain = params, gain
    print(f"chosen: {best}")
    print(f"\nscored on {', '.join(SCORE)} (held out)")
    header = f"{'expand':>6} {'category':<16} {'n':>4} {'R@10':>7} {'within10':>9} {'R@10+e':>8} {'added':>7}"
    print(header)
    for e in (int(x) for x in args.expand.split(",")):
        scores = run(held, best, e)
        for name, row in summary(scores).items():
            n = len([s for c in MAIN for s in scores.get(c, [])]) if name == "categories 1-4" else None
            if n is None:
                n = len(next(scores[c] for c in scores if locomo.CATEGORIES[c] == name))
            print(f"{e:>6} {name:<16} {n:>4} {row[0]:>7.4f} {row[1]:>9.4f} {row[2]:>8.4f} {row[3]:>7.4f}")
    resources.upkeep.stop()


if __name__ == "__main__":
    main()
