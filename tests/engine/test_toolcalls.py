"""The tool-call layer: what native tools are handed, ``agent`` as an instruction to the role loop, ``ask_human``
and its backend, and cross-role ``edit_context`` rejections."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
from tests.engine.harness import call, finish, of_type, run_task, turn, types
from tests.engine.interlude_runs import HANDLERS, PRESSURE, run
from tests.engine.interlude_runs import ROLES as HANDLER_ROLES
from tests.helpers import make_settings

from orchestrator.config.secrets import Redactor
from orchestrator.conversation import FunctionCall, Message, ResultCard, ToolCall
from orchestrator.engine.checkpoint import load_checkpoint
from orchestrator.engine.interrupts import InterruptQueue
from orchestrator.engine.runcontext import RunContext
from orchestrator.engine.runfolder import runs_root
from orchestrator.engine.state import PendingTurn, RunState
from orchestrator.engine.toolcalls import CallDone, Delegate, ToolCalls, tool_context
from orchestrator.runlog import read_events
from orchestrator.runlog.writer import RunLog

ROLES = {
    "lead": ["agent", "finish", "write_plan", "read_plan", "test"],
    "leaf": ["finish"],
}


def _context(tmp_path: Path, log: RunLog) -> RunContext:
    settings = make_settings(tmp_path, "http://127.0.0.1:9/v1", ROLES, defaultToolTimeoutSeconds=7)
    return RunContext(
        settings=settings,
        workspace=tmp_path,
        state=RunState(run_id="run-20250101-120000", started_at="2025-01-01T12:00:00Z"),
        log=log,
        redactor=Redactor(),
        interrupts=InterruptQueue(),
        human=None,
        checkpointer=None,
    )


def _agent_call(**arguments: str) -> ToolCall:
    return ToolCall(id="c1", function=FunctionCall(name="agent", arguments=msgspec.json.encode(arguments).decode()))


def test_a_native_tool_sees_its_run_role_and_the_deployments_default_timeout(tmp_path: Path) -> None:
    with RunLog(tmp_path / "log.jsonl") as log:
        run = _context(tmp_path, log)
        frame = run.new_frame("lead", 0, "t", None)
        ctx = tool_context(run, frame, 2.5)
    assert ctx.workspace == tmp_path and ctx.timeout_seconds == 2.5
    assert ctx.run_id == "run-20250101-120000" and ctx.role_id == frame.instance_id == "lead-0-1"
    assert ctx.default_tool_timeout_seconds == 7.0
    assert ctx.env is None and ctx.secrets_dir is None and ctx.fetch_exempt_addresses == ()


async def test_agent_is_an_instruction_and_its_card_comes_back_through_delegated(tmp_path: Path) -> None:
    with RunLog(tmp_path / "log.jsonl") as log:
        run = _context(tmp_path, log)
        tools = ToolCalls(run, {})
        frame = run.new_frame("lead", 0, "t", None)
        call_ = _agent_call(role="leaf", task="look")
        pending = PendingTurn(assistant=Message(role="assistant", tool_calls=[call_]))
        step = await tools.execute(frame, pending, call_)
        assert step == Delegate(role="leaf", task="look")
        assert [e["type"] for e in read_events(log.path)] == ["tool_call"]  # nothing ran, no child minted
        assert run.state.registry_counter == 1 and run.state.frames == []
        card = ResultCard(status="success", summary="seen")
        done = tools.delegated(frame, call_, card, refused=False)
        refused = tools.delegated(frame, call_, ResultCard(status="error", summary="no", error=None), refused=True)
    assert done == CallDone(text=msgspec.json.encode(card).decode(), card=None)
    results = [e["payload"]["result"] for e in read_events(log.path) if e["type"] == "tool_result"]
    assert results[0] == {"kind": "success", "data": {"status": "success", "summary": "seen"}}
    assert results[1]["kind"] == "success"  # a refusal without an error kind still reports the card
    assert refused.card is None


async def test_an_agent_call_failing_its_checks_never_becomes_an_instruction(tmp_path: Path) -> None:
    with RunLog(tmp_path / "log.jsonl") as log:
        run = _context(tmp_path, log)
        tools = ToolCalls(run, {})
        frame = run.new_frame("lead", 0, "t", None)
        call_ = _agent_call(role="leaf")  # no task: the manifest's schema refuses it
        pending = PendingTurn(assistant=Message(role="assistant", tool_calls=[call_]))
        step = await tools.execute(frame, pending, call_)
    assert isinstance(step, CallDone) and '"invalid_arguments"' in step.text


async def test_write_plan_in_a_run_writes_that_runs_plan(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("write_plan", content="# the plan\n")),
            turn("lead", call("read_plan"), last="bytes"),
            turn("lead", finish("planned"), last="the plan"),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, ROLES)
        outcome, events = await run_task(settings, tmp_path)
    assert outcome.card.summary == "planned"
    assert (outcome.run_dir / "plan.md").read_text() == "# the plan\n"
    written = of_type(events, "tool_result")[0]["result"]
    assert written == {"kind": "success", "data": {"runId": outcome.run_dir.name, "bytes": 11}}
    assert types(events).count("tool_result") == 3  # write_plan, read_plan, finish


# --- human questions ---------------------------------------------------------------------------------


class ScriptedHuman:
    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.asked: list[tuple[str, str | None]] = []

    async def ask(self, question_id: str, question: str, context: str | None) -> str:
        self.asked.append((question, context))
        return self.answer


async def test_ask_human_waits_for_the_backend_and_logs_both_sides(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("coder", call("ask_human", question="Tabs or spaces?", context="style")),
            turn("coder", finish("spaces it is"), last="spaces"),
        ]
    }
    human = ScriptedHuman("spaces")
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles={"coder": HANDLER_ROLES["coder"]})
        outcome, events = await run(settings, tmp_path, human=human)
    assert outcome.card.summary == "spaces it is" and human.asked == [("Tabs or spaces?", "style")]
    asked = of_type(events, "ask_human")[0]
    assert asked["question"] == "Tabs or spaces?" and asked["context"] == "style"
    assert of_type(events, "human_answer") == [{"id": asked["id"], "answer": "spaces"}]


async def test_ask_human_without_a_backend_is_unavailable(tmp_path: Path, sim_for) -> None:
    script = {"turns": [turn("coder", call("ask_human", question="?")), turn("coder", finish("ok"))]}
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles={"coder": HANDLER_ROLES["coder"]})
        _, events = await run(settings, tmp_path)
    assert of_type(events, "tool_result")[0]["kind"] == "unavailable"


async def test_cross_role_edit_rejections_and_no_checkpoint_inside_the_interlude(tmp_path: Path, sim_for) -> None:
    target = "coder-0-1"
    bad_batches = [
        {"targetRole": target, "operations": [{"op": "drop", "range": [1, 3]}]},  # touches the preamble
        {"targetRole": target, "operations": [{"op": "drop", "range": [3, 99]}]},  # past the end
        {"targetRole": target, "operations": [{"op": "shred", "range": [3, 4]}]},  # unknown op
        {"targetRole": target, "operations": [{"op": "replace", "index": 4}]},  # replace without content
        {"targetRole": "ghost-1-9", "operations": [{"op": "drop", "range": [3, 4]}]},  # not live
        {"targetRole": "context_manager-0-2", "operations": [{"op": "drop", "range": [3, 4]}]},  # itself
    ]
    script = {
        "turns": [
            turn("coder", call("run_shell", command="echo one"), usage=PRESSURE),
            *[turn("context_manager", call("edit_context", **batch)) for batch in bad_batches],
            turn("context_manager", call("list_role_messages", targetRole=target)),
            turn("context_manager", finish("nothing I could do", status="error")),
            turn("coder", finish("ok")),
        ]
    }
    seqs: list[int] = []

    def listener(event: Any) -> None:
        if type(event).__name__ in ("RoleStart", "RoleFinished") and event.payload.role == "context_manager":
            (run_dir,) = runs_root(tmp_path).iterdir()
            seqs.append(load_checkpoint(run_dir)[1])  # the newest checkpoint on disk

    async with sim_for(script) as sim:
        roles = {"coder": ["run_shell", "finish"], **{k: v for k, v in HANDLER_ROLES.items() if k != "coder"}}
        settings = make_settings(tmp_path, sim.base_url, roles=roles, **HANDLERS)
        outcome, events = await run(settings, tmp_path, log_listeners=[listener])
        requests = await sim.responses_requests()
    assert outcome.card.summary == "ok"
    edits = [r for r in of_type(events, "tool_result") if r["tool"] == "edit_context"]
    assert [r["kind"] for r in edits] == ["invalid_arguments"] * 6
    messages = [r["result"]["message"] for r in edits]
    assert "protected" in messages[0] and "runs past" in messages[1] and "shred" in messages[2]
    assert "content" in messages[3] and "not a live role instance" in messages[4] and "is you" in messages[5]
    coder_after = requests[-1]["body"]["input"]
    assert [i["type"] for i in coder_after[:4]] == ["message", "message", "function_call", "function_call_output"]
    assert seqs[0] == seqs[1]  # nothing was checkpointed while the handler ran
    assert [o["details"] for o in of_type(events, "observe")] == ["list_role_messages"]
