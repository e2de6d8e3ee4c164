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
            self.tools.append(tool)
            return fn

        return register
