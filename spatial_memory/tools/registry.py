"""Collecting tool functions into the SDK's Tool objects, with strict argument schemas."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations


class ToolSet:
    """The tools of one server, in registration order. Docstrings become descriptions (dedented)."""

    def __init__(self) -> None:
        self.tools: list[Tool] = []

    def tool(self, annotations: ToolAnnotations) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            tool = Tool.from_function(fn, description=inspect.cleandoc(fn.__doc__ or ""), annotations=annotations)
            # Unknown arguments are refused (the server checks them by name): say so in the schema.
            tool.parameters["additionalProperties"] = False
            # Pydantic titles every schema ("Memory Ids" for memory_ids): they tell a model nothing
            # and were a sixth of tools/list, which every client sends the model on every turn.
            tool.parameters = without_titles(tool.parameters)
            if tool.fn_metadata.output_schema is not None:
                tool.fn_metadata.output_schema = without_titles(tool.fn_metadata.output_schema)
            self.tools.append(tool)
            return fn

        return register


def read_only_names(tools: list[Tool]) -> set[str]:
    """The names of the tools annotated readOnlyHint (they never change the store)."""
    return {tool.name for tool in tools if tool.annotations is not None and tool.annotations.read_only_hint}


def without_titles(schema: Any) -> Any:
    """A JSON schema without its "title" annotations (a property named title is kept)."""
    if isinstance(schema, dict):
        return {k: without_titles(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [without_titles(item) for item in schema]
    return schema
