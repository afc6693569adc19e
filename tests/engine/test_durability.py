"""Checkpoints and resume: a run cut at a safe moment continues exactly where it stood."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
from tests.engine.harness import FAST, call, finish, of_type, turn, types
from tests.helpers import make_settings

from orchestrator.engine.checkpoint import load_checkpoint
from orchestrator.engine.reconcile import reconcile_runs
from orchestrator.engine.runfolder import read_meta, runs_root
from orchestrator.engine.runner import RunRequest, RunServices, execute_run, resume_run
from orchestrator.engine.state import waiting_question
from orchestrator.runlog import read_events
from orchestrator.runlog.events import RunEvent

ROLES = {
    "lead": ["agent", "finish"],
    "coder": ["agent", "finish", "run_shell"],
    "leaf": ["finish"],
}


class _Kill(Exception):
    """Raised from a log listener: nothing after the event that triggered it gets written."""


async def _run_until(settings, workspace: Path, stop_when) -> Path:
    """Start a run and stop it dead right after the first event ``stop_when`` accepts, as a kill would."""
    seen: list[RunEvent] = []

    def listener(event: RunEvent) -> None:
        seen.append(event)
        if stop_when(event, seen):
            raise _Kill

    services = RunServices(timeouts=FAST, log_listeners=[listener])
    with pytest.raises(_Kill):
        await execute_run(settings, workspace, RunRequest(task="build it"), services)
    (run_dir,) = runs_root(workspace).iterdir()
    return run_dir


async def _resume(settings, workspace: Path):
    found = reconcile_runs(workspace).resumable
    assert found is not None
    return await resume_run(settings, workspace, found.run_dir, found.state, found.seq, RunServices(timeouts=FAST))


def _pairs(events: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    starts = [p["roleId"] for p in of_type(events, "role_start")]
    finishes = [p["roleId"] for p in of_type(events, "role_finished")]
    return starts, finishes


def _coder_turns(n: int) -> list[dict[str, Any]]:
    """Reusable turns, most specific first: the reply is a function of the last input."""
    return [
        turn("coder", call("run_shell", command=f"echo step-{i}"), last=f"step-{i - 1}" if i else None, reusable=True)
        for i in reversed(range(n))
    ]


async def test_resume_continues_the_leaf_without_restarting_anyone(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", finish("shipped"), last="coded", reusable=True),
            turn("lead", call("agent", role="coder", task="code it"), reusable=True),
            turn("coder", finish("coded"), last="step-3", reusable=True),
            *_coder_turns(4),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)

        def after_second_coder_turn(event: RunEvent, seen: list[RunEvent]) -> bool:
            return sum(1 for e in seen if type(e).__name__ == "ToolResultEvent" and e.payload.role == "coder") == 2

        run_dir = await _run_until(settings, tmp_path, after_second_coder_turn)
        assert read_meta(run_dir).status == "running" and (run_dir / "state.json").exists()
        outcome = await _resume(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.run_id == run_dir.name and outcome.card.summary == "shipped"
    events = read_events(run_dir / "log.jsonl")
    resumed = of_type(events, "run_resumed")
    assert resumed == [{"runId": run_dir.name, "resumedFrames": 2}]
    starts, finishes = _pairs(events)
    assert sorted(starts) == sorted(finishes) == ["coder-1-2", "lead-0-1"]
    boundary = types(events).index("run_resumed")
    assert "role_start" not in types(events)[boundary:]
    # The coder resumed with its history: its next request already holds steps 0 and 1.
    first_after = next(r for r in requests[4:] if "You are the coder." in json.dumps(r["body"]))
    assert "step-1" in json.dumps(first_after["body"]["input"])
    assert read_meta(run_dir).status == "success" and not (run_dir / "state.json").exists()
    assert not (run_dir / "journal.jsonl").exists()


async def test_a_finished_child_is_not_rerun_after_a_restart(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="leaf", task="once only")),
            turn("leaf", finish("leaf result")),
            turn("lead", call("agent", role="leaf", task="second child"), last="leaf result"),
            turn("leaf", finish("second leaf"), last="second child"),
            turn("lead", finish("both done"), last="second leaf"),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        run_dir = await _run_until(
            settings, tmp_path, lambda e, _: type(e).__name__ == "RoleFinished" and e.payload.role == "leaf"
        )
        state, _ = load_checkpoint(run_dir)
        assert len(state.frames) == 1 and state.frames[0].pending.child_card.summary == "leaf result"
        outcome = await _resume(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.summary == "both done"
    leaf_requests = [r for r in requests if "You are the leaf." in json.dumps(r["body"])]
    assert len(leaf_requests) == 2  # the first leaf ran once; the second is new
    events = read_events(run_dir / "log.jsonl")
    starts, finishes = _pairs(events)
    assert starts == ["lead-0-1", "leaf-1-2", "leaf-1-3"]  # instance counters keep rising
    assert sorted(finishes) == sorted(starts)


class _Asked:
    """A human backend: records each question; the first process "dies" while it waits (``_Kill``)."""

    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.asked: list[tuple[str, str, str | None]] = []

    async def ask(self, question_id: str, question: str, context: str | None) -> str:
        self.asked.append((question_id, question, context))
        if self.answer is None:
            raise _Kill
        return self.answer


async def test_a_question_pending_at_a_restart_is_asked_again_not_the_model(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="coder", task="paint it")),
            turn("coder", call("run_shell", command="echo primed"), call("ask_human", question="Which colour?")),
            turn("coder", finish("painted blue"), last="blue"),
            turn("lead", finish("done"), last="painted blue"),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles={**ROLES, "coder": ["ask_human", "run_shell", "finish"]})
        first = _Asked(None)
        services = RunServices(timeouts=FAST, human=first)
        with pytest.raises(_Kill):
            await execute_run(settings, tmp_path, RunRequest(task="paint"), services)
        before = len(await sim.responses_requests())
        found = reconcile_runs(tmp_path).resumable
        assert found is not None
        asked = waiting_question(found.state)
        assert asked is not None and (asked.id, asked.question) == (first.asked[0][0], "Which colour?")
        second = _Asked("blue")
        services = RunServices(timeouts=FAST, human=second)
        outcome = await resume_run(settings, tmp_path, found.run_dir, found.state, found.seq, services)
        requests = await sim.responses_requests()
    assert second.asked == first.asked  # the same question, under the same id
    assert outcome.card.summary == "done"
    assert len(requests) == before + 2  # the coder's finish and the lead's: the asking turn was not re-sent
    coder_input = json.dumps(requests[before]["body"]["input"])
    assert "primed" in coder_input and "blue" in coder_input  # the earlier call ran once; the answer arrived
    events = read_events(found.run_dir / "log.jsonl")
    assert [p["id"] for p in of_type(events, "ask_human")] == [asked.id]
    assert of_type(events, "human_answer") == [{"id": asked.id, "answer": "blue"}]
    assert [p["tool"] for p in of_type(events, "tool_call")].count("run_shell") == 1


async def test_role_finished_lost_in_a_crash_is_written_on_resume(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="leaf", task="x")),
            turn("leaf", finish("leaf ok")),
            turn("lead", finish("done"), last="leaf ok"),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        run_dir = await _run_until(
            settings, tmp_path, lambda e, _: type(e).__name__ == "RoleFinished" and e.payload.role == "leaf"
        )
        # Simulate a kill between the checkpoint and the role_finished line: drop the last log line.
        log = run_dir / "log.jsonl"
        lines = log.read_bytes().splitlines(keepends=True)
        assert b'"role_finished"' in lines[-1]
        log.write_bytes(b"".join(lines[:-1]))
        outcome = await _resume(settings, tmp_path)
    assert outcome.card.summary == "done"
    starts, finishes = _pairs(read_events(log))
    assert sorted(starts) == sorted(finishes) == ["lead-0-1", "leaf-1-2"]


async def test_a_role_removed_from_the_guild_finishes_with_an_error_card(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="coder", task="x")),
            turn("coder", call("run_shell", command="echo hi")),
            turn("coder", finish("never reached"), last="hi"),
            turn("lead", finish("lead saw the error"), last="no longer declared"),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        run_dir = await _run_until(
            settings, tmp_path, lambda e, _: type(e).__name__ == "ToolResultEvent" and e.payload.role == "coder"
        )
        changed = make_settings(tmp_path / "changed", sim.base_url, roles={"lead": ["agent", "finish"]})
        outcome = await _resume(changed, tmp_path)
    assert outcome.card.summary == "lead saw the error"
    coder_done = [f for f in of_type(read_events(run_dir / "log.jsonl"), "role_finished") if f["role"] == "coder"]
    assert coder_done[0]["error"]["kind"] == "unavailable"


async def test_reconciliation_resumes_the_newest_and_closes_the_rest(tmp_path: Path, sim_for) -> None:
    runs = runs_root(tmp_path)
    script = {
        "turns": [
            {
                "reusable": True,
                "expect": {"systemContains": "You are the lead."},
                "toolCalls": [call("agent", role="leaf", task="x")],
            },
            {"reusable": True, "fail": {"stallBeforeHeadersMs": 60000}},
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        from datetime import UTC, datetime

        for second in (1, 2):
            with trio.move_on_after(1.0):
                await execute_run(
                    settings,
                    tmp_path,
                    RunRequest(task=f"run {second}"),
                    RunServices(timeouts=FAST),
                    now=datetime(2026, 1, 1, 0, 0, second, tzinfo=UTC),
                )
    (runs / "run-20260101-000003").mkdir()  # a run killed before its first checkpoint
    (runs / "run-20260101-000003" / "meta.json").write_text(
        json.dumps(
            {
                "runId": "run-20260101-000003",
                "task": "t",
                "status": "running",
                "effort": "quick",
                "logLevel": "full",
                "guildPath": "g",
                "startTime": "2026-01-01T00:00:03Z",
            }
        )
    )
    (runs / "run-20260101-000004").mkdir()  # corrupt checkpoint
    (runs / "run-20260101-000004" / "state.json").write_bytes(b"{not json")
    result = reconcile_runs(tmp_path)
    assert result.resumable is not None and result.resumable.run_dir.name == "run-20260101-000002"
    assert set(result.interrupted) == {"run-20260101-000001", "run-20260101-000003", "run-20260101-000004"}
    assert "superseded" in result.interrupted["run-20260101-000001"]
    assert "no checkpoint" in result.interrupted["run-20260101-000003"]
    assert "corrupt" in result.interrupted["run-20260101-000004"]
    for run_id in result.interrupted:
        meta = read_meta(runs / run_id)
        assert meta.status == "interrupted" and meta.error.kind == "interrupted" and meta.end_time
        assert not (runs / run_id / "state.json").exists()
    assert read_meta(runs / "run-20260101-000003").effort == "quick"  # original fields kept
    assert read_meta(runs / "run-20260101-000001").task == "run 1"


async def test_continuation_records_lineage_and_briefs_the_entry_role(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [turn("lead", finish("first result")), turn("lead", finish("continued"), last="End of briefing")]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        from datetime import UTC, datetime

        first = await execute_run(
            settings,
            tmp_path,
            RunRequest(task="first task"),
            RunServices(timeouts=FAST),
            now=datetime(2026, 1, 1, tzinfo=UTC),
        )
        second = await execute_run(
            settings, tmp_path, RunRequest(task="keep going", continues_from=first.run_id), RunServices(timeouts=FAST)
        )
        requests = await sim.responses_requests()
    assert second.meta.continues_from == first.run_id and second.meta.task == "keep going"
    message = requests[1]["body"]["input"][1]["content"]
    assert message.startswith("keep going\n\n[Platform briefing")
    assert "Prior task: first task" in message and "first result" in message and first.run_id in message
