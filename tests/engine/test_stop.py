"""Stopping a run (``RunControls.stop``): the run's root scope is cancelled, everything in flight ends
before ``execute_run`` returns, the run ends ``cancelled`` with a kept checkpoint and a ``run_stopped``
event — from a tool subprocess, a model call, a pending question, an interlude, a plan modification."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
from tests.engine.harness import call, of_type, turn
from tests.engine.interlude_runs import HANDLERS, ROLES, run
from tests.helpers import SLEEPER, make_settings, process_gone
from tests.slowness import budget

from orchestrator.engine.checkpoint import load_checkpoint
from orchestrator.engine.controls import RunControls, RunStop
from orchestrator.engine.runfolder import read_meta

STALL = {"fail": {"stallBeforeHeadersMs": 60000}}


def _hang() -> float:
    """A stopped run returns in well under a second; this only guards against a hang (and stays below
    the 60 s that the sleeping command and the stalled model call would take if the stop did not end them)."""
    return min(budget(20), 50)


def _stopped_by(events: list[dict[str, Any]]) -> dict[str, Any]:
    assert events[-1]["type"] == "run_stopped", events[-1]
    return events[-1]["payload"]


async def _wait_for_file(path: Path) -> int:
    with trio.fail_after(budget(10)):
        while not path.exists() or not path.read_text().strip():  # noqa: ASYNC110 (a file, no event)
            await trio.sleep(0.01)
    return int(path.read_text())


async def test_a_stop_is_one_cancel_and_the_first_origin_stays() -> None:
    stop = RunStop()
    assert not stop.requested and not stop.scope.cancel_called
    assert stop.stop("ui") and stop.scope.cancel_called
    assert not stop.stop("api") and stop.by == "ui"


async def test_a_stop_kills_the_tool_subprocess_before_the_run_returns(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="planner", task="plan")),
            turn("planner", call("agent", role="coder", task="code")),
            turn("coder", call("run_shell", command=SLEEPER)),
        ]
    }
    runs: list[RunControls] = []
    pids: list[int] = []

    async def operator() -> None:
        while not runs:  # noqa: ASYNC110 (handed over by nursery.start in ``run``)
            await trio.sleep(0.01)
        pids.append(await _wait_for_file(tmp_path / "sleeper.pid"))
        assert runs[0].stop("ui")

    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        with trio.fail_after(_hang()):  # the 60 s command is killed, never waited for
            async with trio.open_nursery() as nursery:
                nursery.start_soon(operator)
                outcome, events = await run(settings, tmp_path, controls=runs)
    assert process_gone(pids[0])  # no window: the group was killed and reaped before the run returned
    meta = read_meta(outcome.run_dir)
    assert meta is not None and meta.status == "cancelled" and meta.result is None and meta.end_time
    assert meta.error is not None and meta.error.kind == "interrupted"
    assert meta.error.message == "the operator stopped the run (from the web UI)"
    assert _stopped_by(events) == {
        "runId": outcome.run_id,
        "by": "ui",
        "liveRoles": ["lead-0-1", "planner-1-2", "coder-2-3"],
    }
    assert not of_type(events, "role_finished")  # abandoned where it stood, not finished
    state, _seq = load_checkpoint(outcome.run_dir)  # the final checkpoint is kept
    assert [f.instance_id for f in state.frames] == ["lead-0-1", "planner-1-2", "coder-2-3"]
    assert state.frames[-1].pending is not None  # the run_shell call it was in, not yet answered


async def test_a_stop_cuts_the_model_call_in_flight(tmp_path: Path, sim_for) -> None:
    stop = RunStop()  # the host's handle on the run's root scope (what ``RunControls.stop`` cancels)

    def listener(event: Any) -> None:
        if type(event).__name__ == "LlmCallStart":
            stop.stop("api")

    async with sim_for({"turns": [turn("lead", **STALL)]}) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        with trio.fail_after(_hang()):
            outcome, events = await run(settings, tmp_path, stop=stop, log_listeners=[listener])
        requests = await sim.responses_requests()
    assert outcome.meta.status == "cancelled"
    assert _stopped_by(events)["by"] == "api"
    assert not of_type(events, "llm_call") and not of_type(events, "llm_retry")
    assert len(requests) <= 1 and not any(r["completed"] for r in requests)


class _Waiting:
    """A human backend that never answers; records that the question was asked and then abandoned."""

    def __init__(self) -> None:
        self.asked = trio.Event()
        self.abandoned = False

    async def ask(self, question_id: str, question: str, context: str | None) -> str:
        self.asked.set()
        try:
            await trio.sleep_forever()
        finally:
            self.abandoned = True
        raise AssertionError("unreachable")


async def test_a_stop_while_a_question_is_pending_ends_the_wait(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="coder", task="code")),
            turn("coder", call("ask_human", question="Which?")),
        ]
    }
    runs: list[RunControls] = []
    human = _Waiting()

    async def operator() -> None:
        await human.asked.wait()
        runs[0].stop("mcp")

    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles={**ROLES, "lead": ["agent", "finish"]})
        with trio.fail_after(_hang()):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(operator)
                outcome, events = await run(settings, tmp_path, controls=runs, human=human)
    assert human.abandoned and outcome.meta.status == "cancelled"
    assert of_type(events, "ask_human") and not of_type(events, "human_answer")
    assert _stopped_by(events)["liveRoles"] == ["lead-0-1", "coder-1-2"]


async def test_a_stop_during_an_interlude_keeps_the_chain_without_the_handler(tmp_path: Path, sim_for) -> None:
    from orchestrator.engine.interrupts import InterruptQueue

    queue = InterruptQueue()
    queue.post_inquiry("How far along are you?")
    stop = RunStop()

    def listener(event: Any) -> None:
        if type(event).__name__ == "LlmCallStart" and event.payload.role == "inquiry_responder":
            stop.stop("api")

    async with sim_for({"turns": [turn("inquiry_responder", **STALL)]}) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES, **HANDLERS)
        with trio.fail_after(_hang()):
            outcome, events = await run(settings, tmp_path, stop=stop, interrupts=queue, log_listeners=[listener])
    assert outcome.meta.status == "cancelled"
    assert of_type(events, "interrupt") and not of_type(events, "interrupt_resolved")
    live = _stopped_by(events)["liveRoles"]
    assert live[0] == "lead-0-1" and live[1].startswith("inquiry_responder-")
    state, _seq = load_checkpoint(outcome.run_dir)
    assert [f.instance_id for f in state.frames] == ["lead-0-1"]  # the handler's frame is never checkpointed


async def test_a_stop_right_after_a_plan_modification_ends_the_run(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="planner", task="plan")),
            turn("planner", call("agent", role="coder", task="code")),
            turn("coder", call("run_shell", command=SLEEPER)),
            turn("lead", last="[Operator plan modification", **STALL),
        ]
    }
    runs: list[RunControls] = []

    def listener(event: Any) -> None:
        if type(event).__name__ == "PlanModification":
            runs[0].stop("ui")

    async def operator() -> None:
        while not runs:  # noqa: ASYNC110 (handed over by nursery.start in ``run``)
            await trio.sleep(0.01)
        await _wait_for_file(tmp_path / "sleeper.pid")
        runs[0].modify_plan("stop everything")  # no planOwnerRole: the root owns the plan

    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        with trio.fail_after(_hang()):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(operator)
                outcome, events = await run(settings, tmp_path, controls=runs, log_listeners=[listener])
    assert process_gone(int((tmp_path / "sleeper.pid").read_text()))
    assert outcome.meta.status == "cancelled"
    kinds = [e["type"] for e in events]
    assert kinds.index("plan_modification") < kinds.index("run_stopped") == len(kinds) - 1


async def test_a_run_stopped_before_it_starts_asks_no_model(tmp_path: Path, sim_for) -> None:
    stop = RunStop()
    stop.stop("api")
    async with sim_for({"turns": [turn("lead", call("finish", status="success", summary="never"))]}) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        with trio.fail_after(_hang()):
            outcome, events = await run(settings, tmp_path, stop=stop)
        requests = await sim.responses_requests()
    assert outcome.meta.status == "cancelled" and requests == []
    assert _stopped_by(events)["by"] == "api"


async def test_a_stop_ends_the_run_s_mcp_server_process(tmp_path: Path, sim_for) -> None:
    from tests.mcpclient.support import mcp_settings, stdio_server

    script = {"turns": [turn("lead", call("fx__pid")), turn("lead", call("fx__hang"))]}
    stop = RunStop()

    def listener(event: Any) -> None:
        if type(event).__name__ == "ToolCallEvent" and event.payload.tool == "fx__hang":
            stop.stop("api")

    async with sim_for(script) as sim:
        settings = mcp_settings(tmp_path, sim.base_url, {"lead": ["finish", "mcp:fx/*"]}, {"fx": stdio_server()})
        with trio.fail_after(_hang()):
            outcome, events = await run(settings, tmp_path, stop=stop, log_listeners=[listener])
    (pid_result, *_rest) = [p["result"] for p in of_type(events, "tool_result")]
    server_pid = int(pid_result["data"]["result"])
    assert outcome.meta.status == "cancelled"
    assert process_gone(server_pid)  # the MCP server process ended with the run
