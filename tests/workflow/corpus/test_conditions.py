"""Structured conditions and the `when` dialect: semantics, errors, and property tests against a reference."""

from __future__ import annotations

import math
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.workflow.corpus import (
    Condition,
    WhenSyntaxError,
    comparable_number,
    condition_variables,
    evaluate_condition,
    evaluate_when,
    evaluate_when_text,
    parse_when,
    render_condition,
    render_when,
    when_variables,
)
from orchestrator.workflow.corpus.conditions import WhenAnd, WhenCompare, WhenLiteral, WhenNot, WhenOr, WhenPath


def cond(data: dict[str, Any]) -> Condition:
    return msgspec.convert(data, Condition)  # type: ignore[arg-type]


# ---- structured conditions ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("condition", "bag", "expected"),
    [
        ({"type": "simple", "variable": "a", "operator": "==", "value": True}, {"a": True}, True),
        ({"type": "simple", "variable": "a", "operator": "==", "value": True}, {"a": 1}, False),
        ({"type": "simple", "variable": "a", "operator": "==", "value": 1}, {"a": 1.0}, True),
        ({"type": "simple", "variable": "a", "operator": "==", "value": "1"}, {"a": 1}, False),
        ({"type": "simple", "variable": "a", "operator": "==", "value": None}, {}, False),
        ({"type": "simple", "variable": "a", "operator": "==", "value": None}, {"a": None}, True),
        ({"type": "simple", "variable": "a", "operator": "!=", "value": None}, {}, True),
        ({"type": "simple", "variable": "a.b", "operator": "==", "value": "x"}, {"a": {"b": "x"}}, True),
        ({"type": "simple", "variable": "a.b", "operator": "exists"}, {"a": "str"}, False),
        ({"type": "simple", "variable": "a.1", "operator": "==", "value": 5}, {"a": [4, 5]}, True),
        ({"type": "simple", "variable": "a", "operator": "exists"}, {"a": None}, False),
        ({"type": "simple", "variable": "a", "operator": "exists"}, {"a": False}, True),
        ({"type": "simple", "variable": "a", "operator": "notExists"}, {}, True),
        ({"type": "simple", "variable": "a", "operator": ">", "value": 2}, {"a": "3"}, True),
        ({"type": "simple", "variable": "a", "operator": ">", "value": "2"}, {"a": 3}, True),
        ({"type": "simple", "variable": "a", "operator": ">=", "value": 2}, {"a": " 2 "}, True),
        ({"type": "simple", "variable": "a", "operator": "<", "value": 2}, {"a": ""}, False),
        ({"type": "simple", "variable": "a", "operator": "<", "value": 2}, {"a": True}, False),
        ({"type": "simple", "variable": "a", "operator": "<", "value": 2}, {"a": None}, False),
        ({"type": "simple", "variable": "a", "operator": "<", "value": 2}, {}, False),
        ({"type": "simple", "variable": "a", "operator": "<=", "value": 2}, {"a": "0x2"}, True),
        ({"type": "simple", "variable": "a", "operator": "<", "value": 2}, {"a": "1e0"}, True),
        ({"type": "simple", "variable": "a", "operator": ">", "value": 2}, {"a": "Infinity"}, False),
        ({"type": "simple", "variable": "a", "operator": ">", "value": 2}, {"a": float("inf")}, False),
        ({"type": "simple", "variable": "a", "operator": "<", "value": 2}, {"a": "1_0"}, False),
        (
            {
                "type": "and",
                "conditions": [
                    {"type": "simple", "variable": "a", "operator": "exists"},
                    {"type": "simple", "variable": "b", "operator": "exists"},
                ],
            },
            {"a": 1},
            False,
        ),
        (
            {
                "type": "or",
                "conditions": [
                    {"type": "simple", "variable": "a", "operator": "exists"},
                    {"type": "simple", "variable": "b", "operator": "exists"},
                ],
            },
            {"a": 1},
            True,
        ),
        ({"type": "not", "condition": {"type": "simple", "variable": "a", "operator": "exists"}}, {}, True),
    ],
)
def test_structured_condition_semantics(condition: dict[str, Any], bag: dict[str, Any], expected: bool) -> None:
    assert evaluate_condition(cond(condition), bag) is expected


def test_condition_schema_is_closed_and_bounded() -> None:
    with pytest.raises(msgspec.ValidationError, match="extra"):
        cond({"type": "simple", "variable": "a", "operator": "==", "extra": 1})
    with pytest.raises(msgspec.ValidationError):
        cond({"type": "and", "conditions": [{"type": "simple", "variable": "a", "operator": "exists"}]})
    with pytest.raises(msgspec.ValidationError):
        cond({"type": "simple", "variable": "a", "operator": "~="})


def test_render_condition() -> None:
    nested = cond(
        {
            "type": "or",
            "conditions": [
                {"type": "simple", "variable": "mode", "operator": "==", "value": "fix"},
                {"type": "not", "condition": {"type": "simple", "variable": "n", "operator": ">", "value": 2.0}},
                {"type": "simple", "variable": "x", "operator": "exists"},
                {"type": "simple", "variable": "y", "operator": "!=", "value": None},
            ],
        }
    )
    assert render_condition(nested) == 'mode == "fix" OR NOT (n > 2) OR x exists OR y != null'
    assert condition_variables(nested) == {"mode", "n", "x", "y"}


# ---- when: examples ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "bag", "expected"),
    [
        ("is_review_mode == true", {"is_review_mode": True}, True),
        ("is_review_mode == true", {}, False),
        ("is_review_mode != true", {}, True),
        ("!is_review_mode", {"is_review_mode": []}, False),  # lists are truthy
        ("flag", {"flag": 0}, False),
        ("flag", {"flag": "0"}, True),
        ("a.b.c == 'x'", {"a": {"b": {"c": "x"}}}, True),
        ('name == "say \\"hi\\""', {"name": 'say "hi"'}, True),
        ("kind == complex", {"kind": "complex"}, True),
        ("n > 0", {"n": 3}, True),
        ("n > -1", {"n": "0"}, True),
        ("n <= 2", {"n": "abc"}, False),
        ("v == null", {"v": None}, True),
        ("v == null", {}, False),
        ("true && !false", {}, True),
        ("!a == b", {"a": "c"}, True),  # comparison binds tighter than `!`
        (
            'is_review_mode != true && (problem_complexity == "moderate" || problem_complexity == complex)',
            {"problem_complexity": "complex"},
            True,
        ),
        ("(a || b) && c", {"b": True, "c": True}, True),
        ("lint_enabled && current_file.size > 0", {"lint_enabled": True, "current_file": {"size": 3}}, True),
    ],
)
def test_when_examples(text: str, bag: dict[str, Any], expected: bool) -> None:
    assert evaluate_when(parse_when(text), bag) is expected


@pytest.mark.parametrize(
    ("text", "position", "token"),
    [
        ("a && b || c", 7, "||"),
        ("a || b && c", 7, "&&"),
        ("", 0, None),
        ("a ==", 4, None),
        ("a == (", 5, "("),
        ("(a", 2, None),
        ("a b", 2, "b"),
        ("a-b", 1, "-"),
        ("'open", 0, "'open"),
        ("null", 0, "null"),
        ("5", 0, "5"),
        ("a == 1.5", 6, "."),
        ("a && (b || c) || d", 14, "||"),
    ],
)
def test_when_syntax_errors_name_position_and_token(text: str, position: int, token: str | None) -> None:
    with pytest.raises(WhenSyntaxError) as info:
        parse_when(text)
    assert info.value.position == position and info.value.token == token
    assert f"position {position}" in str(info.value)
    assert evaluate_when_text(text, {}) is False


def test_when_variables_and_rendering() -> None:
    expr = parse_when("a == 1 && (!b.c || d != x) && true")
    assert when_variables(expr) == {"a", "b.c", "d"}
    assert parse_when(render_when(expr)) == expr


# ---- when: properties ----------------------------------------------------------------------------

_TOKENS = [
    "a",
    "b.c",
    "x_1",
    "true",
    "false",
    "null",
    "(",
    ")",
    "!",
    "&&",
    "||",
    "==",
    "!=",
    ">",
    "<",
    ">=",
    "<=",
    "'s'",
    '"t"',
    "-3",
    "7",
    "word",
    "&",
    "|",
    "=",
    "-",
    ".",
    "@",
    "'",
    '"',
    "\\",
]


@given(st.lists(st.sampled_from(_TOKENS), max_size=12), st.sampled_from(["", " "]))
def test_token_soup_only_raises_when_syntax_error(tokens: list[str], sep: str) -> None:
    text = sep.join(tokens)
    try:
        expr = parse_when(text)
    except WhenSyntaxError as exc:
        assert 0 <= exc.position <= len(text)
        return
    evaluate_when(expr, {"a": 1, "b": {"c": "s"}})


@given(st.text(max_size=40))
def test_arbitrary_text_only_raises_when_syntax_error(text: str) -> None:
    try:
        parse_when(text)
    except WhenSyntaxError:
        pass


_PATHS = st.sampled_from(["a", "b", "c.d", "e_f"])
_VALUES = st.one_of(st.booleans(), st.none(), st.integers(-5, 5), st.sampled_from(["x", "3", "", "y z", "q'\""]))
_LEAVES = st.one_of(
    st.builds(WhenLiteral, st.booleans()),
    st.builds(WhenPath, _PATHS),
    st.builds(WhenCompare, _PATHS, st.sampled_from(["==", "!=", ">", "<", ">=", "<="]), _VALUES),
)
_EXPRS = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.builds(WhenNot, inner),
        st.builds(lambda xs: WhenAnd(tuple(xs)), st.lists(inner, min_size=2, max_size=3)),
        st.builds(lambda xs: WhenOr(tuple(xs)), st.lists(inner, min_size=2, max_size=3)),
    ),
    max_leaves=8,
)
_BAG_VALUES = st.one_of(
    st.booleans(),
    st.none(),
    st.integers(-5, 5),
    st.sampled_from(["x", "3", "", "4.5", "z"]),
    st.lists(st.integers(), max_size=1),
    st.floats(allow_nan=True),
)
_BAGS = st.fixed_dictionaries(
    {},
    optional={
        "a": _BAG_VALUES,
        "b": _BAG_VALUES,
        "c": st.fixed_dictionaries({}, optional={"d": _BAG_VALUES}),
        "e_f": _BAG_VALUES,
    },
)

_ABSENT = object()


def _ref_get(bag: dict[str, Any], path: str) -> Any:
    value: Any = bag
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return _ABSENT
        value = value[part]
    return value


def _ref_num(value: Any) -> float | None:
    if isinstance(value, bool) or value is None or value is _ABSENT:
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str) and value.strip():
        try:
            number = float(value)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _ref_eq(left: Any, right: Any) -> bool:
    if left is _ABSENT:
        return False
    return _ref_kind(left) == _ref_kind(right) and _ref_kind(left) != "obj" and left == right


def _ref_kind(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "num"
    return "str" if isinstance(value, str) else "obj"


def _ref_eval(expr: Any, bag: dict[str, Any]) -> bool:
    """An independent, deliberately naive model of the dialect's semantics."""
    if isinstance(expr, WhenLiteral):
        return expr.value
    if isinstance(expr, WhenPath):
        value = _ref_get(bag, expr.path)
        if value is _ABSENT or value is None or value is False or value == "":
            return False
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value != 0 and not math.isnan(value)
        return True
    if isinstance(expr, WhenCompare):
        left = _ref_get(bag, expr.path)
        if expr.op == "==":
            return _ref_eq(left, expr.value)
        if expr.op == "!=":
            return not _ref_eq(left, expr.value)
        a, b = _ref_num(left), _ref_num(expr.value)
        if a is None or b is None:
            return False
        return {">": a > b, "<": a < b, ">=": a >= b, "<=": a <= b}[expr.op]
    if isinstance(expr, WhenNot):
        return not _ref_eval(expr.operand, bag)
    if isinstance(expr, WhenAnd):
        return all(_ref_eval(e, bag) for e in expr.operands)
    return any(_ref_eval(e, bag) for e in expr.operands)


@settings(max_examples=300)
@given(_EXPRS, _BAGS)
def test_rendered_expressions_parse_back_and_match_reference(expr: Any, bag: dict[str, Any]) -> None:
    text = render_when(expr)
    parsed = parse_when(text)
    assert parsed == expr
    assert evaluate_when(parsed, bag) is _ref_eval(expr, bag)


def test_comparable_number_edges() -> None:
    assert comparable_number("  12 ") == 12.0
    assert comparable_number("-.5") == -0.5
    assert comparable_number("0b101") == 5.0
    assert comparable_number("1e400") is None
    assert comparable_number(True) is None
    assert comparable_number(10**400) is None
    assert comparable_number([1]) is None
