"""The Skills extension (SEP-2640, `io.modelcontextprotocol/skills`): live procedures served as
Agent Skills.

`skills/list` and `skills/get` answer with each skill's entry (frontmatter verbatim, its one file
with SHA-256 digest and size); `resources/read` of `skill://spatial-memory/<name>/SKILL.md` returns
exactly the bytes the digest covers. The Python SDK has no helper for the extension: its two
methods are request handlers on the low-level server (an SDK Extension binding), the file a
resource template. Everything runs in a worker thread on the caller's App, so a team server's
principal sees only the procedures of its namespaces; the cache scope is private for that reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import anyio
import mcp_types
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.shared.exceptions import MCPError
from pydantic import Field

from ..auth.principal import current_scope
from ..errors import SpatialMemoryError
from ..procedures.skill_file import FILE, MIME, PREFIX, name_of_uri
from ..tools.calls import in_worker
from .subscriptions import ResourceWatch, watch_skills_listed

EXTENSION_ID = "io.modelcontextprotocol/skills"
# How long a host may use a listing or an entry before asking again: a procedure's success rate
# changes with every run, and a stale entry only costs the host one more skills/get.
TTL_MS = 60_000
CACHE_SCOPE = "private"  # what a principal may see depends on who asks
PAGE_SIZE = 100
TEMPLATE = PREFIX + "{name}/" + FILE


class GetSkillParams(mcp_types.RequestParams):
    uri: str = Field(max_length=4_096)


async def _in_app(app: Any, fn: Callable[[Any], Any]) -> Any:
    scoped = app.for_scope(current_scope())
    return await anyio.to_thread.run_sync(in_worker(fn), scoped, abandon_on_cancel=True)


async def list_skills(ctx: Any, params: mcp_types.PaginatedRequestParams) -> dict[str, Any]:
    files = await _in_app(ctx.lifespan_context, lambda app: app.procedures.skills())
    start = 0
    if params.cursor is not None:  # the cursor is the last URI of the previous page (URIs sort)
        start = next((i for i, f in enumerate(files) if f.uri > params.cursor), len(files))
    page = files[start : start + PAGE_SIZE]
    result: dict[str, Any] = {"skills": [f.entry() for f in page], "ttlMs": TTL_MS, "cacheScope": CACHE_SCOPE}
    if start + PAGE_SIZE < len(files):
        result["nextCursor"] = page[-1].uri
    return result


async def get_skill(ctx: Any, params: GetSkillParams) -> dict[str, Any]:
    name = name_of_uri(params.uri)
    found = None
    if name is not None:
        found = await _in_app(ctx.lifespan_context, lambda app: app.procedures.skill(name))
    if found is None:
        raise MCPError(mcp_types.INVALID_PARAMS, f"No skill is served at {params.uri[:300]}; skills/list lists them")
    return {"skill": found.entry(), "ttlMs": TTL_MS, "cacheScope": CACHE_SCOPE}


class SkillsExtension(Extension):
    """The extension's two methods; a session that lists the skills is watched (`watch`) and told
    when they change."""

    identifier = EXTENSION_ID

    def __init__(self, watch: ResourceWatch) -> None:
        self._watch = watch

    async def list_skills(self, ctx: Any, params: mcp_types.PaginatedRequestParams) -> dict[str, Any]:
        result = await list_skills(ctx, params)
        await watch_skills_listed(self._watch, ctx)
        return result

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("skills/list", mcp_types.PaginatedRequestParams, self.list_skills),
            MethodBinding("skills/get", GetSkillParams, get_skill),
        )


def register_skill_files(server: Any) -> None:
    """`resources/read` of a skill's SKILL.md: the same bytes skills/list digests."""

    @server.resource(TEMPLATE, name="skill", description="A live procedure as an Agent Skill.", mime_type=MIME)
    async def skill(name: str) -> str:
        app = server.app
        if app is None:
            raise ResourceError("the server is not running")
        try:
            found = await _in_app(app, lambda scoped: scoped.procedures.skill(name))
        except SpatialMemoryError as exc:
            raise ResourceError(f"{exc.error_type}: {exc.message}") from exc
        if found is None:
            raise ResourceNotFoundError(f"No skill is served at {PREFIX}{name[:200]}/{FILE}")
        return found.text
