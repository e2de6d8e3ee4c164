"""The lean model-visible text of tool results (tools/lean.py), the short ids every tool accepts
back, and recall's weak hits (algorithms/relevance.py), through a real MCP client session."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pydantic import BaseModel, Field

from spatial_memory.algorithms.relevance import WEAK_RULE, WeakRule, weak_hits
from spatial_memory.services.results import (
    Cluster,
    ClusterSample,
    HowToResult,
    MemoryItem,
    NamespaceItem,
    NamespacesResult,
    ProcedureItem,
    RecallResult,
    RegionsResult,
    StepItem,
)
from spatial_memory.tools.lean import is_short_id, lean, rounded

from .conftest import call, data, settings_at
from .hash_embedder import HashEmbedder

pytestmark = pytest.mark.anyio

FULL = "0f8e2d4c-1b2a-4c3d-9e8f-a1b2c3d4e5f6"


def item(**changes) -> MemoryItem:
    fields = dict(
        id=FULL,
        content="Deploys go out on Fridays",
        similarity=0.4123456,
        namespace="default",
        tags=[],
        importance=0.5,
        created_at="2026-11-27T10:11:12.123456Z",
        metadata={},
    )
    return MemoryItem(**{**fields, **changes})


def test_defaults_and_empties_are_left_out_numbers_rounded_times_to_the_second_ids_short():
    shown = lean(RecallResult(memories=[item()], total=1))
    assert shown == {
        "memories": [
            {
                "id": FULL[:8],
                "content": "Deploys go out on Fridays",
                "similarity": 0.41,
                "created_at": "2026-11-27T10:11:12Z",
            }
        ]
    }
    # Whatever differs from the defaults is shown; user metadata as it is (a UUID in it stays whole).
    other = lean(item(namespace="work", importance=0.9, tags=["ops"], pinned=True, metadata={"ref": FULL}))
    assert other["namespace"] == "work" and other["importance"] == 0.9 and other["tags"] == ["ops"]
    assert other["pinned"] is True and other["metadata"] == {"ref": FULL}
    # A client's session label is sent back as it is.
    assert lean(item(session_id=FULL))["session_id"] == FULL
    # An empty answer still reads as one.
    assert lean(RecallResult(memories=[], total=0)) == {"memories": []}


def test_structured_memories_leave_out_what_holds_its_default():
    """The structured result (what clients check against the schema) leaves out a memory's optional
    fields at their schema default; whatever is set is there, a sequence of 0 too."""
    plain = item().model_dump(mode="json")
    assert set(plain) == {"id", "content", "similarity", "namespace", "tags", "importance", "created_at", "metadata"}
    told = item(session_id="s", sequence=0, speaker="Ann", pinned=True, weak=True).model_dump(mode="json")
    assert (told["session_id"], told["sequence"], told["speaker"], told["pinned"], told["weak"]) == (
        "s",
        0,
        "Ann",
        True,
        True,
    )
    schema = MemoryItem.model_json_schema(mode="serialization")
    assert set(schema["required"]) == set(plain)  # what is left out is optional, with its default
    assert all(schema["properties"][name]["default"] in (None, False) for name in set(told) - set(plain))


def test_a_weak_hit_is_named_by_its_id_and_content_and_marked():
    assert lean(item(weak=True, namespace="work", importance=0.9)) == {
        "id": FULL[:8],
        "content": "Deploys go out on Fridays",
        "weak": True,
    }


def test_dates_references_ordinals_and_fields_for_programs():
    spans = lean(
        NamespacesResult(
            namespaces=[
                NamespaceItem(
                    name="a", memory_count=3, oldest_memory="2026-01-02T03:04:05Z", newest_memory="2026-01-02T09:00:00Z"
                )
            ],
            total_namespaces=1,
            total_memories=3,
        )
    )
    # A day field to the day; a span within one day given once; a count of the list beside it left out.
    assert spans == {
        "namespaces": [{"name": "a", "memory_count": 3, "oldest_memory": "2026-01-02"}],
        "total_memories": 3,
    }
    sample = ClusterSample(id=FULL, content="pizza dough rests overnight", similarity=0.91)
    regions = lean(
        RegionsResult(
            clusters=[
                Cluster(
                    cluster_id=0,
                    size=4,
                    keywords=["pizza"],
                    representative_memory=sample,
                    sample_memories=[sample],
                    coherence=0.8,
                )
            ],
            total_memories=4,
            noise_count=0,
            clustering_quality=0.123456,
        )
    )
    (cluster,) = regions["clusters"]
    assert "cluster_id" not in cluster  # its place in the list
    # A memory shown by id and content alone is one string; the similarity to the centroid is for programs.
    assert cluster["representative_memory"] == f"{FULL[:8]}: pizza dough rests overnight"
    # The samples beside it by id alone (BY_ID): get_memories reads them.
    assert cluster["sample_memories"] == [FULL[:8]]
    assert regions["clustering_quality"] == 0.12


def test_procedure_steps_read_as_one_string_where_unambiguous_and_a_weak_procedure_is_named_only():
    steps = [
        StepItem(action="run the test suite", tool="bash", result="all green"),
        StepItem(action="build the image", tool="bash", parameters={"tag": "v2"}),
        StepItem(action="deploy"),
        StepItem(action="call f(x)", tool="python"),  # ends with ")": would read as its tool
        StepItem(action="a -> b", result="c"),  # holds the separator
    ]
    found = ProcedureItem(
        procedure_id=FULL,
        name="deploying",
        steps=steps,
        success_rate=1.0,
        domain="devops",
        namespace="default",
        score=0.6,
    )
    weak = found.model_copy(update={"weak": True, "name": "baking"})
    shown = lean(HowToResult(procedures=[found, weak]))
    strong, faint = shown["procedures"]
    assert strong["steps"] == [
        "run the test suite (bash) -> all green",
        {"action": "build the image", "tool": "bash", "parameters": {"tag": "v2"}},
        "deploy",
        {"action": "call f(x)", "tool": "python"},
        {"action": "a -> b", "result": "c"},
    ]
    assert "score" not in strong and "weak" not in strong  # a ranking number: the order says it
    assert faint == {"procedure_id": FULL[:8], "name": "baking", "weak": True}


_MADE: list[int] = []  # the calls of _Counted's default factory


class _Counted(BaseModel):
    tags: list[str] = Field(default_factory=lambda: _MADE.append(1) or [])


def test_each_fields_default_is_looked_up_once_per_result_type():
    items = [_Counted(tags=["x"]) for _ in range(5)]
    assert _MADE == []  # a given value calls no factory
    assert [lean(i) for i in items] == [{"tags": ["x"]}] * 5
    assert len(_MADE) <= 1  # once for the type, not once per item


def test_rounding_keeps_what_a_number_means():
    assert [rounded(x) for x in (0.123456, 3.14159, 45.678, 1234.5, 0.0034, 1.0, -0.5)] == [
        0.12,
        3.14,
        45.7,
        1234,
        0.0034,
        1,
        -0.5,
    ]
    assert is_short_id(FULL[:8]) and is_short_id(FULL[:20]) and not is_short_id(FULL)
    assert not is_short_id("abc") and not is_short_id("not-hex!")


def test_the_weak_rule_marks_hits_below_the_floor_or_far_below_the_best():
    rule = WeakRule(floor=0.2, ratio=0.5)
    assert weak_hits([0.6, 0.35, 0.25, 0.19], rule) == [False, False, True, True]
    assert weak_hits([0.18, 0.15], rule) == [True, True]  # nothing relevant: all weak
    assert weak_hits([], WEAK_RULE) == []


async def test_results_show_short_ids_that_every_id_tool_accepts_back(client):
    stored = await client.call_tool(
        "remember_batch", {"memories": [{"content": f"note {i} about deploys"} for i in range(4)]}
    )
    ids = data(stored)["ids"]
    assert json.loads(stored.content[0].text)["ids"] == [i[:8] for i in ids]
    short = [i[:8] for i in ids]
    got = await call(client, "get_memories", memory_ids=short)
    assert [m["id"] for m in got["memories"]] == ids and got["not_found"] == []
    longer = await call(client, "get_memories", memory_ids=[ids[0][:12]])  # any prefix of 4 or more
    assert [m["id"] for m in longer["memories"]] == ids[:1]
    near = await call(client, "nearby", memory_id=short[0], limit=2)
    assert near["reference"]["id"] == ids[0]
    updated = await call(client, "update_memory", memory_id=short[1], importance=0.9)
    assert updated["memory"]["id"] == ids[1]
    related = await call(client, "relate", source_id=short[0], target_id=short[2], relation="follows")
    assert related["relation"]["source_id"] == ids[0] and related["relation"]["target_id"] == ids[2]
    forgotten = await call(client, "forget", memory_id=short[3])
    assert forgotten["ids"] == [ids[3]]
    # An id that begins no memory's id is reported as unknown, as it was given.
    missing = await call(client, "get_memories", memory_ids=["ffffffff"])
    assert missing["not_found"] == ["ffffffff"] or "ffffffff" in ids[0]


async def test_a_short_id_beginning_several_memories_is_a_typed_error(client, settings):
    folder = settings.allowed_import_dirs[0]
    folder.mkdir(parents=True, exist_ok=True)
    twins = [f"abcd1234-0000-4000-8000-00000000000{n}" for n in (1, 2)]
    rows = [{"id": i, "content": f"twin {n}"} for n, i in enumerate(twins)]
    (folder / "twins.json").write_text(json.dumps(rows), encoding="utf-8")
    imported = await call(
        client, "import_memories", source_path="twins.json", dry_run=False, regenerate_embeddings=True
    )
    assert imported["memories_imported"] == 2 and imported["new_ids_assigned"] == 0
    result = await client.call_tool("get_memories", {"memory_ids": ["abcd1234"]})
    body = data(result)
    assert result.is_error and body["error"] == "AmbiguousIdError"
    assert twins[0] in body["message"] and twins[1] in body["message"]
    assert "send more of it" in body["message"]
    # Enough of it to tell them apart resolves.
    one = await call(client, "get_memories", memory_ids=[twins[1][:-4] + "0002"])
    assert [m["id"] for m in one["memories"]] == [twins[1]]


class _Aimed(HashEmbedder):
    """Vectors chosen for how_to's weak rule: a text naming "sourdough" sits at cosine 0.22 from
    one naming "deploy" (above how_to's 0.2 floor, below 0.3 x the best match)."""

    def _one(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dimension, dtype=np.float32)
        if "deploy" in text.lower():
            vec[0] = 1.0
        elif "sourdough" in text.lower():
            vec[0], vec[1] = 0.22, float(np.sqrt(1 - 0.22**2))
        else:
            vec[2] = 1.0
        return vec


async def test_how_to_shows_steps_as_strings_and_marks_a_weak_procedure(tmp_path: Path):
    from mcp import Client

    from spatial_memory.server.app import create_server

    async with Client(create_server(settings_at(tmp_path / "s"), embedder=_Aimed())) as client:
        for trigger, steps in (
            ("deploy a release", [{"action": "run the test suite", "tool": "bash", "result": "all green"}]),
            ("bake sourdough", [{"action": "feed the starter", "parameters": {"grams": 50}}]),
        ):
            built = await client.call_tool(
                "build_skill", {"trajectory": steps, "outcome_score": 1.0, "domain": "d", "trigger_pattern": trigger}
            )
            assert not built.is_error, built.content[0].text
        result = await client.call_tool("how_to", {"task": "deploy to production"})
        whole = result.structured_content["procedures"]
        assert [p["weak"] for p in whole] == [False, True] and all("score" in p for p in whole)
        strong, faint = json.loads(result.content[0].text)["procedures"]
        assert strong["steps"] == ["run the test suite (bash) -> all green"] and "score" not in strong
        assert faint == {"procedure_id": whole[1]["procedure_id"][:8], "name": "bake sourdough", "weak": True}


async def test_a_memory_resource_takes_the_short_id_results_show(client, settings):
    from mcp.shared.exceptions import MCPError

    stored = await call(client, "remember", content="the staging database is Postgres")
    short = json.loads((await client.call_tool("recall", {"query": "staging database"})).content[0].text)
    assert short["memories"][0]["id"] == stored["id"][:8]
    (content,) = (await client.read_resource(f"memory://memory/{stored['id'][:8]}")).contents
    assert json.loads(content.text)["id"] == stored["id"]
    with pytest.raises(MCPError, match="MemoryNotFoundError"):
        await client.read_resource("memory://memory/ffffffff")
    folder = settings.allowed_import_dirs[0]
    folder.mkdir(parents=True, exist_ok=True)
    twins = [f"abcd1234-0000-4000-8000-00000000000{n}" for n in (1, 2)]
    (folder / "twins.json").write_text(json.dumps([{"id": i, "content": f"twin {i}"} for i in twins]), "utf-8")
    await call(client, "import_memories", source_path="twins.json", dry_run=False, regenerate_embeddings=True)
    with pytest.raises(MCPError, match="AmbiguousIdError: The id 'abcd1234' begins 2"):
        await client.read_resource("memory://memory/abcd1234")


async def test_short_ids_resolve_against_the_store_as_it_is_after_each_write(client):
    # The ids are read once per table version: a write in between must be seen.
    first = await call(client, "remember", content="the first note")
    assert [m["id"] for m in (await call(client, "get_memories", memory_ids=[first["id"][:8]]))["memories"]] == [
        first["id"]
    ]
    second = await call(client, "remember", content="a second, later note")
    got = await call(client, "get_memories", memory_ids=[first["id"][:8], second["id"][:8]])
    assert [m["id"] for m in got["memories"]] == [first["id"], second["id"]]
    await call(client, "forget", memory_id=second["id"][:8])
    gone = await call(client, "get_memories", memory_ids=[second["id"][:8]])
    assert gone["memories"] == [] and gone["not_found"] == [second["id"][:8]]
