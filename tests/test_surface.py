"""The MCP surface beyond the tools' success paths: strict arguments, resources, prompts, capabilities."""

from __future__ import annotations

import json

import pytest

from .conftest import data

pytestmark = pytest.mark.anyio


async def _tools(client) -> dict:
    return {t.name: t for t in (await client.list_tools()).tools}


async def test_every_schema_refuses_additional_properties(client):
    for name, tool in (await _tools(client)).items():
        schema = tool.input_schema
        assert schema.get("additionalProperties") is False, name
        for definition_name, definition in schema.get("$defs", {}).items():
            if definition.get("type") == "object" and "properties" in definition:
                assert definition.get("additionalProperties") is False, (name, definition_name)


async def test_a_misspelt_argument_is_refused_by_name_on_every_tool(client):
    for name, tool in (await _tools(client)).items():
        accepted = list(tool.input_schema["properties"])
        misspelt = accepted[0] + "x"
        result = await client.call_tool(name, {misspelt: 1})
        body = data(result)
        assert body["error"] == "ValidationError", (name, body)
        message = body["message"]
        assert f"'{misspelt}'" in message and f"did you mean '{accepted[0]}'" in message, (name, message)
        assert f"of {name}" in message and all(arg in message for arg in accepted), (name, message)


async def test_a_misspelt_tool_name_gets_a_suggestion(client):
    body = data(await client.call_tool("recal", {"query": "x"}))
    assert body["error"] == "ValidationError"
    assert body["message"].startswith("Unknown tool: recal (did you mean 'recall'?); tools: remember, "), body
    body = data(await client.call_tool("zzz", {}))
    assert body["message"].startswith("Unknown tool: zzz; tools: ") and "did you mean" not in body["message"]


async def test_a_misspelt_filter_is_not_silently_dropped(client):
    await client.call_tool("remember", {"content": "a fact about work", "namespace": "work"})
    await client.call_tool("remember", {"content": "a fact about home", "namespace": "home"})
    body = data(await client.call_tool("recall", {"query": "fact", "namespce": "work"}))
    assert body["error"] == "ValidationError"
    assert "'namespce' (did you mean 'namespace'?) is not an argument of recall" in body["message"]


async def test_an_unknown_field_of_a_batch_item_is_refused_with_the_accepted_fields(client):
    result = await client.call_tool("remember_batch", {"memories": [{"content": "a"}, {"content": "b", "tag": ["x"]}]})
    body = data(result)
    assert body["error"] == "ValidationError"
    assert "'tag' (did you mean 'tags'?) is not a field of memories.1" in body["message"], body
    assert "content, namespace, tags, importance, metadata" in body["message"]
    assert data(await client.call_tool("namespaces", {}))["total_memories"] == 0  # nothing stored


async def test_capabilities_advertise_what_is_served(client):
    capabilities = client.server_capabilities
    assert capabilities.tools is not None
    assert capabilities.resources is not None and capabilities.prompts is not None
    assert capabilities.completions is not None
    resources = (await client.list_resources()).resources
    templates = (await client.list_resource_templates()).resource_templates
    prompts = (await client.list_prompts()).prompts
    assert {str(r.uri) for r in resources} == {"memory://stats", "memory://namespaces", "ui://spatial-memory/atlas"}
    assert {t.uri_template for t in templates} == {
        "memory://{namespace}/recent",
        "memory://memory/{memory_id}",
        "skill://spatial-memory/{name}/SKILL.md",
    }
    assert capabilities.extensions == {"io.modelcontextprotocol/skills": {}}
    assert {p.name for p in prompts} == {"recall_for_task", "review_tag", "save_session_summary"}


async def test_resources_read_the_store(client):
    first = data(await client.call_tool("remember", {"content": "older note", "namespace": "work"}))
    second = data(await client.call_tool("remember", {"content": "newer note", "namespace": "work"}))
    await client.call_tool("remember", {"content": "elsewhere", "namespace": "home"})

    def body(result) -> dict:
        (content,) = result.contents
        assert content.mime_type == "application/json"
        return json.loads(content.text)

    stats = body(await client.read_resource("memory://stats"))
    assert stats["total_memories"] == 3 and stats["memories_by_namespace"] == {"work": 2, "home": 1}
    names = body(await client.read_resource("memory://namespaces"))
    assert {n["name"] for n in names["namespaces"]} == {"work", "home"}
    recent = body(await client.read_resource("memory://work/recent"))
    assert [m["id"] for m in recent["memories"]] == [second["id"], first["id"]]
    assert recent["total_in_namespace"] == 2
    one = body(await client.read_resource(f"memory://memory/{first['id']}"))
    assert one["content"] == "older note" and one["namespace"] == "work" and one["source"] == "manual"


async def test_reading_a_missing_memory_is_a_clear_error(client):
    from mcp.shared.exceptions import MCPError

    with pytest.raises(MCPError, match="MemoryNotFoundError: Memory not found"):
        await client.read_resource("memory://memory/00000000-0000-4000-8000-000000000000")
    with pytest.raises(MCPError, match="ValidationError: invalid namespace"):
        await client.read_resource("memory://bad%20name!/recent")


async def test_prompts_render(client):
    recall = await client.get_prompt("recall_for_task", {"task": "migrate the billing service", "namespace": "work"})
    text = recall.messages[0].content.text
    assert "migrate the billing service" in text and 'namespace="work"' in text and "`recall`" in text
    summary = await client.get_prompt("save_session_summary", {})
    assert "remember_batch" in summary.messages[0].content.text
    review = await client.get_prompt("review_tag", {"tag": "billing", "namespace": "work"})
    text = review.messages[0].content.text
    assert 'tags=["billing"], namespace="work"' in text and "`update_memory`" in text and "`forget`" in text


async def test_namespace_and_tag_arguments_complete_from_the_store(client):
    from mcp.types import PromptReference, ResourceTemplateReference

    async def complete(ref, name, value, context=None):
        return (await client.complete(ref, {"name": name, "value": value}, context)).completion

    review, recent = PromptReference(name="review_tag"), ResourceTemplateReference(uri="memory://{namespace}/recent")
    empty = await complete(review, "tag", "")  # an empty store (opened by the completion itself)
    assert empty.values == [] and empty.total == 0 and empty.has_more is False
    memories = [
        {"content": "deploy on fridays", "namespace": "Work", "tags": ["deploy", "DB"]},
        {"content": "db is postgres", "namespace": "work-archive", "tags": ["db"]},
        {"content": "the cat eats at six", "namespace": "home", "tags": ["cat", "Deploy"]},
        {"content": "postgres upgrade", "namespace": "Work", "tags": ["DB"]},
    ]
    assert not (await client.call_tool("remember_batch", {"memories": memories})).is_error

    # Prefix-matched, case-insensitive, the most used first.
    assert (await complete(recent, "namespace", "w")).values == ["Work", "work-archive"]
    assert (await complete(PromptReference(name="recall_for_task"), "namespace", "")).values == [
        "Work",
        "home",
        "work-archive",
    ]
    tags = await complete(review, "tag", "d")
    assert tags.values == ["DB", "Deploy", "db", "deploy"] and tags.total == 4 and tags.has_more is False
    # The namespace already chosen narrows the tags.
    assert (await complete(review, "tag", "", {"namespace": "home"})).values == ["Deploy", "cat"]
    # A write shows at once (the names are cached per table version).
    await client.call_tool("remember", {"content": "new", "namespace": "work-new", "tags": ["dbx"]})
    assert (await complete(recent, "namespace", "WORK-N")).values == ["work-new"]
    assert (await complete(review, "tag", "dbx")).values == ["dbx"]
    # Other arguments and references complete to nothing.
    assert (await complete(review, "namespacex", "")).values == []
    assert (await complete(ResourceTemplateReference(uri="memory://memory/{memory_id}"), "memory_id", "")).values == []


async def test_completion_stops_at_100_values_and_says_there_are_more(client):
    from mcp.types import PromptReference

    memories = [{"content": f"note {i}", "tags": [f"t{i:03d}"]} for i in range(105)]
    assert not (await client.call_tool("remember_batch", {"memories": memories})).is_error
    found = (await client.complete(PromptReference(name="review_tag"), {"name": "tag", "value": "T"})).completion
    assert len(found.values) == 100 and found.total == 105 and found.has_more is True
    assert found.values == sorted(found.values)  # as often used: alphabetical


def test_names_confined_to_namespaces(tmp_path):
    """The one method completions use, with the namespace restriction a confined principal gets:
    nothing named outside those namespaces, neither a namespace nor a tag."""
    from spatial_memory.config import Settings
    from spatial_memory.records import NewMemory
    from spatial_memory.runtime.resources import Resources
    from spatial_memory.server.app import App

    from .hash_embedder import HashEmbedder

    settings = Settings(path=tmp_path / "store", preload=False)
    app = App(Resources(settings, HashEmbedder()))
    try:
        for content, namespace, tags in [
            ("a one", "alpha", ["shared", "alpha-only"]),
            ("a two", "alpha", ["shared"]),
            ("b one", "beta", ["shared", "beta-only"]),
            ("g one", "gamma", ["gamma-only"]),
        ]:
            app.memory.remember(NewMemory(content, namespace, tags=tags))
        names = app.vocabulary.names
        assert names("namespace").values == ["alpha", "beta", "gamma"]
        assert names("namespace", namespaces={"beta", "alpha", "nowhere"}).values == ["alpha", "beta"]
        assert names("namespace", "b", namespaces={"alpha"}).values == []
        assert names("tag", namespaces={"beta", "gamma"}).values == ["beta-only", "gamma-only", "shared"]
        assert names("tag", "shared", namespaces={"alpha", "beta"}).values == ["shared"]
        nothing = names("tag", namespaces=set())
        assert nothing.values == [] and nothing.total == 0 and nothing.has_more is False
    finally:
        app.resources.close(settings.lock_timeout_seconds)
