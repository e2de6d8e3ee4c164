"""Precision and recall of distill's grouping of restatements, out of sample, on the labelled set
tests/fixtures/restatements.json: groups of 3-6 episodes that say the same thing in other words,
each with hard negatives (the same topic, another claim: a different number, day, name, stance or
object) that must never join it.

The groups are split in two folds (alternate groups, so each has developer facts and personal
facts). distill's two figures - the similarity every two members need and the outlier margin - are
chosen on one fold (the highest recall at precision >= SELECT_PRECISION there) and scored on the
other, both ways round; the figures the project ships are scored on each fold and on the whole
set too. All texts of a fold are grouped together, negatives included, as one namespace's
episodes. Precision and recall count pairs of episodes placed in one group: right when both
restate the same gold group, wrong otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from itertools import combinations, product
from pathlib import Path
from typing import Any

import numpy as np

from ..services.distillation import OUTLIER_MARGIN, RESTATEMENT_SIMILARITY, SPLIT_GAP, restatement_groups

FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "restatements.json"
SIMILARITIES = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75)
MARGINS = (0.04, 0.06, 0.08, 0.1, 0.12, 1.0)  # 1.0: no outlier is ever dropped
GAPS = (0.1, 0.15, 0.2, 1.0)  # 1.0: no group is ever split
SELECT_PRECISION = 0.95
FOLDS = 2

NEAR_COPY_SIMILARITY = 0.85
SHIPPED = (RESTATEMENT_SIMILARITY, OUTLIER_MARGIN, SPLIT_GAP)

Embed = Callable[[list[str]], np.ndarray]


def labelled(path: Path = FIXTURE) -> tuple[list[str], list[int | None], list[int]]:
    """Every text, its gold group (None: a hard negative) and its fold."""
    texts: list[str] = []
    gold: list[int | None] = []
    folds: list[int] = []
    for number, group in enumerate(json.loads(path.read_text())["groups"]):
        for text in group["texts"]:
            texts.append(text)
            gold.append(number)
            folds.append(number % FOLDS)
        for text in group["negatives"]:
            texts.append(text)
            gold.append(None)
            folds.append(number % FOLDS)
    return texts, gold, folds


def score(
    texts: Sequence[str],
    gold: Sequence[int | None],
    vectors: np.ndarray,
    similarity: float,
    margin: float,
    gap: float,
) -> dict[str, Any]:
    """Pairwise precision and recall of `restatement_groups` on these texts, and the groups' purity."""
    groups = restatement_groups(list(texts), vectors, similarity=similarity, margin=margin, gap=gap)
    return {"similarity": similarity, "margin": margin, "gap": gap, **_pairs(groups, gold)}


def near_copies(texts: Sequence[str], gold: Sequence[int | None], vectors: np.ndarray) -> dict[str, Any]:
    """The rule distill had before (issue 44), for comparison: every two members at least
    consolidate's near-copy threshold alike (0.85), split where they use opposite words."""
    # Not at the top: text/details.py reads text/extraction.py (~40 ms to compile its rules).
    from ..algorithms.grouping import near_duplicate_groups
    from ..text.details import split_opposed

    groups = [
        [group[k] for k in part]
        for group in near_duplicate_groups(vectors, NEAR_COPY_SIMILARITY)
        for part in split_opposed([texts[i] for i in group], 3)
    ]
    return {"similarity": NEAR_COPY_SIMILARITY, **_pairs(groups, gold)}


def _pairs(groups: list[list[int]], gold: Sequence[int | None]) -> dict[str, Any]:
    right = wrong = 0
    pure = 0
    for group in groups:
        labels = {gold[i] for i in group}
        pure += len(labels) == 1 and None not in labels
        for i, j in combinations(group, 2):
            if gold[i] is not None and gold[i] == gold[j]:
                right += 1
            else:
                wrong += 1
    sizes: dict[int, int] = {}
    for label in gold:
        if label is not None:
            sizes[label] = sizes.get(label, 0) + 1
    pairs = sum(n * (n - 1) // 2 for n in sizes.values())
    return {
        "precision": round(right / (right + wrong), 4) if right + wrong else 1.0,
        "recall": round(right / pairs, 4) if pairs else 0.0,
        "pairs_right": right,
        "pairs_wrong": wrong,
        "gold_pairs": pairs,
        "groups_found": len(groups),
        "groups_pure": pure,
        "gold_groups": len(sizes),
        "negatives": sum(label is None for label in gold),
    }


def _choose(texts: list[str], gold: list[int | None], vectors: np.ndarray) -> dict[str, Any]:
    """The figures with the highest recall at precision >= SELECT_PRECISION (then the highest
    precision; else the most precise of all)."""
    tried = [score(texts, gold, vectors, s, m, g) for s, m, g in product(SIMILARITIES, MARGINS, GAPS)]
    good = [t for t in tried if t["precision"] >= SELECT_PRECISION]
    if good:
        return max(good, key=lambda t: (t["recall"], t["precision"], t["similarity"]))
    return max(tried, key=lambda t: (t["precision"], t["recall"]))


def cross_validate(embed: Embed, path: Path = FIXTURE) -> dict[str, Any]:
    texts, gold, folds = labelled(path)
    vectors = np.asarray(embed(texts), dtype=np.float32)

    def part(fold: int) -> tuple[list[str], list[int | None], np.ndarray]:
        rows = [i for i, f in enumerate(folds) if f == fold]
        return [texts[i] for i in rows], [gold[i] for i in rows], vectors[rows]

    held_out = []
    shipped = []
    for fold in range(FOLDS):
        tuned = _choose(*part(1 - fold)) if FOLDS == 2 else None
        assert tuned is not None
        tested = score(*part(fold), tuned["similarity"], tuned["margin"], tuned["gap"])
        held_out.append({"scored_fold": fold, "tuned_on": 1 - fold, **tested})
        shipped.append({"fold": fold, **score(*part(fold), *SHIPPED)})
    whole = score(texts, gold, vectors, *SHIPPED)
    right = sum(r["pairs_right"] for r in held_out)
    wrong = sum(r["pairs_wrong"] for r in held_out)
    pairs = sum(r["gold_pairs"] for r in held_out)
    return {
        "held_out": held_out,
        "held_out_precision": round(right / (right + wrong), 4) if right + wrong else 1.0,
        "held_out_recall": round(right / pairs, 4) if pairs else 0.0,
        "near_copies_before": near_copies(texts, gold, vectors),
        "shipped": {"figures": dict(zip(("similarity", "margin", "gap"), SHIPPED)), "folds": shipped, "all": whole},
        "texts": len(texts),
        "groups": len({g for g in gold if g is not None}),
        "negatives": sum(g is None for g in gold),
    }
