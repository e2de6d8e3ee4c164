"""Procedures: how tasks are done, learned from trajectories that worked and from every run since."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

from ..limits import MAX_PROCEDURE_LABEL, MAX_PROCEDURE_TEXT, MAX_TRAJECTORY_STEPS
from ..procedures.model import Step
from ..services.results.procedures import BuildSkillResult, DeprecateSkillResult, ExecuteSkillResult, HowToResult
from .calls import ADDITIVE, CHANGING, READ_ONLY, call, provenance
from .registry import tool
from .types import Context, Limit, MemoryId, Namespace, NamespaceFilter, Query, Unlisted

Note = Annotated[str, Unlisted(MAX_PROCEDURE_TEXT)]
Name = Annotated[str, Unlisted(MAX_PROCEDURE_LABEL)]


class TrajectoryStep(BaseModel):
    # One step of a trajectory (unknown keys refused). No docstring: it would be the items'
    # description in build_skill's schema.
    model_config = ConfigDict(extra="forbid")

    action: Note
    tool: Name | None = None
    parameters: dict[str, Any] | None = None
    result: Note | None = None


@tool(ADDITIVE)
async def build_skill(
    trajectory: Annotated[list[TrajectoryStep], Field(min_length=1, max_length=MAX_TRAJECTORY_STEPS)],
    outcome_score: Annotated[float, Field(ge=0, le=1)],
    domain: Name,
    ctx: Context,
    trigger_pattern: Note | None = None,
    name: Name | None = None,
    namespace: Namespace = "default",
) -> Annotated[CallToolResult, BuildSkillResult]:
    """Store the steps that did a task as a procedure, served to clients as a skill. domain: a short label
    (coding, devops...); trigger_pattern: when to use it. Find them with how_to; report runs with
    execute_skill."""
    steps = [Step(s.action, s.tool, s.parameters, s.result) for s in trajectory]
    origin = provenance(ctx, "build_skill")
    return await call(
        ctx,
        lambda app: app.procedures.build_skill(
            steps,
            outcome_score=outcome_score,
            domain=domain,
            trigger_pattern=trigger_pattern,
            name=name,
            namespace=namespace,
            provenance=origin,
        ),
    )


@tool(READ_ONLY)
async def how_to(
    task: Query,
    ctx: Context,
    domain: Name | None = None,
    namespace: NamespaceFilter = None,
    limit: Limit = 5,
    include_deprecated: bool = False,
) -> Annotated[CallToolResult, HowToResult]:
    """Procedures for a task, best first: by match to the task and success rate over their runs."""
    return await call(
        ctx,
        lambda app: app.procedures.how_to(
            task, domain=domain, namespace=namespace, limit=limit, include_deprecated=include_deprecated
        ),
    )


@tool(CHANGING)
async def execute_skill(
    procedure_id: MemoryId,
    success: bool,
    ctx: Context,
    error: Note | None = None,
    failed_step: Annotated[int, Field(ge=1)] | None = None,
    context: Note | None = None,
) -> Annotated[CallToolResult, ExecuteSkillResult]:
    """Record a run of a procedure; failures become pitfalls. Returns its success_rate and executions."""
    origin = provenance(ctx, "execute_skill")
    return await call(
        ctx,
        lambda app: app.procedures.execute_skill(
            procedure_id, success=success, error=error, failed_step=failed_step, context=context, provenance=origin
        ),
    )


@tool(CHANGING)
async def deprecate_skill(
    procedure_id: MemoryId, reason: Note, ctx: Context
) -> Annotated[CallToolResult, DeprecateSkillResult]:
    """Retire a procedure: kept in history, hidden from how_to and skills."""
    origin = provenance(ctx, "deprecate_skill")
    return await call(ctx, lambda app: app.procedures.deprecate_skill(procedure_id, reason=reason, provenance=origin))


TOOLS = (build_skill, how_to, execute_skill, deprecate_skill)
