"""MCP prompts: ready-made requests a user can pick in a client's prompt menu."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field


def register_prompts(server: MCPServer) -> None:
    @server.prompt(
        name="recall_for_task",
        description="Recall what the memory holds that matters for a task, before starting it.",
    )
    def recall_for_task(
        task: Annotated[str, Field(description="The task about to be done.")],
        namespace: Annotated[str | None, Field(description="Only this namespace (default: all).")] = None,
    ) -> str:
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
        namespace: Annotated[str, Field(description="Namespace to store the memories in.")] = "default",
    ) -> str:
        return (
            "Summarise this session for my memory. Write one memory per decision, learned fact, preference, "
            "solved problem (with its fix) and open question, each a self-contained sentence that will make "
            "sense months from now without this conversation. Store them with one `remember_batch` call "
            f'(namespace="{namespace}", tags naming the topic, importance 0.7-0.9 for decisions and '
            "preferences, 0.5 otherwise). Skip anything already stored: check with `recall` first."
        )
