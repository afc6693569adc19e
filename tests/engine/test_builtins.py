"""The builtins' pure halves (``engine/builtins.py``): ``validate_finish`` (the card a ``finish`` call
describes, or exactly what is wrong with it) and ``edit_context`` / ``context_info`` (the builtin's
bookkeeping: delta-baseline reset, maxCompactionAttempts, cross-role targets, the sizes reported)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.conversation import CardError, Message, ResultCard
from orchestrator.engine.builtins import ContextView, context_info, edit_context, validate_finish
from orchestrator.engine.state import RoleFrame
from orchestrator.errors import ERROR_KINDS

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


def test_the_closed_set_is_the_seeds_twelve_kinds_and_incomplete() -> None:
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
        "incomplete",  # issue 25: an implicit finish that is no answer (docs/engine.md)
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


# --- the edit_context / context_info builtins --------------------------------------------------------


def _plain(n: int) -> list[Message]:
    """``n`` messages without tool calls: system, task, then alternating assistant/user with reasoning."""
    out = [Message(role="system", content="m0"), Message(role="user", content="m1")]
    for i in range(2, n):
        role = "assistant" if i % 2 == 0 else "user"
        out.append(Message(role=role, content=f"m{i}", reasoning=f"r{i}" if role == "assistant" else None))
    return out[:n]


def _frame(instance_id: str = "worker-1-1", **kw: Any) -> RoleFrame:
    history = kw.pop("history", None) or [*_plain(2), *[Message(role="user", content="x" * 400) for _ in range(6)]]
    return RoleFrame(instance_id=instance_id, role="worker", depth=1, task="t", history=history, **kw)


VIEW = ContextView(context_window=8192, effective_budget=4096)


def test_a_successful_edit_resets_the_delta_baseline_and_reports_the_new_size() -> None:
    frame = _frame(logged_upto=8)
    outcome = edit_context(VIEW, frame, None, [{"op": "drop", "range": [2, 4]}], max_attempts=3)
    assert outcome.result.kind == "success" and outcome.terminate is None
    assert frame.logged_upto == 0
    assert len(frame.history) == 6
    assert outcome.result.data["messages"][-1]["index"] == 5
    assert frame.compaction_sizes == [1 + 1 + 4 * 100]


def test_a_rejected_edit_leaves_the_history_and_the_baseline_alone() -> None:
    frame = _frame(logged_upto=8)
    before = list(frame.history)
    outcome = edit_context(VIEW, frame, None, [{"op": "drop", "range": [1, 4]}], max_attempts=3)
    assert outcome.result.kind == "invalid_arguments"
    assert "protected" in (outcome.result.message or "")
    assert frame.history == before and frame.logged_upto == 8


def test_the_preamble_of_an_entry_frame_is_protected_too() -> None:
    frame = _frame(preamble=3)
    outcome = edit_context(VIEW, frame, None, [{"op": "replace", "index": 2, "content": ""}], max_attempts=3)
    assert outcome.result.kind == "invalid_arguments"


def test_edits_that_do_not_shrink_end_the_role_after_max_compaction_attempts() -> None:
    frame = _frame()
    same_size = [{"op": "replace", "index": 2, "content": "y" * 400}]
    for _ in range(2):
        assert edit_context(VIEW, frame, None, same_size, max_attempts=3).terminate is None
    outcome = edit_context(VIEW, frame, None, same_size, max_attempts=3)
    assert outcome.terminate is not None
    assert outcome.terminate.status == "error"
    assert outcome.terminate.error is not None and outcome.terminate.error.kind == "compaction_failed"


def test_rejected_edits_count_as_attempts_without_progress() -> None:
    frame = _frame()
    bad = [{"op": "drop", "range": [0, 1]}]
    outcomes = [edit_context(VIEW, frame, None, bad, max_attempts=2) for _ in range(2)]
    assert [o.terminate is not None for o in outcomes] == [False, True]


def test_a_shrinking_edit_resets_the_count_of_stalled_attempts() -> None:
    frame = _frame()
    same_size = [{"op": "replace", "index": 2, "content": "y" * 400}]
    edit_context(VIEW, frame, None, same_size, max_attempts=2)
    assert edit_context(VIEW, frame, None, [{"op": "drop", "range": [7, 8]}], max_attempts=2).terminate is None
    assert frame.stalled_compactions == 0
    assert edit_context(VIEW, frame, None, same_size, max_attempts=2).terminate is None
    assert edit_context(VIEW, frame, None, same_size, max_attempts=2).terminate is not None


def test_a_cross_role_edit_changes_the_target_and_charges_the_caller() -> None:
    caller, target = _frame("planner-1-1"), _frame("worker-2-2", logged_upto=8)
    caller_history = list(caller.history)
    outcome = edit_context(VIEW, caller, target, [{"op": "drop", "range": [2, 8]}], max_attempts=3)
    assert outcome.result.kind == "success"
    assert outcome.result.data["roleId"] == "worker-2-2"
    assert len(target.history) == 2 and target.logged_upto == 0
    assert caller.history == caller_history
    assert caller.compaction_sizes == [1 + 1]  # the target's new size, on the caller's record


def test_an_unresolvable_target_is_an_invalid_arguments_result() -> None:
    outcome = edit_context(VIEW, _frame(), "no such instance", [{"op": "drop", "range": [2, 3]}], max_attempts=3)
    assert outcome.result.kind == "invalid_arguments"
    assert outcome.result.message == "no such instance"
    assert context_info(VIEW, _frame(), "gone").result.kind == "invalid_arguments"


def test_context_info_reports_sizes_budget_and_protected_messages() -> None:
    frame = _frame(last_prompt_tokens=1000, compaction_sizes=[9, 8, 7, 6, 5, 4])
    data = context_info(VIEW, frame, None).result.data
    assert data["roleId"] == "worker-1-1"
    assert (data["contextWindow"], data["effectiveBudget"]) == (8192, 4096)
    assert data["lastReportedPromptTokens"] == 1000
    assert data["currentPromptTokens"] == sum(m["tokens"] for m in data["messages"])
    assert data["budgetRemaining"] == 4096 - 1000
    assert data["protectedMessages"] == 2
    assert data["recentCompactionSizes"] == [8, 7, 6, 5, 4]
    assert [m["index"] for m in data["messages"]] == list(range(8))
    assert data["messages"][2] == {"index": 2, "role": "user", "chars": 400, "tokens": 100}
