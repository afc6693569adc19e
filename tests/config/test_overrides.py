"""ORCHESTRATOR_* overrides: strict value parsing, per-field merge and the trigger trio rule."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.config.deployment import Deployment, decode_deployment, field_value
from orchestrator.config.overrides import (
    Override,
    apply_overrides,
    parse_finite_float,
    parse_fraction,
    parse_overrides,
    parse_positive_int,
)
from orchestrator.config.overridetable import ENV_OVERRIDES

FIXTURES = Path(__file__).parent / "fixtures"
INT_VARIABLES = [row.variable for row in ENV_OVERRIDES if row.kind == "positive_int"]
STRING_VARIABLES = [row.variable for row in ENV_OVERRIDES if row.kind == "string"]


def _fixture(name: str) -> Deployment:
    deployment, problems = decode_deployment((FIXTURES / name).read_bytes())
    assert deployment is not None, problems
    return deployment


@pytest.mark.parametrize("text", ["0x1a", "1e3", "8080.0", " 12", "12 ", "+5", "0", "-3", "00", "1_000", "١٢", "12\n"])
@pytest.mark.parametrize("variable", INT_VARIABLES)
def test_integer_variables_reject_anything_but_plain_positive_digits(variable: str, text: str) -> None:
    overrides, problems = parse_overrides({variable: text})
    assert overrides == []
    assert len(problems) == 1
    assert problems[0].startswith(f"{variable}: ")
    assert repr(text) in problems[0]


@pytest.mark.parametrize("variable", INT_VARIABLES)
def test_integer_variables_accept_plain_digits(variable: str) -> None:
    overrides, problems = parse_overrides({variable: "0042"})
    assert problems == []
    assert [o.value for o in overrides] == [42]


@given(st.text())
def test_positive_int_rejects_every_non_digit_string(text: str) -> None:
    if re.fullmatch(r"[0-9]+", text) and int(text) > 0:
        assert parse_positive_int(text) == int(text)
    else:
        with pytest.raises(ValueError, match="positive integer"):
            parse_positive_int(text)


@given(st.integers(min_value=1))
def test_positive_int_accepts_every_positive_integer(value: int) -> None:
    assert parse_positive_int(str(value)) == value


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_temperature_accepts_every_finite_float(value: float) -> None:
    for text in (repr(value), str(value), f"{value:e}"):
        overrides, problems = parse_overrides({"ORCHESTRATOR_TEMPERATURE": text})
        assert problems == []
        assert overrides[0].value == pytest.approx(value, rel=1e-6)


@pytest.mark.parametrize(
    "text", ["nan", "NaN", "inf", "-inf", "Infinity", "1e999", "hot", " 0.5", "0.5 ", "1_0.5", "0x1p-2", "."]
)
def test_temperature_rejects_non_finite_or_non_numeric(text: str) -> None:
    overrides, problems = parse_overrides({"ORCHESTRATOR_TEMPERATURE": text})
    assert overrides == []
    assert problems == [
        f"ORCHESTRATOR_TEMPERATURE: model.generation.temperature must be a finite number (got {text!r})"
    ]


@pytest.mark.parametrize("text", ["0.5", ".25", "0.999", "1e-3", "5E-1"])
def test_threshold_accepts_fractions(text: str) -> None:
    assert parse_fraction(text) == float(text)


@pytest.mark.parametrize("text", ["0", "1", "1.0", "-0.5", "2", "nan", "inf", "half", ""])
def test_threshold_rejects_outside_the_open_interval(text: str) -> None:
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        parse_fraction(text)
    if text:
        _, problems = parse_overrides({"ORCHESTRATOR_CONTEXT_PRESSURE_THRESHOLD": text})
        assert problems[0].startswith("ORCHESTRATOR_CONTEXT_PRESSURE_THRESHOLD: executor.contextPressureThreshold")


def test_finite_float_is_stricter_than_python_float() -> None:
    assert parse_finite_float("-0.0") == 0.0
    assert math.isclose(parse_finite_float("1.5e+300"), 1.5e300)
    for text in ("1_0", "  1", "infinity", "+inf"):
        with pytest.raises(ValueError):
            parse_finite_float(text)


def test_empty_variables_mean_not_set() -> None:
    env = {row.variable: "" for row in ENV_OVERRIDES}
    assert parse_overrides(env) == ([], [])


def test_every_bad_variable_is_reported_at_once() -> None:
    env = {
        "ORCHESTRATOR_MAX_TOKENS": "0x1a",
        "ORCHESTRATOR_TEMPERATURE": "nan",
        "ORCHESTRATOR_CONTEXT_PRESSURE_THRESHOLD": "1",
        "ORCHESTRATOR_MAX_AGENT_DEPTH": "3",
    }
    overrides, problems = parse_overrides(env)
    assert [o.variable for o in overrides] == ["ORCHESTRATOR_MAX_AGENT_DEPTH"]
    assert [p.split(":")[0] for p in problems] == [
        "ORCHESTRATOR_TEMPERATURE",
        "ORCHESTRATOR_MAX_TOKENS",
        "ORCHESTRATOR_CONTEXT_PRESSURE_THRESHOLD",
    ]


@pytest.mark.parametrize("variable", STRING_VARIABLES)
def test_string_variables_are_taken_verbatim(variable: str) -> None:
    overrides, problems = parse_overrides({variable: "some value"})
    assert problems == []
    assert overrides == [Override(variable=variable, field=_field(variable), value="some value")]


def _field(variable: str) -> str:
    return next(row.field for row in ENV_OVERRIDES if row.variable == variable)


@pytest.mark.parametrize(
    ("variable", "text", "expected"),
    [
        ("ORCHESTRATOR_MODEL", "other-model", "other-model"),
        ("ORCHESTRATOR_API_BASE", "http://gpu:8080/v1", "http://gpu:8080/v1"),
        ("ORCHESTRATOR_MODEL_CONTEXT_WINDOW", "8192", 8192),
        ("ORCHESTRATOR_TEMPERATURE", "0.7", 0.7),
        ("ORCHESTRATOR_MAX_TOKENS", "2048", 2048),
        ("ORCHESTRATOR_MAX_AGENT_DEPTH", "3", 3),
        ("ORCHESTRATOR_TOOL_TIMEOUT_SECONDS", "90", 90),
        ("ORCHESTRATOR_MAX_COMPACTION_ATTEMPTS", "2", 2),
        ("ORCHESTRATOR_CONTEXT_PRESSURE_THRESHOLD", "0.6", 0.6),
        ("ORCHESTRATOR_CONTEXT_HANDLER_ROLE", "lead", "lead"),
        ("ORCHESTRATOR_INQUIRY_HANDLER_ROLE", "lead", "lead"),
        ("ORCHESTRATOR_INTERRUPT_HANDLER_ROLE", "lead", "lead"),
        ("ORCHESTRATOR_INTERRUPT_EVERY_TOOL_CALLS", "7", 7),
        ("ORCHESTRATOR_INTERRUPT_EVERY_TOKENS", "999", 999),
        ("ORCHESTRATOR_INTERRUPT_PLAN_OWNER_ROLE", "writer", "writer"),
        ("ORCHESTRATOR_MAX_TOOL_OUTPUT_CHARS", "123", 123),
    ],
)
def test_each_variable_replaces_exactly_its_field(variable: str, text: str, expected: object) -> None:
    base = _fixture("deployment.json")
    overrides, problems = parse_overrides({variable: text})
    assert problems == []
    merged, merge_problems = apply_overrides(base, overrides)
    assert merge_problems == []
    field = _field(variable)
    assert field_value(merged, field) == expected
    for row in ENV_OVERRIDES:
        if row.field != field:
            assert field_value(merged, row.field) == field_value(base, row.field), row.field
    assert merged.logging == base.logging


def test_nested_objects_merge_per_field() -> None:
    base = _fixture("deployment.json")
    env = {"ORCHESTRATOR_MAX_TOKENS": "1024", "ORCHESTRATOR_INTERRUPT_EVERY_TOKENS": "500"}
    merged, problems = apply_overrides(base, parse_overrides(env)[0])
    assert problems == []
    assert merged.model.generation.max_tokens == 1024
    assert merged.model.generation.temperature == base.model.generation.temperature
    triggers = merged.executor.interrupt_triggers
    assert triggers is not None and base.executor.interrupt_triggers is not None
    assert triggers.every_tokens == 500
    assert triggers.every_tool_calls == base.executor.interrupt_triggers.every_tool_calls
    assert triggers.handler_role == "watcher"
    assert triggers.plan_owner_role == "lead"
    # The base is never mutated.
    assert base.model.generation.max_tokens == 4096


def test_introducing_interrupt_triggers_needs_the_three_together() -> None:
    base = _fixture("deployment-minimal.json")
    env = {
        "ORCHESTRATOR_INTERRUPT_HANDLER_ROLE": "watcher",
        "ORCHESTRATOR_INTERRUPT_EVERY_TOOL_CALLS": "4",
        "ORCHESTRATOR_INTERRUPT_EVERY_TOKENS": "9000",
        "ORCHESTRATOR_INTERRUPT_PLAN_OWNER_ROLE": "lead",
    }
    merged, problems = apply_overrides(base, parse_overrides(env)[0])
    assert problems == []
    triggers = merged.executor.interrupt_triggers
    assert triggers is not None
    assert (triggers.handler_role, triggers.every_tool_calls, triggers.every_tokens) == ("watcher", 4, 9000)
    assert triggers.plan_owner_role == "lead"


@pytest.mark.parametrize(
    ("env", "missing"),
    [
        ({"ORCHESTRATOR_INTERRUPT_HANDLER_ROLE": "watcher"}, ["EVERY_TOOL_CALLS", "EVERY_TOKENS"]),
        ({"ORCHESTRATOR_INTERRUPT_EVERY_TOKENS": "5"}, ["HANDLER_ROLE", "EVERY_TOOL_CALLS"]),
        ({"ORCHESTRATOR_INTERRUPT_PLAN_OWNER_ROLE": "lead"}, ["HANDLER_ROLE", "EVERY_TOOL_CALLS", "EVERY_TOKENS"]),
        (
            {"ORCHESTRATOR_INTERRUPT_HANDLER_ROLE": "watcher", "ORCHESTRATOR_INTERRUPT_EVERY_TOOL_CALLS": "3"},
            ["EVERY_TOKENS"],
        ),
    ],
)
def test_partial_trigger_introduction_lists_the_missing_variables(env: dict[str, str], missing: list[str]) -> None:
    base = _fixture("deployment-minimal.json")
    merged, problems = apply_overrides(base, parse_overrides(env)[0])
    assert merged.executor.interrupt_triggers is None
    assert len(problems) == 1
    head = problems[0].split(": must be set")[0]
    assert head == ", ".join(f"ORCHESTRATOR_INTERRUPT_{name}" for name in missing)
    for variable in env:
        assert variable in problems[0]


def test_a_single_trigger_field_merges_when_the_file_has_the_section() -> None:
    base = _fixture("deployment.json")
    merged, problems = apply_overrides(base, parse_overrides({"ORCHESTRATOR_INTERRUPT_HANDLER_ROLE": "lead"})[0])
    assert problems == []
    assert merged.executor.interrupt_triggers is not None
    assert merged.executor.interrupt_triggers.handler_role == "lead"


def test_merged_deployment_encodes_back_to_a_valid_file() -> None:
    base = _fixture("deployment-minimal.json")
    env = {"ORCHESTRATOR_MODEL": "m", "ORCHESTRATOR_MODEL_CONTEXT_WINDOW": "4096", "ORCHESTRATOR_TEMPERATURE": "1"}
    merged, _ = apply_overrides(base, parse_overrides(env)[0])
    again, problems = decode_deployment(msgspec.json.encode(merged))
    assert problems == []
    assert again == merged
    assert json.loads(msgspec.json.encode(merged))["model"]["contextWindow"] == 4096
