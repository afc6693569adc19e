"""Interrupt stacks (push, pop, linger, nesting), observe/terminate across stacks, and the invariant."""

from __future__ import annotations

from tests.flow.logs import at, done, interrupt, log, shapes, start, tcall, think, tresult, usage

from orchestrator.flow import FlowState, build_model, finalize, fold

H, ORCH, C = "human:root", "role:orchestrator:1", "role:coder:1"
LD = "role:loop_detector:1"


def frames(events, meta_status: str = "running"):
    """The model after each event (as a poll would see it)."""
    state, models = FlowState(), []
    for event in events:
        fold(state, event)
        models.append(finalize(state, meta_status, event["timestamp"]))
    return models


def invariant(model) -> tuple[str, str]:
    return model.active_stack, model.active_participant


def test_an_empty_log_is_the_root_alone_on_main() -> None:
    model = build_model([], meta_status=None, now=at(0))
    assert [p.id for p in model.participants] == [H] and model.operations == []
    assert [(s.id, s.root) for s in model.stacks] == [("main", H)]
    assert invariant(model) == ("main", H) and model.status == "unknown"


def test_push_pause_resolve_resume() -> None:
    events = log(
        start("orchestrator"),  # 0
        start("coder", 2, 1),  # 1
        think("coder"),  # 2
        interrupt(),  # 3 fresh stack, active on arrival
        start("loop_detector", 3),  # 4
        tcall("loop_detector", "recent_role_tool_calls"),  # 5
        ("observe", {"role": "coder", "roleId": "coder-1-2", "details": "recent_role_tool_calls"}),  # 6
        tresult("loop_detector", "recent_role_tool_calls"),  # 7
        done("loop_detector", 3),  # 8 the stack resolves and pops
        usage("coder", total=5),  # 9
        tcall("coder", "run_shell"),  # 10 first activity after: the resolved return settles
    )
    models = frames(events)
    assert [invariant(m) for m in models] == [
        ("main", ORCH),
        ("main", C),
        ("main", C),
        ("interrupt-1-stack", "interrupt:1"),
        ("interrupt-1-stack", LD),
        ("interrupt-1-stack", "tool:recent_role_tool_calls:1"),
        ("interrupt-1-stack", "tool:recent_role_tool_calls:1"),  # observe never moves activity
        ("interrupt-1-stack", LD),  # the tool's return travels to the handler
        ("main", C),  # resolved: activity yields to the stack with open work
        ("main", C),
        ("main", "tool:run_shell:1"),
    ]
    handler_return = models[8].operations[-1]
    assert handler_return.kind == "return" and handler_return.lifecycle == "in_flight"
    assert models[9].operations[6].lifecycle == "in_flight"  # the coder's llm_call does not settle it
    settled = models[10].operations[6]
    assert (settled.lifecycle, settled.settled_at) == ("settled", at(10))
    # The paused coder call stays as it was (settled by its llm_call_start) throughout.
    assert {m.operations[1].settled_at for m in models[3:]} == {at(2)}


def test_paused_stack_keeps_its_in_flight_operations_frozen() -> None:
    events = log(start("orchestrator"), tcall("orchestrator", "t"), interrupt(), start("loop_detector", 2))
    model = build_model(events, meta_status="running", now=at(50))
    tool_call = model.operations[1]
    assert tool_call.lifecycle == "in_flight" and tool_call.stack == "main"
    assert invariant(model) == ("interrupt-1-stack", LD)


def test_nested_interrupts_pop_innermost_first() -> None:
    events = log(
        start("orchestrator"),
        interrupt(),
        start("loop_detector", 2),
        interrupt("context_pressure"),
        start("context_manager", 3),
        ("observe", {"role": "loop_detector", "details": "context_info"}),
        ("observe", {"role": "orchestrator", "details": "context_info"}),
        done("context_manager", 3),
        done("loop_detector", 2),
        done("orchestrator"),
    )
    models = frames(events)
    assert [s.id for s in models[-1].stacks] == ["main", "interrupt-1-stack", "interrupt-2-stack"]
    assert invariant(models[4]) == ("interrupt-2-stack", "role:context_manager:1")
    observes = [shape for shape in shapes(models[-1]) if shape[0] == "observe"]
    assert observes == [
        ("observe", "interrupt-2-stack", "role:context_manager:1", LD),
        ("observe", "interrupt-2-stack", "role:context_manager:1", ORCH),
    ]
    assert invariant(models[7]) == ("interrupt-1-stack", LD)
    assert invariant(models[8]) == ("main", ORCH)
    assert invariant(models[9]) == ("main", H)
    assert shapes(models[-1])[-1] == ("return", "main", ORCH, H)


def test_observe_prefers_the_instance_id_over_the_newest_call_of_the_role() -> None:
    events = log(
        start("coder", 1, 0),
        start("coder", 2, 1),
        interrupt(),
        start("loop_detector", 3),
        ("observe", {"role": "coder", "roleId": "coder-0-1", "details": "x"}),
        ("observe", {"role": "coder", "details": "y"}),
    )
    model = build_model(events, meta_status="running", now=at(9))
    assert [op.destination for op in model.operations if op.kind == "observe"] == [C, "role:coder:2"]


def test_observe_skips_an_instance_that_already_returned() -> None:
    events = log(
        start("orchestrator"),
        start("coder", 2, 1),
        done("coder", 2, 1),
        interrupt(),
        start("loop_detector", 3),
        ("observe", {"role": "coder", "roleId": "coder-1-2", "details": "x"}),
    )
    model = build_model(events, meta_status="running", now=at(9))
    assert [op.kind for op in model.operations] == ["call", "call", "return", "call"]


def test_terminate_removes_the_call_and_settles_its_incoming_return() -> None:
    events = log(
        start("orchestrator"),
        start("coder", 2, 1),
        tcall("coder", "t"),
        tresult("coder", "t"),  # 3: lingers on main, addressed to the coder
        interrupt(),
        start("loop_detector", 3),
        ("terminate", {"role": "coder", "details": "rewind"}),  # 6
        done("loop_detector", 3),
        done("coder", 2, 1),  # ignored: the coder's call is gone
        usage("orchestrator", total=1),
        start("coder", 4, 1),
    )
    models = frames(events)
    final = models[-1]
    coder_call, lingering, terminate = final.operations[1], final.operations[3], final.operations[5]
    assert (coder_call.lifecycle, coder_call.settled_at) == ("settled", at(6))
    assert (lingering.lifecycle, lingering.settled_at) == ("settled", at(6))
    assert (terminate.kind, terminate.settled_at, terminate.destination) == ("terminate", at(6), C)
    assert invariant(models[6]) == ("interrupt-1-stack", LD)  # terminate never moves activity
    assert invariant(models[7]) == ("main", ORCH)
    assert shapes(final)[-1] == ("call", "main", ORCH, "role:coder:2")
    assert [op.kind for op in final.operations].count("return") == 2


def test_terminating_the_whole_main_chain_leaves_the_resolved_stack_active() -> None:
    events = log(
        start("orchestrator"),
        interrupt(),
        start("loop_detector", 2),
        ("terminate", {"role": "orchestrator"}),
        done("loop_detector", 2),
    )
    model = build_model(events, meta_status="running", now=at(9))
    assert invariant(model) == ("interrupt-1-stack", "interrupt:1")


def test_interrupt_resolved_pops_a_stack_whose_handler_never_started() -> None:
    events = log(
        start("orchestrator"),
        tcall("orchestrator", "t"),
        tresult("orchestrator", "t"),
        interrupt(),
        ("interrupt_resolved", {"trigger": "loop_check", "handler": "h", "target": "x", "action": "continue"}),
        tcall("orchestrator", "u"),
    )
    model = build_model(events, meta_status="running", now=at(9))
    assert shapes(model)[-1] == ("call", "main", ORCH, "tool:u:1")
    assert invariant(model) == ("main", "tool:u:1")


def test_interrupt_resolved_after_a_normal_handler_changes_nothing() -> None:
    base = log(start("orchestrator"), interrupt(), start("loop_detector", 2), done("loop_detector", 2))
    resolved = {"timestamp": at(4), "type": "interrupt_resolved", "payload": {"action": "continue"}}
    assert build_model([*base, resolved], meta_status="running", now=at(9)) == build_model(
        base, meta_status="running", now=at(9)
    )


def test_run_resumed_abandons_handler_stacks_and_mid_turn_calls() -> None:
    events = log(
        start("orchestrator"),
        start("coder", 2, 1),
        tcall("coder", "run_shell"),  # 2: the kill lands mid-tool
        interrupt(),
        start("loop_detector", 4),
        ("run_resumed", {"runId": "r", "resumedFrames": 2}),  # 5
        start("coder", 2, 1),  # a boundary duplicate: ignored
        tcall("coder", "run_shell"),
        tresult("coder", "run_shell"),
    )
    model = build_model(events, meta_status="running", now=at(20))
    by_id = {op.id: op for op in model.operations}
    assert by_id["op-3"].settled_at == at(5) and by_id["op-4"].settled_at == at(5)
    assert shapes(model)[-2:] == [("call", "main", C, "tool:run_shell:2"), ("return", "main", "tool:run_shell:2", C)]
    assert invariant(model) == ("main", C)


def test_inquiry_question_becomes_the_handler_call_and_is_cleared_by_the_next_start() -> None:
    from orchestrator.flow import operation_details

    events = log(
        start("orchestrator"),
        interrupt("inquiry", message="How far along?"),
        start("inquiry_responder", 2, task="generated briefing"),
        done("inquiry_responder", 2),
        start("coder", 3, 1, task="the coder's task"),
    )
    state = FlowState()
    for event in events:
        fold(state, event)
    assert operation_details(events, state, "op-2") == "How far along?"
    assert operation_details(events, state, "op-4") == "the coder's task"


def test_an_instance_finishing_below_the_top_cuts_the_stacks_above_it() -> None:
    events = log(
        start("orchestrator"),
        start("coder", 2, 1),
        interrupt(),
        start("loop_detector", 3),
        done("coder", 2, 1, status="error"),  # the handler never finished
        tcall("orchestrator", "t"),
    )
    model = build_model(events, meta_status="running", now=at(9))
    assert shapes(model)[-2:] == [("return", "main", C, ORCH), ("call", "main", ORCH, "tool:t:1")]
    handler_call = model.operations[2]
    assert (handler_call.lifecycle, handler_call.settled_at) == ("settled", at(4))
    assert invariant(model) == ("main", "tool:t:1")
