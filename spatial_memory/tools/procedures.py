"""Procedures: how tasks are done, learned from trajectories that worked and from every run since.

Module-level typed functions: the signature is the input schema, the docstring the description.
"""

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

from ..limits import MAX_ID_CHARS, MAX_QUERY_CHARS, MAX_RESULTS
from ..services.procedure_results import BuildSkillResult, DeprecateSkillResult, ExecuteSkillResult, HowToResult
from ..services.procedures import MAX_LABEL, MAX_STEPS, MAX_TEXT
from .calls import ADDITIVE, CHANGING, READ_ONLY, call, provenance
from .registry import ToolSet

Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]
Label = Annotated[str, Field(min_length=1, max_length=MAX_LABEL)]
ProcedureId = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]
Namespace = Annotated[str, Field(min_length=1)]


class TrajectoryStep(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: Text
    tool: Label | None = None
    parameters: dict[str, Any] | None = None
    result: Text | None = None


async def build_skill(
    trajectory: Annotated[list[TrajectoryStep], Field(min_length=1, max_length=MAX_STEPS)],
    outcome_score: Annotated[float, Field(ge=0.0, le=1.0)],
    domain: Annotated[Label, Field(description="e.g. coding, devops, research.")],
    ctx: Context,
    trigger_pattern: Annotated[Text | None, Field(description="When to use it.")] = None,
    name: Label | None = None,
    namespace: Namespace = "default",
) -> Annotated[CallToolResult, BuildSkillResult]:
    """Store the steps that accomplished a task as a reusable procedure, served to clients as a skill.
    how_to finds procedures for a task; report each later run with execute_skill."""
    from ..procedures.model import Step

    steps = [Step(s.action, s.tool, s.parameters, s.result) for s in trajectory]
    origin = provenance(ctx, "build_skill")
    return await _skills_changed(
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


async def how_to(
    task: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)],
    ctx: Context,
    domain: Label | None = None,
    namespace: Namespace | None = None,
    limit: Annotated[int, Field(ge=1, le=MAX_RESULTS)] = 5,
    include_deprecated: bool = False,
) -> Annotated[CallToolResult, HowToResult]:
    """Procedures for a task, best first: by match to the task and success rate over their runs."""
    return await call(
        ctx,
        lambda app: app.procedures.how_to(
            task, domain=domain, namespace=namespace, limit=limit, include_deprecated=include_deprecated
        ),
    )


async def execute_skill(
    procedure_id: ProcedureId,
    success: bool,
    ctx: Context,
    error: Text | None = None,
    failed_step: Annotated[int | None, Field(ge=1)] = None,
    context: Text | None = None,
) -> Annotated[CallToolResult, ExecuteSkillResult]:
    """Record a run of a procedure; failures become pitfalls. Returns its success_rate and executions."""
    origin = provenance(ctx, "execute_skill")
    return await _skills_changed(
        ctx,
        lambda app: app.procedures.execute_skill(
            procedure_id, success=success, error=error, failed_step=failed_step, context=context, provenance=origin
        ),
    )


async def deprecate_skill(
    procedure_id: ProcedureId, reason: Text, ctx: Context
) -> Annotated[CallToolResult, DeprecateSkillResult]:
    """Retire a procedure: kept in history, hidden from how_to and skills."""
    origin = provenance(ctx, "deprecate_skill")
    return await _skills_changed(
        ctx, lambda app: app.procedures.deprecate_skill(procedure_id, reason=reason, provenance=origin)
    )


async def _skills_changed(ctx: Context, fn: Any) -> CallToolResult:
    """`call`, then (when it changed a procedure) notifications/resources/list_changed: the skills
    served (server/skills.py) and their digests changed."""
    result = await call(ctx, fn)
    if not result.is_error:
        try:
            await ctx.session.send_resource_list_changed()
        except Exception:  # noqa: BLE001 - a notification is best effort; the change is stored
            pass
    return result


def register(tools: ToolSet, _arguments: Any = None) -> None:
    tools.tool(ADDITIVE)(build_skill)
    tools.tool(READ_ONLY)(how_to)
    tools.tool(CHANGING)(execute_skill)
    tools.tool(CHANGING)(deprecate_skill)
