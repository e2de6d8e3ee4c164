"""Procedural memory: build_skill, how_to, execute_skill, deprecate_skill, and the live procedures
served as MCP skills (server/skills.py).

A procedure is a memory of type `procedure` (procedures/model.py holds its shape): it is written,
versioned (every run and the deprecation are new versions, memory_history shows them), exported
and confined to namespaces like any other memory.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .. import validation as check
from ..embeddings.decisions import at_least
from ..errors import MemoryNotFoundError, ValidationError
from ..limits import MAX_PROCEDURE_LABEL as MAX_LABEL
from ..limits import MAX_PROCEDURE_TEXT as MAX_TEXT
from ..limits import MAX_TRAJECTORY_STEPS as MAX_STEPS
from ..procedures.model import KEPT_SEEN, Failure, Procedure, Scored, Step, procedure_tags
from ..procedures.skill_file import SkillFile, skill_file, skill_name
from ..records import MemoryRecord, NewMemory, Provenance, iso
from ..storage.filters import build_filter
from .base import Service
from .memory import MemoryService
from .results import BuildSkillResult, DeprecateSkillResult, ExecuteSkillResult, HowToResult, ProcedureItem, StepItem
from .search import mark_weak

log = logging.getLogger(__name__)

MEMORY_TYPE = "procedure"
# Below this cosine similarity to the task a procedure is not about it (bundled model, on the
# procedures of tests/test_procedures.py: unrelated tasks measured -0.10-0.18, paraphrases 0.25-0.79).
MIN_SIMILARITY = 0.2
# What a procedure the hooks proposed starts from: one run that half worked (a live procedure
# built by a model from a trajectory says its own outcome_score).
CAPTURED_SCORE = 0.3
SEARCH_WIDTH = 4  # procedures read per one asked for, before reliability reorders them


def procedure_filter(namespace: str | None = None):
    return build_filter(namespace=namespace, filters={"memory_type": MEMORY_TYPE})


class ProcedureService(Service):
    # ---- writing ------------------------------------------------------------------------

    def new_procedure(
        self,
        trajectory: Sequence[Step],
        *,
        outcome_score: float,
        domain: str,
        trigger_pattern: str | None,
        name: str | None,
        status: str = "live",
        origin: str = "build_skill",
        fingerprint: str | None = None,
    ) -> Procedure:
        """A checked procedure: at least one step, each with an action; labels short and on one line."""
        if not trajectory:
            raise ValidationError("trajectory is empty: give the steps that worked, each {action, tool?, ...}")
        if len(trajectory) > MAX_STEPS:
            raise ValidationError(f"trajectory has {len(trajectory)} steps; at most {MAX_STEPS}")
        for number, step in enumerate(trajectory, 1):
            if not step.action.strip():
                raise ValidationError(f"trajectory step {number} has no action: say what was done")
        domain = _label("domain", domain)
        trigger = _text("trigger_pattern", trigger_pattern) if trigger_pattern is not None else None
        chosen = _label("name", name) if name is not None else (trigger or trajectory[0].action)[:MAX_LABEL]
        return Procedure(
            name=" ".join(chosen.split()),
            domain=domain,
            steps=tuple(trajectory),
            outcome_score=check.number_in("outcome_score", outcome_score, 0.0, 1.0),
            trigger_pattern=trigger,
            status=status,
            origin=origin,
            fingerprint=fingerprint,
        )

    def procedure_record(self, procedure: Procedure, namespace: str, provenance: Provenance) -> MemoryRecord:
        """The memory of a procedure, validated (secrets redacted) and embedded."""
        item = NewMemory(
            content=procedure.content(),
            namespace=namespace,
            tags=procedure_tags(procedure.domain),
            importance=0.5 + 0.4 * procedure.outcome_score,
            metadata=procedure.as_metadata(),
            memory_type=MEMORY_TYPE,
        )
        (record,) = MemoryService(self._resources).build_records([item], provenance=provenance)
        return record

    def build_skill(
        self,
        trajectory: Sequence[Step],
        *,
        outcome_score: float,
        domain: str,
        trigger_pattern: str | None = None,
        name: str | None = None,
        namespace: str = "default",
        provenance: Provenance | None = None,
    ) -> BuildSkillResult:
        procedure = self.new_procedure(
            trajectory, outcome_score=outcome_score, domain=domain, trigger_pattern=trigger_pattern, name=name
        )
        record = self.procedure_record(procedure, namespace, provenance or Provenance(via="build_skill"))
        self._resources.store().add([record])
        self._resources.upkeep.poke()
        stored = Procedure.from_metadata(record.metadata) or procedure
        return BuildSkillResult(
            procedure_id=record.id,
            name=stored.name,
            status=stored.status,
            skill_uri=skill_file(stored, record.id, record.namespace).uri,
        )

    def execute_skill(
        self,
        procedure_id: str,
        *,
        success: bool,
        error: str | None = None,
        failed_step: int | None = None,
        context: str | None = None,
        provenance: Provenance | None = None,
    ) -> ExecuteSkillResult:
        """One run of a procedure: its counts, last run and (on failure) what failed where."""
        error = _text("error", error) if error is not None else None
        context = _text("context", context) if context is not None else None
        store = self._resources.store()
        with store.exclusive():  # read-modify-write: two runs reported at once both count
            record, procedure = self._procedure(store, procedure_id)
            if failed_step is not None and not 1 <= failed_step <= len(procedure.steps):
                raise ValidationError(f"failed_step must be a step number from 1 to {len(procedure.steps)}")
            now = self._resources.clock()
            failure = None if success else Failure(at=iso(now), error=error, failed_step=failed_step, context=context)
            ran = procedure.ran(bool(success), now, failure)
            self._rewrite(store, record, ran, provenance or Provenance(via="execute_skill"))
        return ExecuteSkillResult(
            procedure_id=record.id,
            success_rate=round(ran.success_rate, 6),
            executions=ran.executions,
            status=ran.status,
        )

    def deprecate_skill(
        self, procedure_id: str, *, reason: str | None = None, provenance: Provenance | None = None
    ) -> DeprecateSkillResult:
        reason = _text("reason", reason) if reason is not None else None
        store = self._resources.store()
        with store.exclusive():
            record, procedure = self._procedure(store, procedure_id)
            retired = replace(procedure, status="deprecated", deprecated_reason=reason)
            self._rewrite(store, record, retired, provenance or Provenance(via="deprecate_skill"))
        return DeprecateSkillResult(procedure_id=record.id, status="deprecated", reason=reason)

    def capture_proposals(self, proposals: Sequence[tuple[dict[str, Any], Provenance]]) -> tuple[int, int]:
        """Procedures the hooks proposed (capture/selection.py), as spool records with a `procedure`:
        a new one is stored captured (low confidence, under the record's deterministic id); one whose
        fingerprint a procedure of the namespace already has is that procedure seen to work again -
        one more successful run, which makes a captured procedure live. A record already counted
        (backfill run twice, a claim retried) changes nothing. Returns how many were stored (new
        memories) and how many confirmed (by another session than the one that last saw it). Each
        proposal comes with the provenance of its capture."""
        store = self._resources.store()
        stored = confirmed = 0
        with store.exclusive():
            known: dict[tuple[str, str], tuple[MemoryRecord, Procedure]] = {}
            for namespace in {p["namespace"] for p, _ in proposals}:
                for record, procedure in self.procedures(namespace):
                    if procedure.fingerprint:
                        known[(namespace, procedure.fingerprint)] = (record, procedure)
            for proposal, origin in proposals:
                body = proposal["procedure"]
                key = (proposal["namespace"], str(body.get("fingerprint") or ""))
                if key in known:
                    record, procedure = known[key]
                    if proposal["id"] == record.id or proposal["id"] in procedure.seen:
                        continue
                    if _same_session(record, proposal):  # confirmed by another session only
                        continue
                    if record.vector is None:  # listed without it; a new version keeps it
                        record = store.get(record.id, with_vector=True) or record
                    ran = replace(
                        procedure.ran(True, self._resources.clock(), None), seen=(*procedure.seen, proposal["id"])
                    )
                    ran = replace(ran, seen=ran.seen[-KEPT_SEEN:])
                    known[key] = (self._rewrite(store, record, ran, origin), ran)
                    confirmed += 1
                elif store.get(proposal["id"]) is None:
                    record = self._proposal_record(proposal, origin)
                    if record is not None:
                        store.add([record])
                        made = Procedure.from_metadata(record.metadata)
                        if made is not None:  # always: the proposal's record holds its procedure
                            known[key] = (record, made)
                        stored += 1
        return stored, confirmed

    def _proposal_record(self, proposal: dict[str, Any], origin: Provenance) -> MemoryRecord | None:
        body = proposal["procedure"]
        steps = [Step.from_dict(s) for s in body.get("steps") or []]
        try:
            procedure = self.new_procedure(
                steps,
                outcome_score=CAPTURED_SCORE,
                domain=str(body.get("domain") or "coding"),
                trigger_pattern=body.get("trigger_pattern"),
                name=body.get("name"),
                status="captured",
                origin="capture",
                fingerprint=str(body.get("fingerprint") or "") or None,
            )
            record = self.procedure_record(procedure, proposal["namespace"], origin)
        except ValidationError as exc:
            log.warning("dropping a captured procedure %s: %s", proposal["id"], exc.message)
            return None
        record.id = proposal["id"]
        return record

    def _procedure(self, store, procedure_id: str) -> tuple[MemoryRecord, Procedure]:
        record = store.get(procedure_id, with_vector=True)
        procedure = None if record is None else Procedure.from_metadata(record.metadata)
        if record is None or record.memory_type != MEMORY_TYPE or procedure is None:
            raise MemoryNotFoundError(
                f"No procedure has id {procedure_id[:64]}. Use how_to to find procedures and their ids."
            )
        return record, procedure

    def _rewrite(self, store, record: MemoryRecord, procedure: Procedure, provenance: Provenance) -> MemoryRecord:
        metadata = check.metadata({**record.metadata, **procedure.as_metadata()}, self._settings)
        now = self._resources.clock()
        origin = provenance.but(session_id=record.conversation.session_id)
        new = replace(record, metadata=metadata, version=record.version + 1, updated_at=now, provenance=origin)
        store.rewrite(new, record, self._settings.max_versions)
        self._resources.upkeep.poke()
        return new

    # ---- reading ------------------------------------------------------------------------

    def how_to(
        self,
        task: str,
        *,
        domain: str | None = None,
        namespace: str | None = None,
        limit: int = 5,
        include_deprecated: bool = False,
    ) -> HowToResult:
        """Procedures for a task, best first: match to the task (meaning) times reliability."""
        task = check.query_text(task, field="task")
        if namespace is not None:
            namespace = check.namespace(namespace, self._settings)
        wanted = _label("domain", domain).lower() if domain is not None else None
        embedder = self._resources.embedder
        vector = embedder.embed_query(task)
        hits = self._resources.store().search(
            vector,
            max(limit * SEARCH_WIDTH, 20),
            procedure_filter(namespace),
            min_similarity=MIN_SIMILARITY,
        )
        # A read: decided on the store's own vectors, as recall ranks (embeddings/decisions.py).
        about = at_least(
            embedder,
            [h.similarity for h in hits],
            MIN_SIMILARITY,
            lambda k: (task, hits[k].record.content),
            redecide=False,
        )
        found: list[Scored] = []
        for hit in (h for h, ok in zip(hits, about.tolist(), strict=True) if ok):
            procedure = Procedure.from_metadata(hit.record.metadata)
            if procedure is None or (procedure.status == "deprecated" and not include_deprecated):
                continue
            if wanted is not None and procedure.domain.lower() != wanted:
                continue
            found.append(Scored(hit.record.id, hit.record.namespace, procedure, hit.similarity))
        found.sort(key=lambda s: -s.score)
        shown = found[:limit]
        items = [_item(s) for s in shown]
        mark_weak(items, [s.similarity for s in shown])  # by the match to the task, as recall's hits
        return HowToResult(procedures=items)

    def procedures(self, namespace: str | None = None) -> list[tuple[MemoryRecord, Procedure]]:
        """Every procedure the caller can read, in id order."""
        records = self._resources.store().scan(procedure_filter(namespace))
        pairs = [(r, Procedure.from_metadata(r.metadata)) for r in records]
        return sorted(((r, p) for r, p in pairs if p is not None), key=lambda pair: pair[0].id)

    def skills(self) -> list[SkillFile]:
        """The live procedures as skills, in URI order."""
        files = [skill_file(p, r.id, r.namespace) for r, p in self.procedures() if p.live]
        return sorted(files, key=lambda f: f.uri)

    def skill(self, name: str) -> SkillFile | None:
        """The live procedure a skill name stands for, as a skill; None when none does."""
        for record, procedure in self.procedures():
            if procedure.live and skill_name(procedure.name, record.id) == name:
                return skill_file(procedure, record.id, record.namespace)
        return None


def _item(scored: Scored) -> ProcedureItem:
    p = scored.procedure
    return ProcedureItem(
        procedure_id=scored.memory_id,
        name=p.name,
        steps=[StepItem(**s.as_dict()) for s in p.steps],
        success_rate=round(p.success_rate, 6),
        executions=p.executions,
        domain=p.domain,
        trigger_pattern=p.trigger_pattern,
        status=p.status,
        namespace=scored.namespace,
        score=round(scored.score, 6),
        pitfalls=[_pitfall(f) for f in reversed(p.failures)],
    )


def _pitfall(failure: Failure) -> str:
    where = f"step {failure.failed_step}" if failure.failed_step is not None else "a run"
    return f"{where}: {failure.error or 'failed'}" + (f" ({failure.context})" if failure.context else "")


def _label(field: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{field} must be a short non-empty label")
    value = " ".join(value.split())
    if len(value) > MAX_LABEL:
        raise ValidationError(f"{field} is {len(value)} characters; at most {MAX_LABEL}")
    return value


def _text(field: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{field} must be non-empty text when given")
    if len(value) > MAX_TEXT:
        raise ValidationError(f"{field} is {len(value):,} characters; at most {MAX_TEXT:,}")
    return value


def _same_session(record: MemoryRecord, proposal: dict[str, Any]) -> bool:
    """Whether a proposal comes from the session that last proposed or confirmed the procedure: a
    fix repeated within one session shows it was needed twice, not that it works elsewhere."""
    session = proposal.get("session_id")
    last = record.provenance.session_id if record.provenance is not None else None
    return bool(session) and session == last
