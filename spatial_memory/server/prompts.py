"""MCP prompts: ready-made requests a user can pick in a client's prompt menu.

A prompt names only tools the server lists (SPATIAL_MEMORY_TOOLS), and is left out when the
tool it rests on is not listed. Its `namespace` and `tag` arguments complete from the store
(completions.py). On a team server a prompt naming a namespace its principal may not use is
refused (PermissionDeniedError, its message listing the namespaces it may use), as a tool call
would be.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import Field

from ..auth.principal import current_scope
from ..errors import PermissionDeniedError

DEFAULT_NAMESPACE = "default"
REVIEW_LIMIT = 50
OnlyNamespace = Annotated[str | None, Field(description="Only this namespace (default: all).")]


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


def _one_of(tool_names: Collection[str], *preferred: str) -> str | None:
    return next((name for name in preferred if name in tool_names), None)


def register_prompts(server: MCPServer, tool_names: Collection[str]) -> None:
    has_hybrid = "hybrid_recall" in tool_names
    store = _one_of(tool_names, "remember_batch", "remember")
    fixes = " and ".join(f"`{name}`" for name in ("update_memory", "forget") if name in tool_names)

    if "recall" in tool_names:

        @server.prompt(
            name="recall_for_task",
            description="Recall what the memory holds that matters for a task, before starting it.",
        )
        def recall_for_task(
            task: Annotated[str, Field(description="The task about to be done.")],
            namespace: OnlyNamespace = None,
        ) -> str:
            namespace = _readable(namespace)
            scope = f' with namespace="{namespace}"' if namespace else ""
            exact = (
                ", and `hybrid_recall` for exact terms such as identifiers or error messages"
                if has_hybrid
                else "; add exact terms such as identifiers or error messages to a query"
            )
            return (
                f"Before working on this task, find what my memory already holds about it.\n\nTask: {task}\n\n"
                f"Call `recall`{scope} with two or three short queries for the task's main subjects (names, "
                f"components, decisions){exact}. "
                "Then summarise the relevant memories (decisions, constraints, preferences, known problems and their "
                "fixes) in a few bullet points, quoting memory ids, and say what the memory does not cover."
            )

        @server.prompt(
            name="review_tag",
            description="Review what the memory holds under a tag: summarise it, and find stale, duplicate or "
            "contradicting memories.",
        )
        def review_tag(
            tag: Annotated[str, Field(description="The tag to review.")],
            namespace: OnlyNamespace = None,
        ) -> str:
            namespace = _readable(namespace)
            scope = f', namespace="{namespace}"' if namespace else ""
            action = (
                f"and propose the fix for each ({fixes}), applying none until I confirm"
                if fixes
                else "and say which should be corrected or deleted"
            )
            return (
                f'Review what my memory holds under the tag "{tag}".\n\n'
                f'Call `recall` with tags=["{tag}"]{scope}, limit={REVIEW_LIMIT}, and the tag itself as the query '
                "(then one or two queries for the subjects you find, to catch memories the first call missed). "
                "Summarise what these memories say in a few bullet points, quoting memory ids. Then list the ones "
                f"that look outdated, duplicated or contradict each other, {action}."
            )

    if store is not None:
        how = "with one `remember_batch` call" if store == "remember_batch" else "with one `remember` call each"
        check = " Skip anything already stored: check with `recall` first." if "recall" in tool_names else ""

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
                f"sense months from now without this conversation. Store them {how} "
                f'(namespace="{namespace}", tags naming the topic, importance 0.7-0.9 for decisions and '
                f"preferences, 0.5 otherwise).{check}"
            )
