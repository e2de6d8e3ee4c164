"""Filter building: typed values, allow-listed columns, escaped literals."""

from __future__ import annotations

import pytest

from spatial_memory.errors import ValidationError
from spatial_memory.storage.filters import MetadataCondition, build_filter, metadata_matches, quote


def test_quote_doubles_single_quotes():
    assert quote("x' OR '1'='1") == "'x'' OR ''1''=''1'"
    with pytest.raises(ValidationError):
        quote("nul\x00byte")


def test_namespace_tags_and_ids_combine_with_and():
    flt = build_filter(namespace="a'b", tags=["t1", "t'2"], ids=["i1"])
    assert flt.sql == "(namespace = 'a''b') AND (array_has_any(tags, ['t1', 't''2'])) AND (id IN ('i1'))"
    assert build_filter().sql is None
    assert build_filter(ids=[]).sql == "(false)"


@pytest.mark.parametrize(
    ("filters", "sql"),
    [
        ({"importance": {"gte": 0.5}}, "(importance >= 0.5)"),
        ({"access_count": {"lt": 3}}, "(access_count < 3)"),
        ({"source": "manual"}, "(source = 'manual')"),
        ({"namespace": {"in": ["a", "b'c"]}}, "(namespace IN ('a', 'b''c'))"),
        ({"namespace": {"nin": ["a"]}}, "(namespace NOT IN ('a'))"),
        ({"tags": {"contains": "x"}}, "(array_contains(tags, 'x'))"),
        ({"tags": {"nin": ["x"]}}, "(NOT array_has_any(tags, ['x']))"),
        ({"content": {"contains": "50%_off"}}, "(content LIKE '%50\\%\\_off%' ESCAPE '\\')"),
        (
            {"created_at": {"gt": "2026-01-01T00:00:00Z"}},
            "(created_at > CAST('2026-01-01 00:00:00.000000' AS TIMESTAMP))",
        ),
    ],
)
def test_operators_render_typed_literals(filters, sql):
    assert build_filter(filters=filters).sql == sql


@pytest.mark.parametrize(
    "filters",
    [
        {"vector": 1},
        {"importance; DROP": 1},
        {"importance": {"gte": "0.5 OR 1=1"}},
        {"importance": {"gte": float("nan")}},
        {"importance": {"gte": True}},
        {"namespace": {"in": "abc"}},
        {"namespace": {"in": []}},
        {"namespace": {"regex": ".*"}},
        {"namespace": 5},
        {"created_at": {"gt": "yesterday"}},
        {"importance": {"contains": "x"}},
        {"metadata.": 1},
    ],
)
def test_bad_filters_are_rejected(filters):
    with pytest.raises(ValidationError):
        build_filter(filters=filters)


def test_metadata_conditions_are_checked_in_python():
    flt = build_filter(filters={"metadata.team": "core", "metadata.size.n": {"gt": 2}})
    assert flt.sql is None
    assert flt.metadata == [MetadataCondition("team", "eq", "core"), MetadataCondition("size.n", "gt", 2)]
    assert metadata_matches({"team": "core", "size": {"n": 3}}, flt.metadata)
    assert not metadata_matches({"team": "core", "size": {"n": 1}}, flt.metadata)
    assert not metadata_matches({"team": "core"}, flt.metadata)
    assert metadata_matches({}, [MetadataCondition("x", "ne", 1)])
    assert not metadata_matches({"x": "a"}, [MetadataCondition("x", "gt", 1)])
    assert metadata_matches({"x": ["a", "b"]}, [MetadataCondition("x", "contains", "a")])


def test_a_date_alone_as_an_upper_bound_covers_that_whole_day():
    end = "CAST('2023-06-01 23:59:59.999999' AS TIMESTAMP)"
    assert build_filter(until="2023-06-01").sql == f"(COALESCE(occurred_at, created_at) <= {end})"
    assert build_filter(filters={"occurred_at": {"lte": "2023-06-01"}}).sql == f"(occurred_at <= {end})"
    assert build_filter(filters={"occurred_at": {"gt": "2023-06-01"}}).sql == f"(occurred_at > {end})"
    start = "CAST('2023-06-01 00:00:00.000000' AS TIMESTAMP)"
    assert build_filter(since="2023-06-01").sql == f"(COALESCE(occurred_at, created_at) >= {start})"
    assert build_filter(filters={"occurred_at": {"lt": "2023-06-01"}}).sql == f"(occurred_at < {start})"
    with pytest.raises(ValidationError, match="ISO 8601"):
        build_filter(until="2023-02-30")


def test_since_after_until_is_an_error_not_an_empty_answer():
    with pytest.raises(ValidationError, match="since .* is after until"):
        build_filter(since="2024-01-01", until="2023-12-31")
    assert build_filter(since="2023-12-31", until="2023-12-31").sql  # one whole day


@pytest.mark.anyio
async def test_since_and_until_through_a_client_take_a_date_as_a_whole_day(client):
    from .conftest import data

    items = [
        {"content": "moving to Berlin", "occurred_at": "2023-06-01T18:00:00Z"},
        {"content": "moving to Lisbon", "occurred_at": "2023-06-02T09:00:00Z"},
    ]
    assert not (await client.call_tool("remember_batch", {"memories": items})).is_error
    for tool in ("recall", "hybrid_recall"):
        body = data(await client.call_tool(tool, {"query": "moving", "until": "2023-06-01"}))
        assert [m["content"] for m in body["memories"]] == ["moving to Berlin"]
        body = data(await client.call_tool(tool, {"query": "moving", "since": "2023-06-02", "until": "2023-06-02"}))
        assert [m["content"] for m in body["memories"]] == ["moving to Lisbon"]
        wrong = await client.call_tool(tool, {"query": "moving", "since": "2023-06-02", "until": "2023-06-01"})
        assert wrong.is_error and data(wrong)["error"] == "ValidationError"
        assert "is after until" in data(wrong)["message"]


def test_long_id_lists_are_cut_into_in_lists_of_at_most_the_limit_with_quoted_keys():
    from spatial_memory.storage.filters import MAX_LIST_VALUES, any_in, chunks

    keys = [f"k{i}" for i in range(2 * MAX_LIST_VALUES + 1)] + ["it's"]
    assert [len(c) for c in chunks(keys)] == [MAX_LIST_VALUES, MAX_LIST_VALUES, 2]
    clauses = list(any_in(("a_id", "b_id"), keys))
    assert len(clauses) == 3
    assert clauses[-1] == "a_id IN ('k2000', 'it''s') OR b_id IN ('k2000', 'it''s')"
    assert list(any_in(("a_id",), [])) == []
