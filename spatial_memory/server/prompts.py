"""MCP prompts: ready-made requests a user can pick in a client's prompt menu.

On a team server a prompt naming a namespace its principal may not use is refused
(PermissionDeniedError, its message listing the namespaces it may use), as a tool call would be.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import Field

from ..auth.principal import current_scope
from ..errors import PermissionDeniedError

DEFAULT_NAMESPACE = "default"


def _permitted(check: Callable[[str], None], namespace: str) -> str:
    try:
        check(namespace)
    except PermissionDeniedError as exc:  # an MCPError keeps its message (the SDK hides any other's)
        raise MCPError(code=INVALID_PARAMS, message=f"{exc.error_type}: {exc.message}") from None
    return namespace


def _readable(namespace: str | None) -> str | None:
    scope = current_scope()
    if scope is None or namespace is None:
        return namespace
    return _permitted(scope.check_read, namespace)


def _writable(namespace: str | None) -> str:
    """The namespace to store in: the one asked for, else "default", or on a team server the
    principal's first writable namespace."""
    scope = current_scope()
    if scope is None:
        return namespace or DEFAULT_NAMESPACE
    if namespace is None:
        namespace = next((p for p in scope.writable if not p.endswith("*")), DEFAULT_NAMESPACE)
    return _permitted(scope.check_write, namespace)


def register_prompts(server: MCPServer) -> None:
    @server.prompt(
        name="recall_for_task",
        description="Recall what the memory holds that matters for a task, before starting it.",
    )
    def recall_for_task(
        task: Annotated[str, Field(description="The task about to be done.")],
        namespace: Annotated[str | None, Field(description="Only this namespace (default: all).")] = None,
    ) -> str:
        namespace = _readable(namespace)
        scope = f' with namespace="{namespace}"' if namespace else ""
        return (
            f"Before working on this task, find what my memory already holds about it.\n\nTask: {task}\n\n"
            f"Call `recall`{scope} with two or three short queries for the task's main subjects (names, "
            "components, decisions), and `hybrid_recall` for exact terms such as identifiers or error messages. "
            "Then summarise the relevant memories (decisions, constraints, preferences, known problems and their "
            "fixes) in a few bullet points, quoting memory ids, and say what the memory does not cover."
        )

    @server.prompt(
        name="save_session_summary",
        description="Store a summary of this session: decisions, facts learned, open questions.",
    )
    def save_session_summary(
        namespace: Annotated[
            str | None, Field(description='Namespace to store the memories in (default: "default").')
        ] = None,
    ) -> str:
        namespace = _writable(namespace)
        return (
            "Summarise this session for my memory. Write one memory per decision, learned fact, preference, "
            "solved problem (with its fix) and open question, each a self-contained sentence that will make "
            "sense months from now without this conversation. Store them with one `remember_batch` call "
            f'(namespace="{namespace}", tags naming the topic, importance 0.7-0.9 for decisions and '
            "preferences, 0.5 otherwise). Skip anything already stored: check with `recall` first."
        )
