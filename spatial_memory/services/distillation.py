"""consolidate(strategy="distill"): groups of episodes that say the same thing become one semantic
memory.

Episodes are conversation turns and captures (memory type `conversation`, or any memory placed in
a session). A group is at least MIN_EPISODES restatements (`restatement_groups`): every two at
least RESTATEMENT_SIMILARITY alike (MiniLM cosine) and making the same claim (text/claims.py: the
same numbers, days, names, negation...), less any member much less alike the rest than the rest
are alike each other (OUTLIER_MARGIN: one on the same topic saying something else). The rule and
its two figures were tuned and scored, out of sample, on the labelled restatements of
tests/fixtures/restatements.json (`python -m benchmarks.restatements`; docs/BENCHMARKS.md).
Its semantic memory is extractive: the most
central statement of the group - among the statements that claim no specific (number, date, unit,
environment, negation) the others do not all share, when there is one - with the specifics all
of them agree on. Its provenance names every episode, and a `derived_from` relation links it to
each; the episodes stay. A group already distilled (all its episodes named by one distilled
memory) is not distilled again.
"""

from __future__ import annotations

from contextlib import nullcontext
from datetime import datetime
from typing import Any

import numpy as np

from ..algorithms.grouping import mean_pairwise_similarity, near_duplicate_groups, split_in_two, without_outliers
from ..embeddings.decisions import Redecides, among
from ..records import MemoryRecord, Provenance, new_id
from ..runtime.resources import Resources
from ..storage.filters import build_filter
from ..storage.side_tables.relations import Relation
from .results import ConsolidateResult, ConsolidationGroup

MIN_EPISODES = 3
RESTATEMENT_SIMILARITY = 0.6
OUTLIER_MARGIN = 0.08
SPLIT_GAP = 0.1
RELATION = "derived_from"
TAG = "distilled"
DISTILLED_FROM_KEY = "distilled_from"
SHARED_KEY = "shared_specifics"


def is_episode(record: MemoryRecord) -> bool:
    distilled = record.provenance is not None and record.provenance.via == "distill"
    episodic = record.memory_type == "conversation" or record.conversation.session_id is not None
    return episodic and not distilled and record.memory_type != "procedure"


def distill(
    resources: Resources,
    namespace: str,
    *,
    dry_run: bool,
    max_groups: int,
    provenance: Provenance | None,
) -> ConsolidateResult:
    store = resources.store()
    with nullcontext() if dry_run else store.exclusive():
        records = store.scan(build_filter(namespace=namespace), with_vectors=True)
        records.sort(key=lambda r: (r.created_at, r.id))
        done = [set(r.provenance.derived_from) for r in records if r.provenance and r.provenance.via == "distill"]
        episodes = [r for r in records if is_episode(r)]
        groups: list[list[int]] = []
        if len(episodes) >= MIN_EPISODES:
            vectors = np.stack([np.asarray(r.vector, dtype=np.float32) for r in episodes])
            groups = restatement_groups([r.content for r in episodes], vectors, embedder=resources.embedder)
        groups.sort(key=lambda g: (-len(g), g[0]))
        fresh = [g for g in groups if not any({episodes[i].id for i in g} <= ids for ids in done)]
        now = resources.clock()
        origin = (provenance or Provenance(via="distill")).but(via="distill")
        plans = [_plan([episodes[i] for i in g], namespace, now, origin) for g in fresh[:max_groups]]
        if not dry_run and plans:
            store.add([record for record, _ in plans])
            store.relate(
                [
                    Relation(record.id, member_id, RELATION, 1.0, now, origin)
                    for record, _ in plans
                    for member_id in _derived_from(record)
                ]
            )
    if not dry_run and plans:
        resources.upkeep.poke()
    out = [
        ConsolidationGroup(
            representative_id=record.id if not dry_run else central.id,
            member_ids=list(_derived_from(record)),
            avg_similarity=round(
                mean_pairwise_similarity(np.stack([m.vector for m in members])) if members else 0.0, 6
            ),
            action_taken="preview" if dry_run else "distilled",
            statement=record.content,
        )
        for (record, (central, members)) in plans
    ]
    return ConsolidateResult(
        groups_found=len(fresh),
        memories_merged=0 if dry_run else len(plans),
        memories_deleted=0,
        groups=out,
        dry_run=dry_run,
    )


def restatement_groups(
    texts: list[str],
    vectors: np.ndarray,
    *,
    similarity: float = RESTATEMENT_SIMILARITY,
    margin: float = OUTLIER_MARGIN,
    gap: float = SPLIT_GAP,
    embedder: object = None,
) -> list[list[int]]:
    """Groups (indexes, at least MIN_EPISODES) of texts that say the same thing: every two at least
    `similarity` alike and claiming the same (text/claims.py); a group that is two (each part more
    alike within than between by over `gap`: two claims about one person or thing) split in two;
    then without members more than `margin` less alike the rest than the rest are alike each other.
    With an embedder that re-decides near a threshold (embeddings/decisions.py), the pairs near
    `similarity` are decided on fp32 vectors, and so is each group's split and outliers (means of
    many pairs, their shift not bounded by one pair's)."""
    # Not at the top: text/details.py reads text/extraction.py, whose rule table takes ~40 ms to
    # compile: paid by the first distill, not by every server's start.
    from ..text.claims import claims, disagreement

    said = claims(texts)

    def agree(i: int, others: np.ndarray) -> np.ndarray:
        return np.array([disagreement(said[i], said[j]) is None for j in others.tolist()], dtype=bool)

    band, reaches = among(embedder, similarity, texts)
    groups = []
    for whole in near_duplicate_groups(vectors, similarity, agree=agree, band=band, reaches=reaches):
        if len(whole) < MIN_EPISODES:
            continue
        mine = vectors[whole]
        if band > 0 and isinstance(embedder, Redecides):
            mine = embedder.reference_vectors([texts[i] for i in whole])
        for part in split_in_two(mine, gap):
            kept = [whole[part[k]] for k in without_outliers(mine[part], margin)]
            if len(kept) >= MIN_EPISODES:
                groups.append(kept)
    return groups


def _derived_from(record: MemoryRecord) -> tuple[str, ...]:
    """The episodes a planned semantic memory restates (_plan gives every one its provenance)."""
    return record.provenance.derived_from if record.provenance is not None else ()


def _plan(
    members: list[MemoryRecord], namespace: str, now: datetime, origin: Provenance
) -> tuple[MemoryRecord, tuple[MemoryRecord, list[MemoryRecord]]]:
    """The semantic memory a group becomes (not yet stored), and the group's central episode."""
    # Not at the top: see distill.
    from ..text.details import detail_signature

    unit = np.stack([np.asarray(m.vector, dtype=np.float64) for m in members])
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    centrality = (unit @ unit.T).sum(axis=1)
    details = [detail_signature(m.content)[0] for m in members]
    shared = frozenset.intersection(*details)
    # Prefer a statement that claims nothing the others do not all say; then the most central.
    order = sorted(range(len(members)), key=lambda i: (details[i] <= shared, centrality[i]), reverse=True)
    central = members[order[0]]
    tags = [t for t in central.tags if all(t in m.tags for m in members)]
    metadata: dict[str, Any] = {
        DISTILLED_FROM_KEY: [m.id for m in members],
        SHARED_KEY: sorted(shared),
    }
    record = MemoryRecord(
        id=new_id(),
        content=central.content,
        namespace=namespace,
        tags=list(dict.fromkeys([*tags, TAG])),
        importance=max(m.importance for m in members),
        source="consolidated",
        metadata=metadata,
        created_at=now,
        updated_at=now,
        last_accessed=now,
        memory_type="fact",
        provenance=origin.but(derived_from=tuple(m.id for m in members), session_id=None),
        vector=np.asarray(central.vector, dtype=np.float32),  # the same text: the same vector
    )
    return record, (central, members)
