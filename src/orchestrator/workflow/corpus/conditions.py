"""Structured conditions and the ``when`` expression dialect.

Both evaluate with the shared value semantics of ``values`` (strict equality, numeric relations, absent
values). ``parse_when`` is a small tokenizer plus recursive-descent parser producing a frozen AST and
raising ``WhenSyntaxError`` (naming the position and token) for anything outside the grammar, including
mixing ``&&`` and ``||`` at one parenthesis depth. Nothing here does I/O.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import msgspec

from orchestrator.workflow.corpus.values import (
    MISSING,
    comparable_number,
    compare,
    js_truthy,
    lookup_path,
    strict_equals,
)

__all__ = [
    "MISSING",
    "AndCondition",
    "Condition",
    "Expr",
    "NotCondition",
    "OrCondition",
    "SimpleCondition",
    "WhenAnd",
    "WhenCompare",
    "WhenLiteral",
    "WhenNot",
    "WhenOr",
    "WhenPath",
    "WhenSyntaxError",
    "comparable_number",
    "condition_variables",
    "evaluate_condition",
    "evaluate_when",
    "evaluate_when_text",
    "lookup_path",
    "parse_when",
    "render_condition",
    "render_when",
    "strict_equals",
    "when_variables",
]


# --------------------------------------------------------------------------------------------------
# Structured conditions
# --------------------------------------------------------------------------------------------------

ConditionValue = str | int | float | bool | None


class SimpleCondition(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True, tag="simple", tag_field="type"
):
    """``{type: simple, variable, operator, value?}``; ``value`` is ``UNSET`` when the file omits it."""

    variable: str
    operator: Literal["==", "!=", ">", "<", ">=", "<=", "exists", "notExists"]
    value: ConditionValue | msgspec.UnsetType = msgspec.UNSET


class AndCondition(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag="and", tag_field="type"):
    conditions: Annotated[tuple[Condition, ...], msgspec.Meta(min_length=2)]


class OrCondition(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag="or", tag_field="type"):
    conditions: Annotated[tuple[Condition, ...], msgspec.Meta(min_length=2)]


class NotCondition(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag="not", tag_field="type"):
    condition: Condition


Condition = SimpleCondition | AndCondition | OrCondition | NotCondition


def evaluate_condition(condition: Condition, bag: Mapping[str, Any]) -> bool:
    """Evaluate a structured condition against a variable bag (never raises for well-typed input)."""
    if isinstance(condition, SimpleCondition):
        actual = lookup_path(bag, condition.variable)
        if condition.operator == "exists":
            return actual is not MISSING and actual is not None
        if condition.operator == "notExists":
            return actual is MISSING or actual is None
        expected = MISSING if condition.value is msgspec.UNSET else condition.value
        return compare(actual, condition.operator, expected)
    if isinstance(condition, AndCondition):
        return all(evaluate_condition(c, bag) for c in condition.conditions)
    if isinstance(condition, OrCondition):
        return any(evaluate_condition(c, bag) for c in condition.conditions)
    return not evaluate_condition(condition.condition, bag)


def _json_value(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and math.isfinite(value):
        value = int(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "null"
    return json.dumps(value, ensure_ascii=False)


def render_condition(condition: Condition) -> str:
    """Human-readable text: ``var op json(value)``, members joined `` AND ``/`` OR ``, ``NOT (…)``.

    A simple condition without a value (``exists``/``notExists``) renders as ``var op``.
    """
    if isinstance(condition, SimpleCondition):
        if condition.value is msgspec.UNSET:
            return f"{condition.variable} {condition.operator}"
        return f"{condition.variable} {condition.operator} {_json_value(condition.value)}"
    if isinstance(condition, AndCondition):
        return " AND ".join(render_condition(c) for c in condition.conditions)
    if isinstance(condition, OrCondition):
        return " OR ".join(render_condition(c) for c in condition.conditions)
    return f"NOT ({render_condition(condition.condition)})"


def condition_variables(condition: Condition) -> set[str]:
    """Every dotted path a structured condition reads."""
    if isinstance(condition, SimpleCondition):
        return {condition.variable}
    if isinstance(condition, AndCondition | OrCondition):
        out: set[str] = set()
        for member in condition.conditions:
            out |= condition_variables(member)
        return out
    return condition_variables(condition.condition)


# --------------------------------------------------------------------------------------------------
# The `when` dialect
# --------------------------------------------------------------------------------------------------


class WhenSyntaxError(ValueError):
    """A ``when`` text outside the grammar. ``position`` is a 0-based character offset."""

    def __init__(self, message: str, *, position: int, token: str | None) -> None:
        where = f"at position {position}" + (f" (token {token!r})" if token is not None else " (end of input)")
        super().__init__(f"{message} {where}")
        self.position = position
        self.token = token


class WhenLiteral(msgspec.Struct, frozen=True):
    """``true`` or ``false`` used as a whole operand."""

    value: bool


class WhenPath(msgspec.Struct, frozen=True):
    """A bare path: holds when its value is truthy."""

    path: str


class WhenCompare(msgspec.Struct, frozen=True):
    """``path op value``; ``value`` is a bool, ``None``, int or str (bare words are strings)."""

    path: str
    op: str
    value: bool | int | str | None


class WhenNot(msgspec.Struct, frozen=True):
    operand: Expr


class WhenAnd(msgspec.Struct, frozen=True):
    operands: tuple[Expr, ...]


class WhenOr(msgspec.Struct, frozen=True):
    operands: tuple[Expr, ...]


Expr = WhenLiteral | WhenPath | WhenCompare | WhenNot | WhenAnd | WhenOr

_CMP_OPS = ("==", "!=", ">=", "<=", ">", "<")
_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_INT = re.compile(r"-?[0-9]+")


class _Tok(msgspec.Struct, frozen=True):
    kind: str  # "op", "word", "str", "int", "end"
    text: str
    pos: int
    value: Any = None


def _tokenize(text: str) -> list[_Tok]:
    tokens: list[_Tok] = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        two = text[i : i + 2]
        if two in ("&&", "||", "==", "!=", ">=", "<="):
            tokens.append(_Tok("op", two, i))
            i += 2
            continue
        if c in "()!<>":
            tokens.append(_Tok("op", c, i))
            i += 1
            continue
        if c in "\"'":
            j = i + 1
            out: list[str] = []
            while j < n and text[j] != c:
                if text[j] == "\\" and j + 1 < n:
                    out.append(text[j + 1])
                    j += 2
                    continue
                out.append(text[j])
                j += 1
            if j >= n:
                raise WhenSyntaxError("unterminated string", position=i, token=text[i:])
            tokens.append(_Tok("str", text[i : j + 1], i, "".join(out)))
            i = j + 1
            continue
        match = _INT.match(text, i)
        if match:
            tokens.append(_Tok("int", match.group(), i, int(match.group())))
            i = match.end()
            continue
        match = _PATH.match(text, i)
        if match:
            tokens.append(_Tok("word", match.group(), i))
            i = match.end()
            continue
        raise WhenSyntaxError("unexpected character", position=i, token=c)
    tokens.append(_Tok("end", "", n))
    return tokens


class _Parser:
    def __init__(self, tokens: list[_Tok]) -> None:
        self.tokens = tokens
        self.index = 0

    def peek(self) -> _Tok:
        return self.tokens[self.index]

    def take(self) -> _Tok:
        tok = self.tokens[self.index]
        if tok.kind != "end":
            self.index += 1
        return tok

    def fail(self, message: str, tok: _Tok) -> WhenSyntaxError:
        return WhenSyntaxError(message, position=tok.pos, token=tok.text if tok.kind != "end" else None)

    def parse(self) -> Expr:
        if self.peek().kind == "end":
            raise self.fail("empty expression", self.peek())
        expr = self.parse_or()
        tok = self.peek()
        if tok.kind != "end":
            raise self.fail("unexpected token", tok)
        return expr

    def parse_or(self) -> Expr:
        first, first_and = self.parse_and()
        operands = [first]
        while self.peek().kind == "op" and self.peek().text == "||":
            or_tok = self.take()
            if first_and is not None:
                raise self.fail("mixed '&&' and '||' at one depth need parentheses", or_tok)
            operand, and_tok = self.parse_and()
            if and_tok is not None:
                raise self.fail("mixed '&&' and '||' at one depth need parentheses", and_tok)
            operands.append(operand)
        return operands[0] if len(operands) == 1 else WhenOr(tuple(operands))

    def parse_and(self) -> tuple[Expr, _Tok | None]:
        operands = [self.parse_unary()]
        first_and: _Tok | None = None
        while self.peek().kind == "op" and self.peek().text == "&&":
            tok = self.take()
            first_and = first_and or tok
            operands.append(self.parse_unary())
        expr = operands[0] if len(operands) == 1 else WhenAnd(tuple(operands))
        return expr, first_and

    def parse_unary(self) -> Expr:
        tok = self.peek()
        if tok.kind == "op" and tok.text == "!":
            self.take()
            return WhenNot(self.parse_unary())
        return self.parse_primary()

    def parse_primary(self) -> Expr:
        tok = self.take()
        if tok.kind == "op" and tok.text == "(":
            inner = self.parse_or()
            close = self.take()
            if close.kind != "op" or close.text != ")":
                raise self.fail("expected ')'", close)
            return inner
        if tok.kind == "word":
            if tok.text in ("true", "false"):
                return WhenLiteral(tok.text == "true")
            if tok.text == "null":
                raise self.fail("null is not a condition", tok)
            nxt = self.peek()
            if nxt.kind == "op" and nxt.text in _CMP_OPS:
                self.take()
                return WhenCompare(tok.text, nxt.text, self.parse_value())
            return WhenPath(tok.text)
        raise self.fail("unexpected token" if tok.kind != "end" else "unexpected end of expression", tok)

    def parse_value(self) -> bool | int | str | None:
        tok = self.take()
        if tok.kind in ("str", "int"):
            return tok.value  # type: ignore[no-any-return]
        if tok.kind == "word":
            return {"true": True, "false": False, "null": None}.get(tok.text, tok.text)
        raise self.fail("expected a comparison value" if tok.kind != "end" else "missing comparison value", tok)


def parse_when(text: str) -> Expr:
    """Parse a ``when`` expression; raises ``WhenSyntaxError`` naming the position and token."""
    if not isinstance(text, str):
        raise WhenSyntaxError("expression is not a string", position=0, token=None)
    return _Parser(_tokenize(text)).parse()


def evaluate_when(expr: Expr, bag: Mapping[str, Any]) -> bool:
    """Evaluate a parsed ``when`` expression against a variable bag."""
    if isinstance(expr, WhenCompare):
        return compare(lookup_path(bag, expr.path), expr.op, expr.value)
    if isinstance(expr, WhenPath):
        return js_truthy(lookup_path(bag, expr.path))
    if isinstance(expr, WhenAnd):
        return all(evaluate_when(e, bag) for e in expr.operands)
    if isinstance(expr, WhenOr):
        return any(evaluate_when(e, bag) for e in expr.operands)
    if isinstance(expr, WhenNot):
        return not evaluate_when(expr.operand, bag)
    return expr.value


def evaluate_when_text(text: str, bag: Mapping[str, Any]) -> bool:
    """Parse and evaluate; an unparseable expression is false (fail closed)."""
    try:
        return evaluate_when(parse_when(text), bag)
    except WhenSyntaxError:
        return False


def when_variables(expr: Expr) -> set[str]:
    """Every dotted path the expression reads (comparison left sides and bare truthiness paths)."""
    if isinstance(expr, WhenCompare | WhenPath):
        return {expr.path}
    if isinstance(expr, WhenAnd | WhenOr):
        out: set[str] = set()
        for operand in expr.operands:
            out |= when_variables(operand)
        return out
    if isinstance(expr, WhenNot):
        return when_variables(expr.operand)
    return set()


def _render_value(value: bool | int | str | None) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def render_when(expr: Expr) -> str:
    """Canonical text for an AST (parenthesising nested groups); ``parse_when`` reads it back equal."""
    if isinstance(expr, WhenLiteral):
        return "true" if expr.value else "false"
    if isinstance(expr, WhenPath):
        return expr.path
    if isinstance(expr, WhenCompare):
        return f"{expr.path} {expr.op} {_render_value(expr.value)}"
    if isinstance(expr, WhenNot):
        inner = render_when(expr.operand)
        return f"!({inner})" if isinstance(expr.operand, WhenAnd | WhenOr) else f"!{inner}"
    joiner = " && " if isinstance(expr, WhenAnd) else " || "
    parts = []
    for operand in expr.operands:
        text = render_when(operand)
        parts.append(f"({text})" if isinstance(operand, WhenAnd | WhenOr) else text)
    return joiner.join(parts)
