"""Results of the procedure tools: build_skill, how_to, execute_skill, deprecate_skill."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from .visibility import FOR_PROGRAMS


class StepItem(BaseModel):
    action: str
    tool: str | None = None
    parameters: dict[str, Any] | None = None
    result: str | None = None


class BuildSkillResult(BaseModel):
    procedure_id: str
    name: str
    status: str = Field(description="live (served as a skill) or captured (awaiting a successful run).")
    skill_uri: str


class ProcedureItem(BaseModel):
    procedure_id: str
    name: str
    steps: list[StepItem]
    success_rate: float
    executions: int = 0
    domain: str
    trigger_pattern: str | None = None
    status: str = Field(default="live", description="live, captured (awaiting a successful run) or deprecated.")
    namespace: str
    score: Annotated[float, FOR_PROGRAMS] = Field(description="Match to the task, weighted by reliability.")
    pitfalls: list[str] = Field(default_factory=list, description="What failed in earlier runs, newest first.")
    weak: bool = Field(
        default=False, description="Far below the best match or the relevance floor, so likely not for this task."
    )


class HowToResult(BaseModel):
    procedures: list[ProcedureItem]


class ExecuteSkillResult(BaseModel):
    procedure_id: str
    success_rate: float
    executions: int
    status: str


class DeprecateSkillResult(BaseModel):
    procedure_id: str
    status: str
    reason: str | None = None
