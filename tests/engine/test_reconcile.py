"""Reconciliation (``engine/reconcile.py``) of a run whose checkpoint is unusable: arbitrary, wrong and
deeply nested ``state.json`` all mark the run ``interrupted`` and remove the checkpoint; and what a start
that resumes a run announces."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.engine.checkpoint_states import DEEP_JSON, WRONG_SNAPSHOTS

from orchestrator.conversation import Message
from orchestrator.engine.checkpoint import JOURNAL, SNAPSHOT
from orchestrator.engine.reconcile import Resumable, ResumeNotice, reconcile_runs
from orchestrator.engine.runfolder import RunMeta, read_meta, runs_root, write_meta
from orchestrator.engine.state import AskedQuestion, PendingTurn, RoleFrame, RunState

RUN_ID = "run-20250101-000000"


def _unresumable_run(workspace: Path, state_json: bytes, *, with_meta: bool) -> Path:
    run_dir = runs_root(workspace) / RUN_ID
    run_dir.mkdir(parents=True)
    if with_meta:
        meta = RunMeta(
            run_id=RUN_ID,
            task="build it",
            status="running",
            effort="standard",
            log_level="full",
            guild_path="/g",
            start_time="2025-01-01T00:00:00Z",
        )
        write_meta(run_dir, meta)
    (run_dir / SNAPSHOT).write_bytes(state_json)
    (run_dir / JOURNAL).write_bytes(b"junk\n")
    return run_dir


def _assert_marked_interrupted(workspace: Path, run_dir: Path, *, with_meta: bool) -> None:
    result = reconcile_runs(workspace, guild_path="/g")
    assert result.resumable is None
    assert set(result.interrupted) == {RUN_ID}
    meta = read_meta(run_dir)
    assert meta is not None
    assert meta.status == "interrupted"
    assert meta.error is not None and meta.error.kind == "interrupted"
    assert meta.error.message and "could not resume" in meta.error.message
    assert meta.end_time
    if with_meta:
        assert (meta.task, meta.start_time, meta.guild_path) == ("build it", "2025-01-01T00:00:00Z", "/g")
    assert not (run_dir / SNAPSHOT).exists() and not (run_dir / JOURNAL).exists()


@settings(max_examples=40, deadline=None)
@given(data=st.binary(max_size=300), with_meta=st.booleans())
def test_reconcile_marks_a_run_with_arbitrary_state_json_interrupted(data: bytes, with_meta: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = _unresumable_run(Path(tmp), data, with_meta=with_meta)
        _assert_marked_interrupted(Path(tmp), run_dir, with_meta=with_meta)


@pytest.mark.parametrize("name", sorted(WRONG_SNAPSHOTS))
def test_reconcile_marks_a_run_with_a_wrong_snapshot_interrupted(tmp_path: Path, name: str) -> None:
    run_dir = _unresumable_run(tmp_path, WRONG_SNAPSHOTS[name], with_meta=True)
    _assert_marked_interrupted(tmp_path, run_dir, with_meta=True)


def test_reconcile_survives_a_deeply_nested_state_json(tmp_path: Path) -> None:
    run_dir = _unresumable_run(tmp_path, DEEP_JSON, with_meta=True)
    _assert_marked_interrupted(tmp_path, run_dir, with_meta=True)


@pytest.mark.parametrize(("status", "kept"), [("cancelled", True), ("success", False), ("error", False)])
def test_a_finished_run_is_never_resumed_and_only_a_stopped_one_keeps_its_checkpoint(
    tmp_path: Path, status: str, kept: bool
) -> None:
    run_dir = _unresumable_run(tmp_path, b"{}", with_meta=True)
    meta = read_meta(run_dir)
    assert meta is not None
    meta.status = status
    write_meta(run_dir, meta)
    found = reconcile_runs(tmp_path)
    assert found.resumable is None and found.interrupted == {}
    assert (run_dir / SNAPSHOT).exists() is kept and (run_dir / JOURNAL).exists() is kept
    after = read_meta(run_dir)
    assert after is not None and after.status == status


def test_the_resume_announcement_names_the_run_the_time_and_the_question_asked_again(tmp_path: Path) -> None:
    run_dir = tmp_path / RUN_ID
    asking = AskedQuestion(id="q1", question="Which\n  colour?\n" + "x" * 500)
    assistant = Message(role="assistant", content="")
    frame = RoleFrame(instance_id="lead-0-1", role="lead", depth=0, task="t")
    waiting = RoleFrame(
        instance_id="coder-1-2",
        role="coder",
        depth=1,
        task="t",
        pending=PendingTurn(assistant=assistant, asking=asking),
    )
    state = RunState(run_id=RUN_ID, started_at="2025-01-01T00:00:00Z", frames=[frame])
    plain = Resumable(run_dir, state, 1)
    assert plain.notice() == ResumeNotice(
        RUN_ID, None, None, f"resuming run {RUN_ID} from its checkpoint (interrupted at an unknown time)"
    )
    state.frames.append(waiting)
    notice = Resumable(run_dir, state, 1, "2025-01-01T00:05:00.000Z").notice()
    assert notice.question == asking.question  # whole, as asked
    state.frames.pop()
    announced = notice.message  # fixed when the start announced it, whatever the run does next
    assert announced.startswith(f"resuming run {RUN_ID} from its checkpoint (interrupted at 2025-01-01T00:05:00.000Z)")
    assert announced.endswith("; it asks again: Which colour? " + "x" * 186) and "\n" not in announced
