"""``validate_finish``: the card a ``finish`` call describes, or exactly what is wrong with it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.engine.builtins import validate_finish
from orchestrator.errors import ERROR_KINDS
from orchestrator.runlog.events import CardError, ResultCard

OK: dict[str, Any] = {"status": "success", "summary": "did it"}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"summary": "x"}, "status must be one of success, error, needs_clarification"),
        ({"status": "done", "summary": "x"}, "status must be one of"),
        ({"status": "Success", "summary": "x"}, "status must be one of"),
        ({"status": None, "summary": "x"}, "status must be one of"),
        ({"status": ["success"], "summary": "x"}, "status must be one of"),
        ({"status": "success"}, "summary must be a non-empty string"),
        ({"status": "success", "summary": ""}, "summary must be a non-empty string"),
        ({"status": "success", "summary": " \n\t "}, "summary must be a non-empty string"),
        ({"status": "success", "summary": 42}, "summary must be a non-empty string"),
        ({**OK, "artifacts": "out.txt"}, "artifacts must be an array of strings"),
        ({**OK, "artifacts": ["a", 1]}, "artifacts must be an array of strings"),
        ({**OK, "artifacts": [None]}, "artifacts must be an array of strings"),
        ({**OK, "error": "boom"}, "error must be an object with a string kind"),
        ({**OK, "error": {}}, "error must be an object with a string kind"),
        ({**OK, "error": {"kind": 7}}, "error must be an object with a string kind"),
        ({**OK, "error": {"kind": "exploded"}}, "error.kind 'exploded' is not one of: "),
        ({**OK, "error": {"kind": "Timeout"}}, "error.kind 'Timeout' is not one of: "),
        ({**OK, "error": {"kind": "timeout", "message": 5}}, "error.message must be a string"),
        ({**OK, "error": {"kind": "timeout", "message": ["a"]}}, "error.message must be a string"),
    ],
)
def test_a_malformed_card_is_rejected_saying_why(arguments: dict[str, Any], message: str) -> None:
    result = validate_finish(arguments)
    assert isinstance(result, str)
    assert result.startswith(message)


def test_an_unknown_kind_rejection_lists_the_closed_set() -> None:
    result = validate_finish({**OK, "error": {"kind": "nope"}})
    assert isinstance(result, str)
    assert all(kind in result for kind in ERROR_KINDS)


@pytest.mark.parametrize("status", ["success", "error", "needs_clarification"])
def test_each_status_is_accepted(status: str) -> None:
    assert validate_finish({"status": status, "summary": "s"}) == ResultCard(status=status, summary="s")  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", sorted(ERROR_KINDS))
def test_every_kind_in_the_closed_set_is_accepted(kind: str) -> None:
    card = validate_finish(
        {"status": "error", "summary": "failed", "error": {"kind": kind, "message": "m", "details": {"n": 1}}}
    )
    assert card == ResultCard(
        status="error", summary="failed", error=CardError(kind=kind, message="m", details={"n": 1})
    )


def test_the_closed_set_is_the_seeds_twelve_kinds() -> None:
    assert {
        "invalid_tool_call",
        "unknown_tool",
        "invalid_arguments",
        "timeout",
        "llm_unavailable",
        "unavailable",
        "context_budget_exceeded",
        "context_handoff",
        "tool_budget_exceeded",
        "loop_detected",
        "interrupted",
        "compaction_failed",
    } == ERROR_KINDS


def test_optional_fields_default_and_artifacts_are_kept() -> None:
    assert validate_finish(OK) == ResultCard(status="success", summary="did it", artifacts=[], error=None)
    card = validate_finish({**OK, "artifacts": ["a.txt", "b/c.md"], "error": None})
    assert isinstance(card, ResultCard)
    assert card.artifacts == ["a.txt", "b/c.md"] and card.error is None


def test_an_error_without_a_message_is_accepted() -> None:
    card = validate_finish({"status": "error", "summary": "x", "error": {"kind": "timeout"}})
    assert isinstance(card, ResultCard)
    assert card.error == CardError(kind="timeout")


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
_fields = st.fixed_dictionaries(
    {},
    optional={
        "status": st.sampled_from(["success", "error", "needs_clarification"]) | _json,
        "summary": st.text(max_size=6) | _json,
        "artifacts": st.lists(st.text(max_size=4), max_size=2) | _json,
        "error": st.fixed_dictionaries(
            {"kind": st.sampled_from(sorted(ERROR_KINDS)) | _json}, optional={"message": st.text() | _json}
        )
        | _json,
    },
)


@settings(deadline=None, max_examples=300)
@given(arguments=_fields)
def test_any_json_arguments_give_a_card_or_a_reason_never_an_exception(arguments: dict[str, Any]) -> None:
    result = validate_finish(arguments)
    if isinstance(result, str):
        assert result
        return
    assert result.status == arguments["status"]
    assert result.summary == arguments["summary"] and result.summary.strip()
    assert result.artifacts == arguments.get("artifacts", [])
    if arguments.get("error") is not None:
        assert result.error is not None and result.error.kind in ERROR_KINDS
