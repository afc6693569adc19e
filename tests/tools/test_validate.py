"""Tool-call checks: ``parse_arguments`` (JSON object or ``invalid_tool_call``) and ``SchemaCache``
(``invalid_arguments`` naming the field path)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.conversation import ToolResult
from orchestrator.tools.validate import SchemaCache, parse_arguments

FINISH = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["success", "error", "needs_clarification"]},
        "summary": {"type": "string"},
        "artifacts": {"type": "array", "items": {"type": "string"}},
        "error": {
            "type": "object",
            "properties": {"kind": {"type": "string"}, "message": {"type": "string"}},
            "required": ["kind"],
        },
    },
    "required": ["status", "summary"],
    "additionalProperties": False,
}
EDIT = {
    "type": "object",
    "properties": {
        "operations": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "op": {"type": "string", "enum": ["drop", "strip_reasoning", "replace"]},
                    "range": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
                    "index": {"type": "integer"},
                },
                "required": ["op"],
            },
        }
    },
    "required": ["operations"],
}
CACHE = SchemaCache({"finish": FINISH, "edit_context": EDIT, "context_info": {"type": "object"}})


# --- parse_arguments -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [('{"a": 1}', {"a": 1}), (' {"a": [1, {"b": null}]} ', {"a": [1, {"b": None}]}), ("", {}), ("  \n", {})],
)
def test_a_json_object_or_nothing_parses(raw: str, expected: dict[str, Any]) -> None:
    assert parse_arguments(raw) == expected


@pytest.mark.parametrize("raw", ["{", "not json", '{"a": 1} trailing', "{'a': 1}", '{"a": NaN}', "\x00"])
def test_invalid_json_is_an_invalid_tool_call(raw: str) -> None:
    result = parse_arguments(raw)
    assert isinstance(result, ToolResult)
    assert result.kind == "invalid_tool_call"
    assert isinstance(result.message, str) and result.message.startswith("arguments are not valid JSON")
    assert result.details == {"arguments": raw}


def test_the_echoed_arguments_are_capped() -> None:
    result = parse_arguments("x" * 2000)
    assert isinstance(result, ToolResult) and result.details == {"arguments": "x" * 500}


@pytest.mark.parametrize(
    ("raw", "type_name"), [("[1, 2]", "list"), ('"s"', "str"), ("3", "int"), ("null", "NoneType"), ("true", "bool")]
)
def test_json_that_is_not_an_object_is_an_invalid_tool_call(raw: str, type_name: str) -> None:
    result = parse_arguments(raw)
    assert isinstance(result, ToolResult)
    assert result.kind == "invalid_tool_call"
    assert result.message == f"arguments must be a JSON object, got {type_name}"


def test_deeply_nested_arguments_are_an_invalid_tool_call() -> None:
    result = parse_arguments('{"a":' * 5000 + "1" + "}" * 5000)
    assert isinstance(result, ToolResult) and result.kind == "invalid_tool_call"


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@settings(deadline=None, max_examples=200)
@given(value=st.dictionaries(st.text(max_size=5), _json, max_size=4))
def test_any_json_object_parses_to_itself(value: dict[str, Any]) -> None:
    assert parse_arguments(json.dumps(value)) == value


@settings(deadline=None, max_examples=300)
@given(raw=st.text(max_size=40))
def test_any_text_parses_to_an_object_or_an_invalid_tool_call(raw: str) -> None:
    result = parse_arguments(raw)
    assert isinstance(result, dict) or result.kind == "invalid_tool_call"


# --- SchemaCache ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("finish", {"status": "success", "summary": "ok"}),
        ("finish", {"status": "error", "summary": "x", "artifacts": ["a"], "error": {"kind": "timeout"}}),
        ("edit_context", {"operations": [{"op": "drop", "range": [2, 4]}]}),
        ("context_info", {"anything": 1}),
        ("run_shell", {"no schema": "registered"}),
    ],
)
def test_valid_arguments_pass(tool: str, arguments: dict[str, Any]) -> None:
    assert CACHE.check(tool, arguments) is None


@pytest.mark.parametrize(
    ("tool", "arguments", "where", "fragment", "path"),
    [
        ("finish", {"status": "success"}, "(arguments)", "'summary' is a required property", []),
        ("finish", {"status": "done", "summary": "x"}, "status", "'done' is not one of", ["status"]),
        ("finish", {"status": "success", "summary": 3}, "summary", "3 is not of type 'string'", ["summary"]),
        (
            "finish",
            {"status": "success", "summary": "x", "artifacts": ["a", 2]},
            "artifacts/1",
            "not of type 'string'",
            ["artifacts", 1],
        ),
        (
            "finish",
            {"status": "error", "summary": "x", "error": {"kind": 1}},
            "error/kind",
            "not of type 'string'",
            ["error", "kind"],
        ),
        (
            "finish",
            {"status": "error", "summary": "x", "error": {}},
            "error",
            "'kind' is a required property",
            ["error"],
        ),
        ("finish", {"status": "success", "summary": "x", "extra": 1}, "(arguments)", "'extra' was unexpected", []),
        ("edit_context", {"operations": []}, "operations", "should be non-empty", ["operations"]),
        (
            "edit_context",
            {"operations": [{"op": "drop", "range": [2]}]},
            "operations/0/range",
            "is too short",
            ["operations", 0, "range"],
        ),
        (
            "edit_context",
            {"operations": [{"op": "cut"}]},
            "operations/0/op",
            "'cut' is not one of",
            ["operations", 0, "op"],
        ),
        (
            "edit_context",
            {"operations": [{"op": "replace", "index": 1.5}]},
            "operations/0/index",
            "not of type 'integer'",
            ["operations", 0, "index"],
        ),
    ],
)
def test_a_schema_violation_is_invalid_arguments_naming_the_field_path(
    tool: str, arguments: dict[str, Any], where: str, fragment: str, path: list[Any]
) -> None:
    result = CACHE.check(tool, arguments)
    assert result is not None
    assert result.kind == "invalid_arguments"
    assert isinstance(result.message, str)
    assert result.message.startswith(f"{where}: ")
    assert fragment in result.message
    assert result.details == {"path": path}
