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
