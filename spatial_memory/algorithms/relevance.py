"""Where relevance ends in a ranked list: which hits are weak.

A hit is weak when its cosine similarity to the query is below an absolute floor, or below a
fraction of the best hit's. It is a step after ranking (the order is the ranking's, untouched):
recall and hybrid_recall mark such hits, the atlas shows them as such, so a reader sees where the
relevant part of the list ends, and a query with no answer in the store comes back all weak. The
rule's values were chosen on LoCoMo dev and a set of questions with no answer in the store
(benchmarks/weak_hits.py; figures in docs/BENCHMARKS.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class WeakRule:
    floor: float  # a hit below this cosine similarity is weak, whatever the others
    ratio: float  # a hit below ratio x the best hit's similarity is weak


def weak_hits(similarities: Sequence[float], rule: WeakRule) -> list[bool]:
    """For each hit (its cosine similarity to the query), whether it is weak."""
    if not similarities:
        return []
    best = max(similarities)
    return [s < rule.floor or s < rule.ratio * best for s in similarities]


WEAK_RULE = WeakRule(floor=0.21, ratio=0.3)
