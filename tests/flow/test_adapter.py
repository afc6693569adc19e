"""One table row per adapter rule: a short log in, participants and operation shapes out."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.flow.logs import at, done, ids, interrupt, log, random_logs, shapes, start, tcall, think, tresult, usage

from orchestrator.flow import build_model

H, ORCH, C = "human:root", "role:orchestrator:1", "role:coder:1"

RULES: list[tuple[str, list[dict[str, Any]], list[str], list[tuple[str, str, str, str]]]] = [
    (
        "role_start: the entry role is called by the human root",
        log(start("orchestrator")),
        [H, ORCH],
        [("call", "main", H, ORCH)],
    ),
    (
        "role_start: a child is called by the innermost open callee",
        log(start("orchestrator"), start("coder", 2, 1, parent="orchestrator")),
        [H, ORCH, C],
        [("call", "main", H, ORCH), ("call", "main", ORCH, C)],
    ),
    (
        "role_finished: the matching call returns to its caller",
        log(start("orchestrator"), start("coder", 2, 1), done("coder", 2, 1)),
        [H, ORCH, C],
        [("call", "main", H, ORCH), ("call", "main", ORCH, C), ("return", "main", C, ORCH)],
    ),
    (
        "role instances of one role get rising counters",
        log(start("orchestrator"), start("coder", 2, 1), done("coder", 2, 1), start("coder", 3, 1)),
        [H, ORCH, C, "role:coder:2"],
        [
            ("call", "main", H, ORCH),
            ("call", "main", ORCH, C),
            ("return", "main", C, ORCH),
            ("call", "main", ORCH, "role:coder:2"),
        ],
    ),
    (
        "role_finished for an instance that is not open is ignored",
        log(start("orchestrator"), done("coder", 7, 1)),
        [H, ORCH],
        [("call", "main", H, ORCH)],
    ),
    (
        "a role_start duplicated across a restart is ignored while the instance is open",
        log(start("orchestrator"), start("orchestrator")),
        [H, ORCH],
        [("call", "main", H, ORCH)],
    ),
    (
        "tool_call / tool_result: a tool participant, a call and its return",
        log(start("orchestrator"), tcall("orchestrator", "read_file"), tresult("orchestrator", "read_file")),
        [H, ORCH, "tool:read_file:1"],
        [
            ("call", "main", H, ORCH),
            ("call", "main", ORCH, "tool:read_file:1"),
            ("return", "main", "tool:read_file:1", ORCH),
        ],
    ),
    (
        "each tool call is a fresh tool instance",
        log(start("orchestrator"), *[tcall("orchestrator", "t"), tresult("orchestrator", "t")] * 2),
        [H, ORCH, "tool:t:1", "tool:t:2"],
        [
            ("call", "main", H, ORCH),
            ("call", "main", ORCH, "tool:t:1"),
            ("return", "main", "tool:t:1", ORCH),
            ("call", "main", ORCH, "tool:t:2"),
            ("return", "main", "tool:t:2", ORCH),
        ],
    ),
    (
        "agent, ask_human and finish tool events are skipped",
        log(
            start("orchestrator"),
            *[e for tool in ("agent", "ask_human", "finish") for e in (tcall("o", tool), tresult("o", tool))],
        ),
        [H, ORCH],
        [("call", "main", H, ORCH)],
    ),
    (
        "a tool_call with no open call to make it is skipped",
        log(tcall("orchestrator", "read_file"), tresult("orchestrator", "read_file")),
        [H],
        [],
    ),
    (
        "ask_human / human_answer: a human answerer's call and return",
        log(
            start("orchestrator"),
            ("ask_human", {"id": "q1", "question": "Tabs?", "role": "orchestrator"}),
            ("human_answer", {"id": "q1", "answer": "Spaces."}),
        ),
        [H, ORCH, "human:answerer:1"],
        [
            ("call", "main", H, ORCH),
            ("call", "main", ORCH, "human:answerer:1"),
            ("return", "main", "human:answerer:1", ORCH),
        ],
    ),
    (
        "a human_answer for an unknown question is ignored",
        log(start("orchestrator"), ("human_answer", {"id": "nope", "answer": "x"})),
        [H, ORCH],
        [("call", "main", H, ORCH)],
    ),
    (
        "interrupt: a stack rooted at a fresh interrupt participant; the handler is called from it",
        log(start("orchestrator"), interrupt(), start("loop_detector", 2)),
        [H, ORCH, "interrupt:1", "role:loop_detector:1"],
        [("call", "main", H, ORCH), ("call", "interrupt-1-stack", "interrupt:1", "role:loop_detector:1")],
    ),
    (
        "interrupt(inquiry): the stack is rooted at a fresh human asker",
        log(start("orchestrator"), interrupt("inquiry", message="Why?"), start("inquiry_responder", 2)),
        [H, ORCH, "human:asker:1", "role:inquiry_responder:1"],
        [("call", "main", H, ORCH), ("call", "interrupt-1-stack", "human:asker:1", "role:inquiry_responder:1")],
    ),
    (
        "the handler's return closes its stack; later events land on main again",
        log(
            start("orchestrator"),
            interrupt(),
            start("loop_detector", 2),
            done("loop_detector", 2),
            tcall("orchestrator", "t"),
        ),
        [H, ORCH, "interrupt:1", "role:loop_detector:1", "tool:t:1"],
        [
            ("call", "main", H, ORCH),
            ("call", "interrupt-1-stack", "interrupt:1", "role:loop_detector:1"),
            ("return", "interrupt-1-stack", "role:loop_detector:1", "interrupt:1"),
            ("call", "main", ORCH, "tool:t:1"),
        ],
    ),
    (
        "observe: an instant reference from the active tool into the paused stack",
        log(
            start("orchestrator"),
            interrupt(),
            start("loop_detector", 2),
            tcall("loop_detector", "list_role_messages"),
            ("observe", {"role": "orchestrator", "roleId": "orchestrator-0-1", "details": "list_role_messages"}),
        ),
        [H, ORCH, "interrupt:1", "role:loop_detector:1", "tool:list_role_messages:1"],
        [
            ("call", "main", H, ORCH),
            ("call", "interrupt-1-stack", "interrupt:1", "role:loop_detector:1"),
            ("call", "interrupt-1-stack", "role:loop_detector:1", "tool:list_role_messages:1"),
            ("observe", "interrupt-1-stack", "tool:list_role_messages:1", ORCH),
        ],
    ),
    (
        "observe of a role that is not open in a paused stack is skipped",
        log(start("orchestrator"), ("observe", {"role": "orchestrator", "details": "x"})),
        [H, ORCH],
        [("call", "main", H, ORCH)],
    ),
    (
        "terminate: an instant reference that closes the paused call",
        log(
            start("orchestrator"),
            interrupt(),
            start("loop_detector", 2),
            ("terminate", {"role": "orchestrator", "details": "rewind"}),
            done("loop_detector", 2),
            done("orchestrator"),
        ),
        [H, ORCH, "interrupt:1", "role:loop_detector:1"],
        [
            ("call", "main", H, ORCH),
            ("call", "interrupt-1-stack", "interrupt:1", "role:loop_detector:1"),
            ("terminate", "interrupt-1-stack", "role:loop_detector:1", ORCH),
            ("return", "interrupt-1-stack", "role:loop_detector:1", "interrupt:1"),
        ],
    ),
]


@pytest.mark.parametrize(("events", "participants", "operations"), [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_rule(events: list[dict[str, Any]], participants: list[str], operations: list[tuple[str, ...]]) -> None:
    model = build_model(events, meta_status="running", now=at(100))
    assert ids(model) == participants
    assert shapes(model) == operations
    assert [op.id for op in model.operations] == [f"op-{i}" for i in range(1, len(operations) + 1)]


@pytest.mark.parametrize(
    ("status", "outcome"), [("success", "success"), ("error", "error"), ("needs_clarification", "success")]
)
def test_role_return_outcome_follows_the_card_status(status: str, outcome: str) -> None:
    model = build_model(
        log(start("orchestrator"), done("orchestrator", status=status)), meta_status="running", now=at(9)
    )
    assert model.operations[-1].outcome == outcome


@pytest.mark.parametrize(
    ("kind", "outcome"), [("success", "success"), ("timeout", "error"), ("permission_denied", "error")]
)
def test_tool_return_outcome_is_success_iff_the_result_kind_is(kind: str, outcome: str) -> None:
    events = log(start("o"), tcall("o", "run_shell"), tresult("o", "run_shell", kind))
    assert build_model(events, meta_status="running", now=at(9)).operations[-1].outcome == outcome


def test_calls_and_observes_carry_no_outcome_and_only_calls_carry_metrics() -> None:
    model = build_model(
        log(start("o"), interrupt(), start("h", 2), ("observe", {"role": "o", "details": "x"})),
        meta_status="running",
        now=at(9),
    )
    assert [(op.kind, op.outcome, op.metrics is not None) for op in model.operations] == [
        ("call", None, True),
        ("call", None, True),
        ("observe", None, False),
    ]


def test_role_finished_abandons_deeper_open_calls_without_returns() -> None:
    events = log(start("o"), start("coder", 2, 1), tcall("coder", "run_shell"), done("o"))
    model = build_model(events, meta_status="running", now=at(9))
    assert shapes(model)[-1] == ("return", "main", "role:o:1", H)
    assert [op.kind for op in model.operations] == ["call", "call", "call", "return"]
    abandoned = model.operations[1:3]
    assert all(op.lifecycle == "settled" and op.settled_at == at(3) for op in abandoned)


def test_llm_call_start_settles_the_call_transit_but_not_a_lingering_return() -> None:
    events = log(start("o"), tcall("o", "t"), tresult("o", "t"), think("o"))
    model = build_model(events, meta_status="running", now=at(9))
    call, _, ret = model.operations
    assert (call.lifecycle, call.settled_at) == ("settled", at(3))
    assert ret.lifecycle == "in_flight"


def test_llm_call_start_settles_only_the_first_time() -> None:
    events = log(start("o"), think("o"), think("o"))
    assert build_model(events, meta_status="running", now=at(9)).operations[0].settled_at == at(1)


def test_a_nested_call_settles_the_transit_of_a_call_without_llm_call_start() -> None:
    events = log(start("o"), start("coder", 2, 1), tcall("coder", "t"), tresult("coder", "t"), tcall("coder", "u"))
    model = build_model(events, meta_status="running", now=at(9))
    assert model.operations[0].settled_at == at(1)  # the coder's start
    assert model.operations[1].settled_at == at(2)  # the first tool call, not the second


def test_llm_call_adds_total_and_cached_tokens_to_the_innermost_open_call_of_its_role() -> None:
    events = log(
        start("o"),
        start("coder", 2, 1),
        usage("coder", total=100, cached=40),
        usage("coder", promptTokens=10, completionTokens=5),  # no total: prompt + completion
        usage("coder", cached=3),  # no usable counts: nothing added
        done("coder", 2, 1),
        usage("o", total=7),
    )
    model = build_model(events, meta_status="running", now=at(9))
    outer, inner = model.operations[0].metrics, model.operations[1].metrics
    assert inner is not None and (inner.tokens, inner.cached_prompt_tokens) == (115, 40)
    assert outer is not None and (outer.tokens, outer.cached_prompt_tokens) == (7, 0)


def test_llm_call_settles_a_lingering_return_addressed_to_its_role_only() -> None:
    events = log(start("o"), start("coder", 2, 1), done("coder", 2, 1), usage("coder", total=1), usage("o", total=1))
    model = build_model(events, meta_status="running", now=at(9))
    ret = model.operations[2]
    assert (ret.lifecycle, ret.settled_at) == ("settled", at(4))


def test_a_new_call_or_return_supersedes_the_lingering_return() -> None:
    events = log(start("o"), tcall("o", "t"), tresult("o", "t"), tcall("o", "u"))
    ret = build_model(events, meta_status="running", now=at(9)).operations[2]
    assert (ret.lifecycle, ret.settled_at) == ("settled", at(3))


def test_malformed_events_are_skipped_but_still_counted() -> None:
    events: list[Any] = [
        {"type": "role_start", "payload": {"role": "o"}},  # no timestamp
        {"timestamp": at(1), "type": "role_start", "payload": "not a dict"},
        {"timestamp": at(2), "type": ["x"], "payload": {}},
        {"timestamp": at(3), "type": "role_start", "payload": {"role": 5}},
        "garbage",
        {"timestamp": at(5), "type": "role_start", "payload": {"role": "orchestrator", "task": "t"}},
    ]
    model = build_model(events, meta_status="running", now=at(9))
    assert ids(model) == [H, ORCH] and model.operations[0].started_at == at(5)


def test_interrupt_counter_is_shared_by_every_trigger() -> None:
    events = log(
        start("o"),
        interrupt("inquiry", message="?"),
        start("inquiry_responder", 2),
        done("inquiry_responder", 2),
        interrupt(),
        start("loop_detector", 3),
    )
    model = build_model(events, meta_status="running", now=at(9))
    assert [(s.id, s.root) for s in model.stacks] == [
        ("main", H),
        ("interrupt-1-stack", "human:asker:1"),
        ("interrupt-2-stack", "interrupt:2"),
    ]


# --- any log at all ----------------------------------------------------------------------------------


def _check_well_formed(events: list[dict[str, Any]], meta: str) -> None:
    model = build_model(events, meta_status=meta, now=at(len(events)))
    participants = {p.id for p in model.participants}
    stacks = {s.id for s in model.stacks}
    in_flight: dict[str, int] = {}
    for n, op in enumerate(model.operations, 1):
        assert op.id == f"op-{n}"
        assert {op.source, op.destination} <= participants and op.stack in stacks
        assert (op.outcome is not None) == (op.kind == "return")
        assert (op.metrics is not None) == (op.kind == "call")
        assert (op.settled_at is None) == (op.lifecycle == "in_flight")
        if op.kind in ("observe", "terminate"):
            assert op.settled_at == op.started_at
        if op.lifecycle == "in_flight":
            in_flight[op.stack] = in_flight.get(op.stack, 0) + 1
    assert all(count <= 1 for count in in_flight.values()), in_flight
    if meta == "success":
        assert not in_flight
    assert model.active_stack in stacks and model.active_participant in participants


@settings(max_examples=200, deadline=None)
@given(random_logs, st.sampled_from(["running", "success"]))
def test_any_log_folds_into_a_well_formed_model(events: list[dict[str, Any]], meta: str) -> None:
    _check_well_formed(events, meta)
