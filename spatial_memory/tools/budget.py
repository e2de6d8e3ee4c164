"""What the tool list costs a model: the context budget of issue 38.

Every client puts each listed tool's name, description and input schema, and the server's
instructions, into the model's context in every conversation. Output schemas are for clients
(they validate results) and are not counted. Tokens are estimated as characters / 4, the way the
reference implementation's list was measured.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

# The reference implementation 1.11.4's 25 tools, measured the same way: the most ours may cost,
# every tool listed (SPATIAL_MEMORY_TOOLS=all), the tools still to come included.
BUDGET_TOKENS = 4_840


def model_visible_chars(tools: Iterable[Any], instructions: str | None) -> int:
    """Characters of the model-visible part of a tools/list answer (the SDK's Tool objects) and the
    server's instructions, as compact JSON."""
    listed = [{"name": t.name, "description": t.description or "", "inputSchema": t.input_schema} for t in tools]
    return len(json.dumps(listed, ensure_ascii=False, separators=(",", ":"))) + len(instructions or "")


def tokens(chars: int) -> int:
    return round(chars / 4)
