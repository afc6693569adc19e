"""Crash windows too narrow for random kills to hit reliably, each simulated at one exact instant.

A "kill" is an exception derived from ``BaseException`` raised from a log listener or a patched call:
nothing after that instant runs, as with SIGKILL. Each test then checks the invariant the crash
harness asserts. Each one pinned a gap the harness found (docs/crash-harness.md, "Findings"); a gap
found open in ``src/`` gets a ``strict`` xfail here until it is fixed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.crash.checks import check_log_lines
from tests.engine.harness import FAST, call, finish, turn
from tests.helpers import make_settings

from orchestrator import fsutil
from orchestrator.config import Settings
from orchestrator.engine import runner
from orchestrator.engine.reconcile import reconcile_runs
from orchestrator.engine.runfolder import read_meta, runs_root
from orchestrator.engine.runner import RunOutcome, RunRequest, RunServices, execute_run, resume_run
from orchestrator.runlog import read_events
from orchestrator.runlog.events import LlmCallStart, RunEvent

ROLES = {"lead": ["agent", "finish"], "leaf": ["finish"]}
SCRIPT = {
    "turns": [
        turn("lead", finish("done"), last="leaf ok", reusable=True),
        turn("lead", call("agent", role="leaf", task="x"), reusable=True),
        turn("leaf", finish("leaf ok"), reusable=True),
    ]
}


class _Killed(BaseException):
    """Stands in for SIGKILL: raised at one instant, and nothing after it runs."""


async def _resume(settings: Settings, workspace: Path) -> RunOutcome:
    """What ``orchestrator resume`` does: reconcile, then resume the run found."""
    found = reconcile_runs(workspace).resumable
    assert found is not None
    return await resume_run(settings, workspace, found.run_dir, found.state, found.seq, RunServices(timeouts=FAST))


async def test_a_log_line_torn_by_a_kill_stays_the_last_line_of_its_segment(tmp_path: Path, sim_for) -> None:
    def at_the_leaf_model_call(event: RunEvent) -> None:
        if isinstance(event, LlmCallStart) and event.payload.role == "leaf":
            raise _Killed

    async with sim_for(SCRIPT) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        services = RunServices(timeouts=FAST, log_listeners=[at_the_leaf_model_call])
        with pytest.raises(_Killed):
            await execute_run(settings, tmp_path, RunRequest(task="go"), services)
        (run_dir,) = runs_root(tmp_path).iterdir()
        log = run_dir / "log.jsonl"
        # SIGKILL inside the last os.write: a write to a regular file is not atomic against SIGKILL once
        # it spans a page, so only the first half of the final line reached the file.
        lines = log.read_bytes().splitlines(keepends=True)
        log.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
        outcome = await _resume(settings, tmp_path)
    assert outcome.card.summary == "done"
    assert [e["type"] for e in read_events(log)].count("run_resumed") == 1
    assert check_log_lines(log.read_bytes(), finished=True) == []


@pytest.mark.parametrize("instant", ["after-the-meta", "inside-the-delete"])
async def test_a_kill_between_the_terminal_meta_and_the_checkpoint_delete_leaves_no_checkpoint(
    tmp_path: Path, sim_for, monkeypatch: pytest.MonkeyPatch, instant: str
) -> None:
    def killed_here(run_dir: Path) -> None:
        if instant == "inside-the-delete":  # state.json is gone, the journal not yet (seen in the harness)
            (run_dir / "state.json").unlink()
        raise _Killed

    async with sim_for(SCRIPT) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        monkeypatch.setattr(runner, "delete_checkpoint", killed_here)  # runner._finish: write_meta, then this
        with pytest.raises(_Killed):
            await execute_run(settings, tmp_path, RunRequest(task="go"), RunServices(timeouts=FAST))
    (run_dir,) = runs_root(tmp_path).iterdir()
    assert read_meta(run_dir).status == "success" and (run_dir / "journal.jsonl").exists()
    assert reconcile_runs(tmp_path).resumable is None  # `orchestrator resume`: "no run to resume"
    assert not (run_dir / "state.json").exists() and not (run_dir / "journal.jsonl").exists()


async def test_a_kill_inside_the_terminal_meta_write_leaves_no_temp_file(
    tmp_path: Path, sim_for, monkeypatch: pytest.MonkeyPatch
) -> None:
    replace = os.replace

    def killed_before_the_rename(src: Path, dst: Path) -> None:
        if Path(dst).name == "meta.json" and b'"success"' in Path(src).read_bytes():
            raise _Killed
        replace(src, dst)

    async with sim_for(SCRIPT) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        monkeypatch.setattr(fsutil.os, "replace", killed_before_the_rename)
        with pytest.raises(_Killed):
            await execute_run(settings, tmp_path, RunRequest(task="go"), RunServices(timeouts=FAST))
        monkeypatch.undo()
        (run_dir,) = runs_root(tmp_path).iterdir()
        (stray,) = run_dir.glob("meta.json.*.tmp")
        stray.rename(run_dir / "meta.json.1.tmp")  # the next process has another pid
        outcome = await _resume(settings, tmp_path)
    assert outcome.card.summary == "done" and read_meta(run_dir).status == "success"
    assert sorted(p.name for p in run_dir.iterdir()) == ["log.jsonl", "meta.json"]
