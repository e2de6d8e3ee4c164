"""consolidate(strategy="distill"): groups of similar episodes become one semantic memory.

Episodes are conversation turns and captures (memory type `conversation`, or any memory placed in
a session). A group is at least MIN_EPISODES of them, every two at least as similar as the
threshold, none using a word opposite to another's. Its semantic memory is extractive: the most
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

from ..algorithms.grouping import mean_pairwise_similarity, near_duplicate_groups
from ..runtime.resources import Resources
from ..storage.filters import build_filter
from ..storage.records import MemoryRecord, Provenance, new_id
from ..storage.relations import Relation
from .results import ConsolidateResult, ConsolidationGroup

MIN_EPISODES = 3
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
    threshold: float,
    *,
    dry_run: bool,
    max_groups: int,
    provenance: Provenance | None,
) -> ConsolidateResult:
    # Not at the top: text/details.py reads text/extraction.py, whose rule table is slow to
    # compile: paid by the first distill, not by every server's start.
    from ..text.details import split_opposed

    store = resources.store()
    with nullcontext() if dry_run else store.exclusive():
        records = store.scan(build_filter(namespace=namespace), with_vectors=True)
        records.sort(key=lambda r: (r.created_at, r.id))
        done = [set(r.provenance.derived_from) for r in records if r.provenance and r.provenance.via == "distill"]
        episodes = [r for r in records if is_episode(r)]
        groups: list[list[int]] = []
        if len(episodes) >= MIN_EPISODES:
            vectors = np.stack([np.asarray(r.vector, dtype=np.float32) for r in episodes])
            for group in near_duplicate_groups(vectors, threshold):
                parts = split_opposed([episodes[i].content for i in group], MIN_EPISODES)
                groups.extend([group[i] for i in part] for part in parts)
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
                    for member_id in record.provenance.derived_from
                ]
            )
    if not dry_run and plans:
        resources.upkeep.poke()
    out = [
        ConsolidationGroup(
            representative_id=record.id if not dry_run else central.id,
            member_ids=list(record.provenance.derived_from),
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
