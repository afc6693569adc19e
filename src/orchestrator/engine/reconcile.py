"""Startup reconciliation of the runs directory: pick the one run to resume, close the rest.

Every run without a terminal meta (none, or one still ``running``) is a candidate. The most recent
candidate with a valid checkpoint resumes under its own id; every other candidate — no checkpoint, a
corrupt one, or superseded by a newer resumable run — gets a terminal ``meta.json`` with
``status: "interrupted"`` and ``error: {kind: "interrupted", message}`` saying why, its original fields
kept, and its checkpoint files removed. A run whose meta is already terminal only has leftovers of
a kill during its last writes tidied away (a ``cancelled`` run's final checkpoint is kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator import vocabulary as names
from orchestrator.conversation import CardError
from orchestrator.engine import events as ev
from orchestrator.engine.checkpoint import CheckpointError, delete_checkpoint, load_checkpoint
from orchestrator.engine.runfolder import (
    RUN_ID_PATTERN,
    TERMINAL_STATUSES,
    RunMeta,
    read_meta,
    runs_root,
    write_meta,
)
from orchestrator.engine.state import RunState, waiting_question
from orchestrator.runlog.events import RunEvent
from orchestrator.runlog.reader import last_event_time, read_events
from orchestrator.runlog.writer import utc_timestamp

__all__ = ["Reconciliation", "Resumable", "ResumeNotice", "missing_lifecycle_events", "reconcile_runs"]


#: How much of a pending question the resume announcement quotes (``/api/config`` has it whole).
ANNOUNCED_QUESTION_CHARS = 200


@dataclass
class Resumable:
    run_dir: Path
    state: RunState
    seq: int
    #: When the previous process stopped working on it: its log's last event (``None``: no event).
    interrupted_at: str | None = None

    def notice(self) -> ResumeNotice:
        """What a starting process says (console and page): which run resumes, from when, and the
        question it asks again if it was waiting for an answer — fixed now, as the run moves on."""
        when = self.interrupted_at or "an unknown time"
        line = f"resuming run {self.run_dir.name} from its checkpoint (interrupted at {when})"
        asked = waiting_question(self.state)
        if asked is not None:
            question = " ".join(asked.question.split())  # one line, whatever the model wrote
            line = f"{line}; it asks again: {question[:ANNOUNCED_QUESTION_CHARS]}"
        question = asked.question if asked is not None else None
        return ResumeNotice(self.run_dir.name, self.interrupted_at, question, line)


@dataclass(frozen=True)
class ResumeNotice:
    """A start's resume, as announced: ``message`` is the console line; ``question`` the whole question."""

    run_id: str
    interrupted_at: str | None
    question: str | None
    message: str


@dataclass
class Reconciliation:
    resumable: Resumable | None = None
    #: run id → why it was marked interrupted
    interrupted: dict[str, str] = field(default_factory=dict)


def reconcile_runs(workspace: Path, *, guild_path: str = "") -> Reconciliation:
    """Scan ``<workspace>/.orchestration/runs``; return the run to resume and mark the others."""
    result = Reconciliation()
    root = runs_root(workspace)
    if not root.is_dir():
        return result
    run_dirs = sorted((p for p in root.iterdir() if p.is_dir() and RUN_ID_PATTERN.match(p.name)), reverse=True)
    for run_dir in run_dirs:
        meta = read_meta(run_dir)
        if meta is not None and meta.status in TERMINAL_STATUSES:
            _tidy_finished(run_dir, keep_checkpoint=meta.status == "cancelled")
            continue
        if result.resumable is not None:
            reason = f"superseded by the newer resumable run {result.resumable.run_dir.name}"
        else:
            try:
                state, seq = load_checkpoint(run_dir)
            except CheckpointError as exc:
                reason = f"could not resume: {exc}"
            else:
                result.resumable = Resumable(run_dir, state, seq, last_event_time(run_dir / "log.jsonl"))
                continue
        _mark_interrupted(run_dir, meta, reason, guild_path)
        result.interrupted[run_dir.name] = reason
    return result


def _tidy_finished(run_dir: Path, *, keep_checkpoint: bool) -> None:
    """A kill between the terminal meta and the checkpoint delete (or inside the meta's atomic write)
    leaves files nothing will read again: remove them (best effort). A stopped (``cancelled``) run keeps
    its final checkpoint on purpose."""
    if not keep_checkpoint:
        delete_checkpoint(run_dir)
    for stray in run_dir.glob("meta.json.*.tmp"):
        stray.unlink(missing_ok=True)


def _mark_interrupted(run_dir: Path, meta: RunMeta | None, reason: str, guild_path: str) -> None:
    if meta is None:
        meta = _meta_from_log(run_dir, guild_path)
    meta.status = "interrupted"
    meta.error = CardError(kind="interrupted", message=reason)
    meta.end_time = meta.end_time or utc_timestamp()
    write_meta(run_dir, meta)
    delete_checkpoint(run_dir)


def _meta_from_log(run_dir: Path, guild_path: str) -> RunMeta:
    """Rebuild what a lost meta said from the log's first events (best effort)."""
    events = read_events(run_dir / "log.jsonl")
    task, effort, started = "", names.DEFAULT_EFFORT, ""
    for event in events:
        started = started or str(event.get("timestamp", ""))
        payload = event.get("payload") or {}
        if event["type"] == names.EFFORT_SET:
            effort = str(payload.get("effort", effort))
        if event["type"] == names.ROLE_START and payload.get("depth") == 0:
            task = str(payload.get("task", ""))
            break
    return RunMeta(
        run_id=run_dir.name,
        task=task,
        status="running",
        effort=effort,
        log_level=names.DEFAULT_LOG_LEVEL,
        guild_path=guild_path,
        start_time=started or utc_timestamp(),
    )


def missing_lifecycle_events(events: Sequence[dict[str, Any]], state: RunState) -> list[RunEvent]:
    """The ``role_start`` / ``role_finished`` events a killed process did not get to write (pure).

    A child is checkpointed before its ``role_start`` and its card before its ``role_finished``, so a
    kill between the two leaves the checkpoint ahead of the log by at most these events; writing them
    on resume keeps every instance at exactly one start and one finish.
    """
    started = {e["payload"].get("roleId") for e in events if e["type"] == names.ROLE_START}
    finished = {e["payload"].get("roleId") for e in events if e["type"] == names.ROLE_FINISHED}
    missing: list[RunEvent] = []
    for frame in state.frames:
        if frame.instance_id not in started:
            missing.append(ev.role_start(frame))
        pending = frame.pending
        if pending and pending.child_card and pending.child_id and pending.child_id not in finished:
            child_role = pending.child_id.rsplit("-", 2)[0]
            missing.append(
                ev.role_finished_for(child_role, pending.child_id, frame.depth + 1, pending.child_card, frame.role)
            )
    final = state.final
    if final is not None and final.role_id not in finished:
        missing.append(ev.role_finished_for(final.role, final.role_id, 0, final.card, None))
    return missing
