"""Output schemas in their plain form (tools/registry.py plain_output_schema): the same results
accepted and refused as by pydantic's form, for every tool, with no `anyOf` of a type and null
and no `$ref` to a definition used once left in what tools/list publishes."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from spatial_memory.config import Settings
from spatial_memory.tools import build_tools
from spatial_memory.tools.registry import plain_output_schema, without_titles

TOOLS = build_tools(Settings())
PYDANTIC_FORMS = {
    tool.name: without_titles(tool.fn_metadata.output_model.model_json_schema())
    for tool in TOOLS
    if tool.fn_metadata.output_model is not None
}


def _validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    return jsonschema.validators.validator_for(schema)(schema)


def _nullable_any_of(node: Any) -> bool:
    if isinstance(node, dict):
        if any(branch == {"type": "null"} for branch in node.get("anyOf", [])):
            return True
        return any(_nullable_any_of(v) for v in node.values())
    return isinstance(node, list) and any(_nullable_any_of(v) for v in node)


def test_every_tool_has_an_output_model():
    assert len(PYDANTIC_FORMS) == len(TOOLS)


@pytest.mark.parametrize("name", sorted(PYDANTIC_FORMS))
def test_published_output_schema_is_the_plain_form(name):
    published = next(t for t in TOOLS if t.name == name).output_schema
    assert published == plain_output_schema(PYDANTIC_FORMS[name])
    assert not _nullable_any_of(published)
    text = json.dumps(published)
    for definition in published.get("$defs", {}):
        assert text.count(f'"#/$defs/{definition}"') >= 2, f"{definition} is used once: written in place"
    _validator(published).check_schema(published)


def _examples(node: Any, defs: dict[str, Any], depth: int = 0) -> list[Any]:
    """A few values a schema accepts: each anyOf branch, each type of a type list, arrays empty and
    with one item, objects with their required properties only and with every property."""
    if depth > 6:
        return []
    if "$ref" in node:
        return _examples(defs[node["$ref"].rsplit("/", 1)[-1]], defs, depth + 1)
    if "anyOf" in node:
        return [x for branch in node["anyOf"] for x in _examples(branch, defs, depth + 1)]
    if "enum" in node:
        return [node["enum"][0]]
    kinds = node.get("type", "object")
    out: list[Any] = []
    for kind in kinds if isinstance(kinds, list) else [kinds]:
        if kind == "null":
            out.append(None)
        elif kind == "string":
            out.append("s")
        elif kind in ("integer", "number"):
            low, high = node.get("minimum", 0), node.get("maximum", 10)
            out.append(low if kind == "integer" else (low + high) / 2)
        elif kind == "boolean":
            out.append(True)
        elif kind == "array":
            items = _examples(node.get("items", {"type": "string"}), defs, depth + 1)
            out += [[]] + [[item] for item in items[:3]]
        elif kind == "object":
            props = {k: _examples(v, defs, depth + 1) for k, v in node.get("properties", {}).items()}
            required = node.get("required", [])
            out.append({k: props[k][0] for k in required if props.get(k)})
            out.append({k: v[-1] for k, v in props.items() if v} or {"key": 1})
    return out


def _mutants(value: Any) -> list[Any]:
    """The value with one leaf (or one whole member) replaced by a value of another kind, each way."""
    others = [None, "x", 1.5, -1, True, {}, []]
    if isinstance(value, dict):
        return [{**value, key: m} for key, member in value.items() for m in [*others, *_mutants(member)] if m != member]
    if isinstance(value, list) and value:
        return [[m, *value[1:]] for m in [*others, *_mutants(value[0])] if m != value[0]]
    return []


@pytest.mark.parametrize("name", sorted(PYDANTIC_FORMS))
def test_plain_and_pydantic_forms_accept_the_same_results(name):
    pydantic_form = PYDANTIC_FORMS[name]
    plain, strict = _validator(plain_output_schema(pydantic_form)), _validator(pydantic_form)
    values = _examples(pydantic_form, pydantic_form.get("$defs", {}))
    assert any(strict.is_valid(v) for v in values), name
    checked = 0
    for value in values:
        for candidate in [value, *_mutants(value)]:
            assert plain.is_valid(candidate) == strict.is_valid(candidate), (name, candidate)
            checked += 1
    assert checked > 20, name


def test_plain_form_refuses_what_pydantic_refuses():
    schema = PYDANTIC_FORMS["recall"]
    plain = _validator(plain_output_schema(schema))
    strict = _validator(schema)
    hit = {
        "id": "a",
        "content": "b",
        "similarity": 0.5,
        "namespace": "default",
        "tags": [],
        "importance": 0.5,
        "created_at": "2026-01-01T00:00:00Z",
        "metadata": {},
    }
    cases = [
        {"memories": [hit], "total": 1},
        {"memories": [{**hit, "session_id": None, "sequence": None, "context": None}], "total": 1, "expanded": None},
        {"memories": [{**hit, "sequence": "3"}], "total": 1},  # a string where an integer or null goes
        {"memories": [{**hit, "similarity": 1.5}], "total": 1},  # above the maximum
        {"memories": [{**hit, "context": [{"id": "c"}]}], "total": 1},  # a context entry missing its fields
        {"memories": [{**hit, "context": {}}], "total": 1},  # an object where a list or null goes
        {"memories": [], "total": None},  # null where only an integer goes
        {"memories": [], "total": 0, "expanded": [{"id": "x"}]},
    ]
    for case in cases:
        assert plain.is_valid(case) == strict.is_valid(case), case
    assert [plain.is_valid(case) for case in cases] == [True, True, False, False, False, False, False, False]


def test_a_definition_used_twice_stays_a_reference_and_annotations_of_the_place_win():
    schema = {
        "$defs": {
            "Point": {"description": "A point.", "properties": {"x": {"type": "number"}}, "type": "object"},
            "Once": {"description": "Used once.", "properties": {"y": {"type": "integer"}}, "type": "object"},
            "Small": {"maximum": 10, "type": "integer"},
            "Self": {"properties": {"next": {"anyOf": [{"$ref": "#/$defs/Self"}, {"type": "null"}]}}, "type": "object"},
        },
        "properties": {
            "a": {"$ref": "#/$defs/Point"},
            "b": {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}], "default": None},
            "c": {"$ref": "#/$defs/Once", "description": "This field's own words."},
            "d": {"$ref": "#/$defs/Self"},
            "e": {"anyOf": [{"enum": ["x", "y"], "type": "string"}, {"type": "null"}]},
            "f": {"$ref": "#/$defs/Small", "maximum": 5},  # the place narrows the definition: both apply
        },
        "type": "object",
    }
    plain = plain_output_schema(schema)
    assert set(plain["$defs"]) == {"Point", "Self"}
    assert plain["properties"]["a"] == {"$ref": "#/$defs/Point"}
    assert plain["properties"]["b"]["anyOf"][0] == {"$ref": "#/$defs/Point"}  # a reference cannot take null in
    assert plain["properties"]["c"] == {
        "description": "This field's own words.",
        "properties": {"y": {"type": "integer"}},
        "type": "object",
    }
    assert plain["properties"]["e"] == schema["properties"]["e"]  # null is not among the enum's values
    valid = _validator(plain)
    assert valid.is_valid({"a": {"x": 1}, "b": None, "c": {"y": 2}, "d": {"next": {"next": None}}, "e": None})
    assert not valid.is_valid({"c": {"y": "2"}})
    assert not valid.is_valid({"d": {"next": {"next": 3}}})
    assert plain["properties"]["f"] == {"allOf": [{"maximum": 10, "type": "integer"}], "maximum": 5}
    assert valid.is_valid({"f": 4})
    assert not valid.is_valid({"f": 7}) and not valid.is_valid({"f": "4"})
