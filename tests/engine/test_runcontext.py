"""RunContext: frames minted and pushed, the checkpoint and its suppression, cancellation marks, budget."""

from __future__ import annotations

from pathlib import Path

import trio
from tests.helpers import make_settings

from orchestrator.config.secrets import Redactor
from orchestrator.engine.checkpoint import Checkpointer, load_checkpoint
from orchestrator.engine.interrupts import InterruptQueue
from orchestrator.engine.runcontext import LiveRole, RunContext
from orchestrator.engine.state import RunState
from orchestrator.runlog import read_events
from orchestrator.runlog.writer import RunLog

ROLES = {"lead": ["agent", "finish"], "coder": ["write_file", "finish"]}


def _context(tmp_path: Path, log: RunLog, checkpointer: Checkpointer | None = None) -> RunContext:
    settings = make_settings(tmp_path, "http://127.0.0.1:9/v1", ROLES)
    return RunContext(
        settings=settings,
        workspace=tmp_path,
        state=RunState(run_id="run-20250101-120000", started_at="2025-01-01T12:00:00Z", effort="quick"),
        log=log,
        redactor=Redactor(),
        interrupts=InterruptQueue(),
        human=None,
        checkpointer=checkpointer,
    )


def test_new_frame_mints_ids_and_only_the_entry_role_gets_the_effort_directive(tmp_path: Path) -> None:
    with RunLog(tmp_path / "log.jsonl") as log:
        run = _context(tmp_path, log)
        root = run.new_frame("lead", 0, "the task", None)
        child = run.new_frame("lead", 1, "sub task", root)
        handler = run.new_frame("lead", 0, "a check", None, entry=False)
    assert [root.instance_id, child.instance_id, handler.instance_id] == ["lead-0-1", "lead-1-2", "lead-0-3"]
    assert root.effort == "quick" and child.effort is None and handler.effort is None
    assert "Quality level" in root.history[0].content and "Quality level" not in child.history[0].content
    assert child.parent_id == "lead-0-1" and child.parent_role == "lead"
    assert [m.content for m in child.history[1:]] == ["sub task"] and child.preamble == 2
    assert not run.state.write_started
    run.new_frame("coder", 1, "write it", root)
    assert run.state.write_started  # a role that can write was started


def test_push_frame_checkpoints_before_logging_role_start_unless_suppressed(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with RunLog(tmp_path / "log.jsonl") as log:
        checkpointer = Checkpointer(run_dir, durable=False)
        run = _context(tmp_path, log, checkpointer)
        root = run.new_frame("lead", 0, "t", None)
        run.push_frame(root)
        state, seq = load_checkpoint(run_dir)
        assert seq == 1 and [f.instance_id for f in state.frames] == ["lead-0-1"]
        run.checkpoint_suppressed += 1
        run.push_frame(run.new_frame("lead", 0, "check", None, entry=False))
        assert load_checkpoint(run_dir)[1] == 1  # inside an interlude: no write
        run.checkpoint_suppressed -= 1
        run.checkpoint()
        checkpointer.close()
    assert [f.instance_id for f in load_checkpoint(run_dir)[0].frames] == ["lead-0-1", "lead-0-2"]
    assert [e["type"] for e in read_events(tmp_path / "log.jsonl")] == ["role_start", "role_start"]


async def test_cancelled_sees_an_abort_mark_or_a_cancelled_scope(tmp_path: Path) -> None:
    with RunLog(tmp_path / "log.jsonl") as log:
        run = _context(tmp_path, log)
        marked, live = run.new_frame("lead", 0, "t", None), run.new_frame("lead", 1, "t", None)
    assert not run.cancelled(marked) and not run.cancelled(live)
    run.aborted.add(marked.instance_id)  # not registered yet: cut as it registers
    scope = trio.CancelScope()
    run.registry[live.instance_id] = LiveRole(live, scope)
    assert run.cancelled(marked) and not run.cancelled(live)
    scope.cancel()
    assert run.cancelled(live)


def test_budget_is_the_window_less_max_tokens_then_the_learned_ceiling(tmp_path: Path) -> None:
    with RunLog(tmp_path / "log.jsonl") as log:
        run = _context(tmp_path, log)
    assert run.budget == 32768 - 4096
    run.state.learned_ceiling = 20000
    assert run.budget == 20000
    assert [t.name for t in run.role_tools("coder")] == ["write_file", "finish"] and run.role_tools("nobody") == []
