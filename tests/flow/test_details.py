"""Detail bodies: what each operation's inspector card shows, fetched on demand."""

from __future__ import annotations

from typing import Any

import pytest
from tests.flow.logs import done, interrupt, log, start, tcall, tresult

from orchestrator.flow import FlowState, fold, operation_details, render_details


def _details(events: list[dict[str, Any]]) -> list[str | None]:
    state = FlowState()
    for event in events:
        fold(state, event)
    return [operation_details(events, state, f"op-{n}") for n in range(1, len(state.details) + 1)]


def test_every_operation_kind_renders_its_material() -> None:
    events = log(
        start("orchestrator", task="Ship **it**."),
        tcall("orchestrator", "read_file", '{"path": "a.txt", "limit": 2}'),
        tresult("orchestrator", "read_file", result={"kind": "success", "data": {"content": "hi"}}),
        ("ask_human", {"id": "q", "question": "Tabs?", "context": "style guide"}),
        ("human_answer", {"id": "q", "answer": "Spaces."}),
        interrupt(),
        start("loop_detector", 2),
        ("observe", {"role": "orchestrator", "details": "list_role_messages"}),
        ("terminate", {"role": "orchestrator", "details": "rewind it"}),
        done("loop_detector", 2, summary="All good."),
    )
    assert _details(events) == [
        "Ship **it**.",
        '```json\n{\n  "path": "a.txt",\n  "limit": 2\n}\n```',
        '```json\n{\n  "kind": "success",\n  "data": {\n    "content": "hi"\n  }\n}\n```',
        "Tabs?\n\n**Context:** style guide",
        "Spaces.",
        "t",
        "list_role_messages",
        "rewind it",
        "All good.",
    ]


def test_missing_material_is_none() -> None:
    events = log(
        ("role_start", {"role": "o"}),  # no task
        tcall("o", "t"),
        tresult("o", "t"),  # standard log level: no result body
        ("role_finished", {"role": "o", "status": "success"}),  # no summary
    )
    assert _details(events) == [None, "```json\n{}\n```", None, None]


def test_an_error_card_shows_its_kind_and_message_after_the_summary() -> None:
    events = log(start("o"), done("o", status="error", summary="Failed.", error={"kind": "timeout", "message": "slow"}))
    assert _details(events)[-1] == "Failed.\n\n**Error:** `timeout` — slow"


def test_non_json_arguments_are_fenced_verbatim_with_a_fence_longer_than_any_inside() -> None:
    assert render_details({"type": "tool_call", "payload": {"arguments": "not json ```x```"}}) == (
        "````\nnot json ```x```\n````"
    )


@pytest.mark.parametrize("event", [None, {}, {"type": "role_start"}, {"type": "effort_set", "payload": {}}])
def test_events_without_material_render_none(event: Any) -> None:
    assert render_details(event) is None


def test_unknown_ids_raise_key_error() -> None:
    events = log(start("o"))
    state = fold(FlowState(), events[0])
    for bad in ("op-2", "op-0", "op--1", "1", "op-1 "):
        with pytest.raises(KeyError):
            operation_details(events, state, bad)
