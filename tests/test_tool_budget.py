"""The context budget (issue 38): what the tool list costs a model, measured from a real tools/list."""

from __future__ import annotations

import pytest
from mcp import Client

from spatial_memory.config import Settings
from spatial_memory.server.app import create_server
from spatial_memory.tool_profiles import TOOL_NAMES
from spatial_memory.tools.budget import BUDGET_TOKENS, model_visible_chars, tokens

pytestmark = pytest.mark.anyio


async def _listing(settings: Settings) -> tuple[list, str | None]:
    async with Client(create_server(settings)) as client:
        return (await client.list_tools()).tools, client.instructions


async def test_every_tool_listed_costs_at_most_the_budget(tmp_path):
    tools, instructions = await _listing(Settings(path=tmp_path, preload=False))
    assert [t.name for t in tools] == list(TOOL_NAMES) and instructions
    cost = tokens(model_visible_chars(tools, instructions))
    assert cost <= BUDGET_TOKENS, f"the tool list costs {cost:,} tokens; the budget is {BUDGET_TOKENS:,}"


async def test_the_figure_counts_names_descriptions_input_schemas_and_instructions(tmp_path):
    tools, instructions = await _listing(Settings(path=tmp_path, preload=False, tools="forget"))
    (forget,) = tools
    bare = model_visible_chars(tools, None)
    assert model_visible_chars(tools, instructions) == bare + len(instructions)
    longer = forget.model_copy(update={"description": forget.description + "x" * 400})
    assert model_visible_chars([longer], None) == bare + 400  # 100 tokens more
    schema = {**forget.input_schema, "properties": {**forget.input_schema["properties"], "x": {"type": "string"}}}
    assert model_visible_chars([forget.model_copy(update={"input_schema": schema})], None) > bare
    # Output schemas are for clients: not counted.
    assert model_visible_chars([forget.model_copy(update={"output_schema": None})], None) == bare


async def test_the_shared_filter_parameters_read_the_same_in_every_tool(tmp_path):
    """recall's filters are defined once (services/recall_filters.py): every tool taking one lists it alike."""
    tools, _ = await _listing(Settings(path=tmp_path, preload=False))
    schemas = {t.name: t.input_schema["properties"] for t in tools}
    for name in ("namespace", "tags", "filters", "min_similarity", "since", "until", "as_of"):
        assert schemas["recall"][name] == schemas["hybrid_recall"][name], name
    for name in ("namespace", "filters"):
        assert schemas["forget"][name] == schemas["recall"][name], name
