"""Handler interludes against the real sim: loop checks, context handlers, inquiries, plan modification."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio
from tests.engine.harness import call, finish, of_type, turn, types
from tests.engine.interlude_runs import HANDLERS, PRESSURE, ROLES, run
from tests.helpers import make_settings


def loop_triggers(every_tool_calls: int = 1000, every_tokens: int = 10_000_000, **extra: Any) -> dict[str, Any]:
    return {"handlerRole": "loop_detector", "everyToolCalls": every_tool_calls, "everyTokens": every_tokens, **extra}


def spin(role: str = "coder") -> dict[str, Any]:
    """A coder that keeps running the same command (reusable)."""
    return turn(role, call("run_shell", command="echo same"), reusable=True)


def _delegate_to_coder() -> list[dict[str, Any]]:
    return [turn("lead", call("agent", role="coder", task="loop forever"))]


def _pairs_ok(events: list[dict[str, Any]]) -> None:
    starts = sorted(p["roleId"] for p in of_type(events, "role_start"))
    finishes = sorted(p["roleId"] for p in of_type(events, "role_finished"))
    assert starts == finishes
    assert len(of_type(events, "interrupt")) == len(of_type(events, "interrupt_resolved"))


# --- loop check -------------------------------------------------------------------------------------


async def test_loop_check_abort_ends_the_role_with_loop_detected(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            *_delegate_to_coder(),
            turn("loop_detector", call("trigger_interrupt", targetRole="coder-1-2", action="abort", reason="spinning")),
            turn("loop_detector", finish("aborted it")),
            turn("lead", finish("lead handled it"), last="loop_detected"),
            spin(),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES, interruptTriggers=loop_triggers(2))
        outcome, events = await run(settings, tmp_path, effort="quick")
    assert outcome.card.summary == "lead handled it"
    coder_runs = [r for r in of_type(events, "tool_result") if r["role"] == "coder"]
    assert len(coder_runs) == 4  # quick ×2 on everyToolCalls 2
    assert of_type(events, "interrupt") == [
        {"trigger": "loop_check", "handler": "loop_detector", "target": "coder-1-2"}
    ]
    resolved = of_type(events, "interrupt_resolved")
    assert resolved[0]["action"] == "abort" and resolved[0]["summary"] == "spinning"  # the verdict's reason
    coder_card = next(f for f in of_type(events, "role_finished") if f["role"] == "coder")
    assert coder_card["error"]["kind"] == "loop_detected"
    handler_start = next(s for s in of_type(events, "role_start") if s["role"] == "loop_detector")
    assert "coder-1-2" in handler_start["task"] and handler_start["depth"] == 0
    _pairs_ok(events)


async def test_loop_check_redirect_injects_the_reason_and_continue_changes_nothing(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            *_delegate_to_coder(),
            turn(
                "loop_detector", call("trigger_interrupt", targetRole="coder-1-2", action="redirect", reason="try ls")
            ),
            turn("loop_detector", finish("redirected")),
            turn("coder", finish("took the hint"), last="try ls"),
            turn("lead", finish("done")),
            spin(),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES, interruptTriggers=loop_triggers(1))
        outcome, events = await run(settings, tmp_path, effort="quick")
        requests = await sim.responses_requests()
    assert outcome.card.summary == "done"
    assert of_type(events, "interrupt_resolved")[0]["action"] == "redirect"
    coder_after = next(r for r in requests if r["turn"] == 3)["body"]["input"]
    assert coder_after[-1]["content"].endswith("try ls")


def _two_calls_then(*handler_turns: dict[str, Any]) -> dict[str, Any]:
    """lead → coder; the coder runs two commands (a quick loop check at everyToolCalls 1), the handler
    turns run, then the coder and the lead finish."""
    return {
        "turns": [
            *_delegate_to_coder(),
            turn("coder", call("run_shell", command="echo same")),
            turn("coder", call("run_shell", command="echo same")),
            *handler_turns,
            turn("coder", finish("finished")),
            turn("lead", finish("done")),
        ]
    }


async def test_a_handler_that_decides_nothing_resolves_as_continue(tmp_path: Path, sim_for) -> None:
    script = _two_calls_then(turn("loop_detector", finish("looks fine")))
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES, interruptTriggers=loop_triggers(1))
        outcome, events = await run(settings, tmp_path, effort="quick")
    assert outcome.card.summary == "done"
    assert of_type(events, "interrupt_resolved")[0]["action"] == "continue"
    _pairs_ok(events)


async def test_trigger_interrupt_on_the_wrong_instance_names_the_right_one(tmp_path: Path, sim_for) -> None:
    script = _two_calls_then(
        turn("loop_detector", call("trigger_interrupt", targetRole="lead-0-1", action="abort", reason="x")),
        turn("loop_detector", finish("oops")),
    )
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES, interruptTriggers=loop_triggers(1))
        outcome, events = await run(settings, tmp_path, effort="quick")
    assert outcome.card.summary == "done"
    result = next(r for r in of_type(events, "tool_result") if r["tool"] == "trigger_interrupt")
    assert result["kind"] == "invalid_arguments" and "coder-1-2" in result["result"]["message"]
    assert of_type(events, "interrupt_resolved")[0]["action"] == "continue"


async def test_cadence_scales_with_effort_and_tokens_count_too(tmp_path: Path, sim_for) -> None:
    for effort, expected_calls in (("quick", 2), ("thorough", 6)):
        script = {
            "turns": [
                *_delegate_to_coder(),
                turn("loop_detector", call("trigger_interrupt", targetRole="coder-1-2", action="abort", reason="r")),
                turn("loop_detector", finish("x")),
                turn("lead", finish("done")),
                spin(),
            ]
        }
        async with sim_for(script) as sim:
            ws = tmp_path / effort
            ws.mkdir()
            settings = make_settings(ws, sim.base_url, roles=ROLES, interruptTriggers=loop_triggers(1))
            _, events = await run(settings, ws, effort=effort)
        assert len([r for r in of_type(events, "tool_result") if r["role"] == "coder"]) == expected_calls
    # tokens: 2 tokens × quick factor 2 = 4 completion tokens; each coder turn reports 3
    script = {
        "turns": [
            *_delegate_to_coder(),
            turn("loop_detector", call("trigger_interrupt", targetRole="coder-1-2", action="abort", reason="r")),
            turn("loop_detector", finish("x")),
            turn("lead", finish("done")),
            turn("coder", call("run_shell", command="echo t"), usage={"completionTokens": 3}, reusable=True),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(
            tmp_path / "tok", sim.base_url, roles=ROLES, interruptTriggers=loop_triggers(1000, every_tokens=2)
        )
        (tmp_path / "tok" / "ws").mkdir()
        _, events = await run(settings, tmp_path / "tok" / "ws", effort="quick")
    assert len([r for r in of_type(events, "tool_result") if r["role"] == "coder"]) == 2


async def test_no_trigger_section_means_no_loop_checks(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            *_delegate_to_coder(),
            *[turn("coder", call("run_shell", command="echo same")) for _ in range(6)],
            turn("coder", finish("finished")),
            turn("lead", finish("done")),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        outcome, events = await run(settings, tmp_path, effort="quick")
    assert outcome.card.summary == "done" and "interrupt" not in types(events)


# --- context handlers --------------------------------------------------------------------------------


async def test_entry_pressure_is_compacted_by_the_handler(tmp_path: Path, sim_for) -> None:
    roles = {**ROLES, "coder": ["run_shell", "finish"]}
    script = {
        "turns": [
            turn("coder", call("run_shell", command="echo one"), usage=PRESSURE),
            turn(
                "context_manager",
                call("edit_context", targetRole="coder-0-1", operations=[{"op": "drop", "range": [2, 4]}]),
            ),
            turn("context_manager", finish("dropped the echo turn")),
            turn("coder", finish("carried on"), last="context compacted"),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(
            tmp_path,
            sim.base_url,
            roles={"coder": roles["coder"], **{k: v for k, v in roles.items() if k != "coder"}},
            **HANDLERS,
        )
        outcome, events = await run(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.summary == "carried on"
    assert of_type(events, "interrupt")[0] == {
        "trigger": "context_pressure",
        "handler": "context_manager",
        "target": "coder-0-1",
    }
    assert of_type(events, "interrupt_resolved")[0]["action"] == "compacted"
    last = requests[-1]["body"]["input"]
    assert len(last) == 3 and "dropped the echo turn" in last[-1]["content"]
    assert of_type(events, "llm_call")[-1]["sentFrom"] == 0  # the edit forced a full snapshot
    _pairs_ok(events)


async def test_a_failed_pressure_handler_falls_back_to_the_handoff_notice(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("coder", call("run_shell", command="echo one"), usage=PRESSURE),
            turn("context_manager", finish("could not", status="error")),
            turn(
                "coder",
                finish("handing off", status="error", error={"kind": "context_handoff"}),
                last="context pressure",
            ),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(
            tmp_path,
            sim.base_url,
            roles={"coder": ["run_shell", "finish"], **{k: v for k, v in ROLES.items() if k != "coder"}},
            **HANDLERS,
        )
        outcome, events = await run(settings, tmp_path)
    resolved = of_type(events, "interrupt_resolved")[0]
    assert resolved["action"] == "failed" and resolved["handlerStatus"] == "error"
    assert outcome.card.error.kind == "context_handoff"


async def test_a_rejection_is_parked_for_the_handler_at_any_depth(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            *_delegate_to_coder(),
            turn("coder", call("run_shell", command="echo big")),
            turn("coder", fail={"contextExceeded": True, "promptTokens": 30000}),
            turn(
                "context_manager",
                call("edit_context", targetRole="coder-1-2", operations=[{"op": "drop", "range": [2, 4]}]),
            ),
            turn("context_manager", finish("removed the big output")),
            turn("coder", finish("fits again"), last="context compacted"),
            turn("lead", finish("done")),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES, **HANDLERS)
        outcome, events = await run(settings, tmp_path)
    assert outcome.card.summary == "done"
    interrupt = of_type(events, "interrupt")[0]
    assert interrupt["trigger"] == "context_budget_exceeded" and interrupt["target"] == "coder-1-2"
    assert of_type(events, "interrupt_resolved")[0]["action"] == "compacted"
    assert "context_compacted" not in types(events)  # the handler did it, not the backstop


async def test_a_failed_rejection_handler_falls_back_to_the_naive_backstop(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            *_delegate_to_coder(),
            turn("coder", call("run_shell", command="echo big")),
            turn("coder", fail={"contextExceeded": True, "promptTokens": 20000}),
            turn("context_manager", finish("no", status="error")),
            turn("coder", finish("after backstop"), last="context window exceeded"),
            turn("lead", finish("done")),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES, **HANDLERS)
        outcome, events = await run(settings, tmp_path)
    assert outcome.card.summary == "done"
    assert of_type(events, "interrupt_resolved")[0]["action"] == "failed"
    assert len(of_type(events, "context_compacted")) == 1


async def test_a_handler_that_claims_success_without_editing_is_failed_and_the_backstop_runs(
    tmp_path: Path, sim_for
) -> None:
    """Issue 25: against llama-server a handler finished "success" without touching the target; the run logged
    ``compacted``, appended a "context compacted" notice, and the rejected prompt grew until the role died."""
    script = {
        "turns": [
            *_delegate_to_coder(),
            turn("coder", call("run_shell", command="echo big")),
            turn("coder", fail={"contextExceeded": True, "promptTokens": 20000}),
            turn("context_manager", call("context_info", targetRole="coder-1-2")),
            turn("context_manager", finish("compacted it")),  # it did not
            turn("coder", finish("after backstop"), last="context window exceeded"),
            turn("lead", finish("done")),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES, **HANDLERS)
        outcome, events = await run(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.summary == "done"
    resolved = of_type(events, "interrupt_resolved")[0]
    assert resolved["action"] == "failed" and resolved["handlerStatus"] == "success"
    assert "did not shrink" in resolved["summary"]
    assert len(of_type(events, "context_compacted")) == 1  # the backstop compacted instead
    coder_after = requests[-2]["body"]["input"]
    assert not any("context compacted" in json.dumps(item) for item in coder_after)
    _pairs_ok(events)


async def test_a_pressure_handler_that_changes_nothing_falls_back_to_the_handoff_notice(
    tmp_path: Path, sim_for
) -> None:
    script = {
        "turns": [
            turn("coder", call("run_shell", command="echo one"), usage=PRESSURE),
            turn("context_manager", finish("all tidy")),
            turn(
                "coder",
                finish("handing off", status="error", error={"kind": "context_handoff"}),
                last="context pressure",
            ),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(
            tmp_path,
            sim.base_url,
            roles={"coder": ["run_shell", "finish"], **{k: v for k, v in ROLES.items() if k != "coder"}},
            **HANDLERS,
        )
        outcome, events = await run(settings, tmp_path)
    resolved = of_type(events, "interrupt_resolved")[0]
    assert resolved["action"] == "failed" and resolved["handlerStatus"] == "success"
    assert outcome.card.error.kind == "context_handoff"


# --- operator requests --------------------------------------------------------------------------------


async def test_an_inquiry_is_answered_by_a_fresh_handler_and_changes_nothing(tmp_path: Path, sim_for) -> None:
    from orchestrator.engine.interrupts import InterruptQueue

    script = {
        "turns": [
            turn("inquiry_responder", call("recent_role_tool_calls", targetRole="lead-0-1")),
            turn("inquiry_responder", finish("It is just starting.")),
            turn("lead", finish("done")),
        ]
    }
    queue = InterruptQueue()
    queue.post_inquiry("How far along are you?")
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES, **HANDLERS)
        _outcome, events = await run(settings, tmp_path, interrupts=queue)
        requests = await sim.responses_requests()
    interrupt = of_type(events, "interrupt")[0]
    assert interrupt == {
        "trigger": "inquiry",
        "handler": "inquiry_responder",
        "target": "lead-0-1",
        "message": "How far along are you?",
    }
    resolved = of_type(events, "interrupt_resolved")[0]
    assert resolved["action"] == "answered" and resolved["summary"] == "It is just starting."
    handler_task = next(s for s in of_type(events, "role_start") if s["role"] == "inquiry_responder")["task"]
    assert "How far along are you?" in handler_task and "lead-0-1" in handler_task
    lead_request = requests[-1]["body"]["input"]
    assert len(lead_request) == 2  # system (with the effort directive), task: untouched by the inquiry
    assert of_type(events, "observe") == [{"role": "lead", "roleId": "lead-0-1", "details": "recent_role_tool_calls"}]
    order = types(events)
    assert order.index("observe") == order.index("tool_call", order.index("interrupt")) + 1
    _pairs_ok(events)


async def test_an_inquiry_without_a_handler_is_dropped(tmp_path: Path, sim_for) -> None:
    from orchestrator.engine.interrupts import InterruptQueue

    queue = InterruptQueue()
    queue.post_inquiry("anyone there?")
    async with sim_for({"turns": [turn("lead", finish("done"))]}) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        outcome, events = await run(settings, tmp_path, interrupts=queue)
    assert outcome.card.summary == "done"
    assert of_type(events, "inquiry_dropped") == [
        {"message": "anyone there?", "reason": "executor.inquiryHandlerRole is not configured"}
    ]


async def test_plan_modification_cancels_the_chain_below_the_owner_at_once(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="planner", task="plan")),
            turn("planner", call("agent", role="coder", task="code")),
            turn("coder", finish("never"), content="slow " * 200, chunkChars=5, chunkDelayMs=50),
            turn("planner", finish("re-planned"), last="[Operator plan modification"),
            turn("lead", finish("done"), last="re-planned"),
        ]
    }
    runs: list[Any] = []
    coder_started = trio.Event()

    def listener(event: Any) -> None:
        if type(event).__name__ == "LlmCallStart" and event.payload.role == "coder":
            coder_started.set()

    async with sim_for(script) as sim:
        settings = make_settings(
            tmp_path, sim.base_url, roles=ROLES, interruptTriggers=loop_triggers(planOwnerRole="planner")
        )
        result: dict[str, Any] = {}
        async with trio.open_nursery() as nursery:

            async def operator() -> None:
                await coder_started.wait()
                with trio.fail_after(10):
                    while not any(r["turn"] == 2 for r in await sim.responses_requests()):  # noqa: ASYNC110
                        await trio.sleep(0.02)
                result["modified"] = runs[0].modify_plan("use the new approach")

            nursery.start_soon(operator)
            outcome, events = await run(settings, tmp_path, controls=runs, log_listeners=[listener])
        requests = await sim.responses_requests()
    assert outcome.card.summary == "done"
    owner, aborted = result["modified"]
    assert owner.instance_id == "planner-1-2" and aborted == ["coder-2-3"]
    assert of_type(events, "plan_modification") == [
        {"target": "planner-1-2", "targetRole": "planner", "message": "use the new approach", "aborted": ["coder-2-3"]}
    ]
    coder_request = next(r for r in requests if r["turn"] == 2)
    assert coder_request["completed"] is False  # the in-flight stream was cut, not finished
    assert not [c for c in of_type(events, "llm_call") if c["role"] == "coder"]  # no partial turn logged
    coder_done = next(f for f in of_type(events, "role_finished") if f["role"] == "coder")
    assert coder_done["error"]["kind"] == "interrupted"
    planner_next = next(r for r in requests if r["turn"] == 3)["body"]["input"]
    assert planner_next[-1]["content"].startswith("[Operator plan modification")
    assert json.loads(planner_next[-2]["output"])["error"]["kind"] == "interrupted"
    _pairs_ok(events)


async def test_plan_modification_at_the_root_unwinds_every_frame_at_its_own_boundary(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="planner", task="plan")),
            turn("planner", call("agent", role="coder", task="code")),
            turn("coder", call("run_shell", command="sleep 20")),
            turn("lead", finish("re-planned at the top"), last="[Operator plan modification"),
        ]
    }
    runs: list[Any] = []
    result: dict[str, Any] = {}

    def listener(event: Any) -> None:
        if type(event).__name__ == "ToolCallEvent" and event.payload.tool == "run_shell":
            result["modified"] = runs[0].modify_plan("stop everything")  # no planOwnerRole: the root owns

    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        with trio.fail_after(10):  # the 20 s command is killed, not waited for
            outcome, events = await run(settings, tmp_path, controls=runs, log_listeners=[listener])
    assert outcome.card.summary == "re-planned at the top"
    assert result["modified"][1] == ["planner-1-2", "coder-2-3"]
    finished = {f["roleId"]: f for f in of_type(events, "role_finished")}
    assert finished["coder-2-3"]["error"]["kind"] == "interrupted"
    assert finished["planner-1-2"]["error"]["kind"] == "interrupted"
    assert [f["roleId"] for f in of_type(events, "role_finished")][:2] == ["coder-2-3", "planner-1-2"]
    _pairs_ok(events)
