"""A procedure as its memory holds it: the steps of a trajectory that worked, and what running it
since has taught (executions, successes, the failures and where they happened).

The whole procedure lives in the memory's metadata under PROCEDURE_KEY, so it is versioned,
exported, imported and confined to namespaces like any memory; the memory's content is the text
`how_to` matches a task against (name, trigger, the steps' actions).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any

from ..records import iso

PROCEDURE_KEY = "procedure"
TAG = "procedure"
# live: served as a skill and found by how_to; captured: proposed by the hooks at low confidence,
# found by how_to but not served until it succeeds again or is confirmed; deprecated: kept (and in
# history), hidden from both unless asked.
STATUSES = ("live", "captured", "deprecated")
# The trajectory that built a procedure counts as one run scored outcome_score; the reliability
# how_to ranks by pulls that rate toward an even chance with EVIDENCE_PRIOR runs' weight, so a
# procedure proven over many runs outranks one that worked once.
EVIDENCE_PRIOR = 2.0
KEPT_FAILURES = 10
KEPT_SEEN = 50


@dataclass(frozen=True)
class Step:
    action: str
    tool: str | None = None
    parameters: dict[str, Any] | None = None
    result: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, value: Any) -> Step:
        value = value if isinstance(value, dict) else {}
        text = lambda key: value[key] if isinstance(value.get(key), str) else None  # noqa: E731
        parameters = value.get("parameters")
        return cls(
            action=text("action") or "",
            tool=text("tool"),
            parameters=parameters if isinstance(parameters, dict) else None,
            result=text("result"),
        )


@dataclass(frozen=True)
class Failure:
    at: str
    error: str | None = None
    failed_step: int | None = None
    context: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class Procedure:
    name: str
    domain: str
    steps: tuple[Step, ...]
    outcome_score: float
    trigger_pattern: str | None = None
    executions: int = 0
    successes: int = 0
    last_run: str | None = None
    last_verified: str | None = None
    failures: tuple[Failure, ...] = ()
    status: str = "live"
    deprecated_reason: str | None = None
    origin: str = "build_skill"  # or "capture"
    fingerprint: str | None = None  # what capture saw (the same fix seen again confirms it)
    seen: tuple[str, ...] = ()  # the captures that confirmed it (each counted once)

    @property
    def success_rate(self) -> float:
        """Successful runs over runs, the building trajectory counted as one run scored outcome_score."""
        return (self.outcome_score + self.successes) / (1 + self.executions)

    @property
    def reliability(self) -> float:
        """The success rate shrunk toward 0.5 by EVIDENCE_PRIOR runs: more runs, more weight."""
        return (self.outcome_score + self.successes + EVIDENCE_PRIOR / 2) / (1 + self.executions + EVIDENCE_PRIOR)

    @property
    def live(self) -> bool:
        return self.status == "live"

    def ran(self, success: bool, at: datetime, failure: Failure | None) -> Procedure:
        """This procedure after one more run; a success confirms a captured one."""
        failures = self.failures if failure is None else (*self.failures, failure)[-KEPT_FAILURES:]
        when = iso(at)
        status = "live" if success and self.status == "captured" else self.status
        return replace(
            self,
            executions=self.executions + 1,
            successes=self.successes + int(success),
            last_run=when,
            last_verified=when if success else self.last_verified,
            failures=failures,
            status=status,
        )

    def as_metadata(self) -> dict[str, Any]:
        body = asdict(self)
        body["steps"] = [s.as_dict() for s in self.steps]
        body["failures"] = [f.as_dict() for f in self.failures]
        body["seen"] = list(self.seen)
        return {PROCEDURE_KEY: {k: v for k, v in body.items() if v is not None}}

    @classmethod
    def from_metadata(cls, metadata: Any) -> Procedure | None:
        """The procedure a memory's metadata holds, or None when it holds none."""
        body = metadata.get(PROCEDURE_KEY) if isinstance(metadata, dict) else None
        if not isinstance(body, dict) or not isinstance(body.get("steps"), list):
            return None
        number = lambda key, default: body[key] if isinstance(body.get(key), (int, float)) else default  # noqa: E731
        text = lambda key: body[key] if isinstance(body.get(key), str) else None  # noqa: E731
        failures = tuple(
            Failure(
                at=str(f.get("at", "")),
                error=f.get("error") if isinstance(f.get("error"), str) else None,
                failed_step=f.get("failed_step") if isinstance(f.get("failed_step"), int) else None,
                context=f.get("context") if isinstance(f.get("context"), str) else None,
            )
            for f in body.get("failures") or []
            if isinstance(f, dict)
        )
        status = text("status")
        return cls(
            name=text("name") or "procedure",
            domain=text("domain") or "general",
            steps=tuple(Step.from_dict(s) for s in body["steps"]),
            outcome_score=min(1.0, max(0.0, float(number("outcome_score", 0.5)))),
            trigger_pattern=text("trigger_pattern"),
            executions=max(0, int(number("executions", 0))),
            successes=max(0, int(number("successes", 0))),
            last_run=text("last_run"),
            last_verified=text("last_verified"),
            failures=failures,
            status=status if status in STATUSES else "live",
            deprecated_reason=text("deprecated_reason"),
            origin=text("origin") or "build_skill",
            fingerprint=text("fingerprint"),
            seen=tuple(i for i in body.get("seen") or [] if isinstance(i, str)),
        )

    def content(self) -> str:
        """The memory's text, what a task is matched against: name, trigger, then the actions."""
        head = self.name if not self.trigger_pattern else f"{self.name}: {self.trigger_pattern}"
        actions = " ".join(f"{i}. {s.action}" for i, s in enumerate(self.steps, 1))
        return f"How to {head}. Steps: {actions}"


def procedure_tags(domain: str) -> list[str]:
    return [TAG, domain]


@dataclass
class Scored:
    """A procedure how_to found: its memory id, the procedure, how well it matches the task."""

    memory_id: str
    namespace: str
    procedure: Procedure
    similarity: float
    score: float = field(init=False)

    def __post_init__(self) -> None:
        # Relevance first; reliability scales it from half to whole (a proven procedure that matches
        # a little less can still come first, an unrelated one never does).
        self.score = self.similarity * (0.5 + 0.5 * self.procedure.reliability)
