"""Real engine logs (sim model, real engine, real log file) through the adapter and the index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
from tests.engine.harness import FAST, call, finish, run_task, turn
from tests.helpers import make_settings

from orchestrator.engine.interrupts import InterruptQueue
from orchestrator.engine.runfolder import read_meta
from orchestrator.engine.runner import RunRequest, RunServices, execute_run
from orchestrator.flow import FlowState, build_model, fold, operation_details
from orchestrator.runlog import read_events
from orchestrator.service.runindex import RunIndex

ROLES = {
    "lead": ["agent", "ask_human", "finish"],
    "helper": ["agent", "run_shell", "finish"],
    "leaf": ["run_shell", "finish"],
    "inquiry_responder": ["recent_role_tool_calls", "finish"],
}


def _shapes(model) -> list[tuple[str, str, str, str]]:
    return [(op.kind, op.stack, op.source, op.destination) for op in model.operations]


def _model(run_dir: Path, events: list[dict[str, Any]]):
    meta = read_meta(run_dir)
    assert meta is not None
    return build_model(events, meta_status=meta.status, now=meta.end_time or "")


def _state(events: list[dict[str, Any]]) -> FlowState:
    state = FlowState()
    for event in events:
        fold(state, event)
    return state


class Answers:
    async def ask(self, question_id: str, question: str, context: str | None) -> str:
        return "Use tabs."


async def test_scenario_29_minimal_run(tmp_path: Path, sim_for) -> None:
    async with sim_for({"turns": [turn("lead", finish("all good"))]}) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, events = await run_task(settings, tmp_path)
    model = _model(outcome.run_dir, events)
    assert [p.id for p in model.participants] == ["human:root", "role:lead:1"]  # finish is no tool participant
    assert _shapes(model) == [
        ("call", "main", "human:root", "role:lead:1"),
        ("return", "main", "role:lead:1", "human:root"),
    ]
    assert model.status == "success" and all(op.lifecycle == "settled" for op in model.operations)
    assert model.operations[0].metrics is not None and model.operations[0].metrics.tokens > 0
    assert operation_details(events, _state(events), "op-1") == "do the thing"
    assert operation_details(events, _state(events), "op-2") == "all good"


async def test_scenario_29_ask_human_adds_a_human_answerer(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("ask_human", question="Tabs or spaces?", context="style")),
            turn("lead", finish("tabs"), last="tabs"),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles={"lead": ROLES["lead"]})
        services = RunServices(timeouts=FAST, human=Answers())
        outcome = await execute_run(settings, tmp_path, RunRequest(task="pick"), services)
    events = read_events(outcome.run_dir / "log.jsonl")
    model = _model(outcome.run_dir, events)
    assert [p.id for p in model.participants] == ["human:root", "role:lead:1", "human:answerer:1"]
    assert model.participants[2].kind == "human"
    assert _shapes(model)[1:3] == [
        ("call", "main", "role:lead:1", "human:answerer:1"),
        ("return", "main", "human:answerer:1", "role:lead:1"),
    ]
    state = _state(events)
    assert operation_details(events, state, "op-2") == "Tabs or spaces?\n\n**Context:** style"
    assert operation_details(events, state, "op-3") == "Use tabs."


async def test_delegation_and_tool_calls_from_a_real_run(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="helper", task="help out")),
            turn("helper", call("run_shell", command="echo one")),
            turn("helper", call("agent", role="leaf", task="leaf work")),
            turn("leaf", call("run_shell", command="exit 3")),
            turn("leaf", finish("leaf failed", status="error")),
            turn("helper", finish("helper done"), last="leaf failed"),
            turn("lead", finish("lead done"), last="helper done"),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        outcome, events = await run_task(settings, tmp_path)
    model = _model(outcome.run_dir, events)
    lead, helper, leaf = "role:lead:1", "role:helper:1", "role:leaf:1"
    assert [p.id for p in model.participants] == [
        "human:root",
        lead,
        helper,
        "tool:run_shell:1",
        leaf,
        "tool:run_shell:2",
    ]
    assert _shapes(model) == [
        ("call", "main", "human:root", lead),
        ("call", "main", lead, helper),
        ("call", "main", helper, "tool:run_shell:1"),
        ("return", "main", "tool:run_shell:1", helper),
        ("call", "main", helper, leaf),
        ("call", "main", leaf, "tool:run_shell:2"),
        ("return", "main", "tool:run_shell:2", leaf),
        ("return", "main", leaf, helper),
        ("return", "main", helper, lead),
        ("return", "main", lead, "human:root"),
    ]
    # A non-zero exit is an error return (amber: the tool ran and reported a problem) — issue 18.
    assert [(op.outcome, op.severity) for op in model.operations if op.kind == "return"] == [
        ("success", None),
        ("error", "warn"),
        ("error", "fail"),
        ("success", None),
        ("success", None),
    ]
    assert [op.note for op in model.operations if op.severity] == ["exit 3", "failed"]
    assert all(op.lifecycle == "settled" for op in model.operations)
    usage = sum(e["payload"]["usage"]["totalTokens"] for e in events if e["type"] == "llm_call")
    assert sum(op.metrics.tokens for op in model.operations if op.metrics) == usage
    state = _state(events)
    assert operation_details(events, state, "op-3") == '```json\n{\n  "command": "echo one"\n}\n```'
    assert '"exitCode": 0' in (operation_details(events, state, "op-4") or "")
    # The incremental index, polled once per line, ends where the whole-log adapter does.
    replay = tmp_path / "replay"
    replay.mkdir()
    index, log_path, lines = RunIndex(replay), replay / "log.jsonl", (outcome.run_dir / "log.jsonl").read_bytes()
    log_path.write_bytes(b"")
    for line in lines.splitlines(keepends=True):
        with log_path.open("ab") as handle:
            handle.write(line)
        index.update()
    served = index.model("success", read_meta(outcome.run_dir).end_time or "")  # type: ignore[union-attr]
    assert msgspec.structs.replace(served, totals=[]) == model
    assert msgspec.json.encode(index.model("running", "x"))  # encodable as served


async def test_an_operator_inquiry_from_a_real_run(tmp_path: Path, sim_for) -> None:
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
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES, inquiryHandlerRole="inquiry_responder")
        services = RunServices(timeouts=FAST, interrupts=queue)
        outcome = await execute_run(settings, tmp_path, RunRequest(task="do it"), services)
    events = read_events(outcome.run_dir / "log.jsonl")
    model = _model(outcome.run_dir, events)
    responder, tool = "role:inquiry_responder:1", "tool:recent_role_tool_calls:1"
    assert [(s.id, s.root) for s in model.stacks] == [("main", "human:root"), ("interrupt-1-stack", "human:asker:1")]
    assert _shapes(model) == [
        ("call", "main", "human:root", "role:lead:1"),
        ("call", "interrupt-1-stack", "human:asker:1", responder),
        ("call", "interrupt-1-stack", responder, tool),
        ("observe", "interrupt-1-stack", tool, "role:lead:1"),
        ("return", "interrupt-1-stack", tool, responder),
        ("return", "interrupt-1-stack", responder, "human:asker:1"),
        ("return", "main", "role:lead:1", "human:root"),
    ]
    state = _state(events)
    assert operation_details(events, state, "op-2") == "How far along are you?"
    assert operation_details(events, state, "op-6") == "It is just starting."
