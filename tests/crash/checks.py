"""The crash harness's invariant checks (pure over a workspace, each returning problem strings) and
the classification of each kill by what the killed process was doing."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from orchestrator.engine.runfolder import RUN_ID_PATTERN, TERMINAL_STATUSES, RunMeta, runs_root
from orchestrator.runlog import read_events

# --- invariant checks (pure over the workspace) -------------------------------------------------

_dict_decoder = msgspec.json.Decoder(dict[str, Any])
_meta_decoder = msgspec.json.Decoder(RunMeta)


def run_dirs(workspace: Path) -> list[Path]:
    root = runs_root(workspace)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and RUN_ID_PATTERN.match(p.name))


def strict_meta(run_dir: Path) -> tuple[RunMeta | None, list[str]]:
    """The run's meta decoded strictly: a present but unparsable ``meta.json`` is a problem."""
    path = run_dir / "meta.json"
    if not path.exists():
        return None, []
    try:
        return _meta_decoder.decode(path.read_bytes()), []
    except msgspec.DecodeError as exc:
        return None, [f"{run_dir.name}/meta.json does not parse: {exc}"]


def _parse_line(line: bytes) -> dict[str, Any] | None:
    try:
        record = _dict_decoder.decode(line)
    except (msgspec.DecodeError, RecursionError):
        return None
    return record if isinstance(record.get("type"), str) else None


def check_log_lines(data: bytes, *, finished: bool) -> list[str]:
    """Stricter than ``read_events``: an unparsable line is allowed only as the last line of a log
    segment — directly before a ``run_resumed`` line — or as a torn tail while the run is unfinished.

    A torn append that the next process glued its first event onto shows up as an unparsable line
    followed by something other than ``run_resumed``.
    """
    problems: list[str] = []
    lines = data.split(b"\n")
    complete, tail = lines[:-1], lines[-1]
    for index, line in enumerate(complete):
        if _parse_line(line) is not None:
            continue
        following = _parse_line(complete[index + 1]) if index + 1 < len(complete) else None
        if following is None or following["type"] != "run_resumed":
            problems.append(f"log line {index + 1} is unparsable and not the end of a segment: {line[:120]!r}")
    if tail and finished:
        problems.append(f"the finished run's log ends with a torn line: {tail[:120]!r}")
    return problems


def model_turns_done(workspace: Path) -> int:
    """Distinct model turns logged so far, all processes together: ``(roleId, messageCount)`` of the
    ``llm_call`` events (a turn redone after a kill logs the same pair again)."""
    turns = set()
    for run_dir in run_dirs(workspace):
        for event in read_events(run_dir / "log.jsonl"):
            if event["type"] == "llm_call":
                turns.add((event["payload"].get("roleId"), event["payload"].get("messageCount")))
    return len(turns)


def check_pairs(events: list[dict[str, Any]]) -> list[str]:
    """``role_start`` and ``role_finished`` exactly once each per instance id."""
    starts = Counter(e["payload"].get("roleId") for e in events if e["type"] == "role_start")
    ends = Counter(e["payload"].get("roleId") for e in events if e["type"] == "role_finished")
    problems = [f"role_start for {rid} logged {n} times" for rid, n in starts.items() if n != 1]
    problems += [f"role_finished for {rid} logged {n} times" for rid, n in ends.items() if n != 1]
    if set(starts) != set(ends):
        problems.append(f"unpaired instances: started {sorted(starts)}, finished {sorted(ends)}")
    return problems


def role_outcomes(events: list[dict[str, Any]]) -> dict[str, tuple[str, str, str | None]]:
    """Instance id → (role, status, summary) from the ``role_finished`` events."""
    return {
        e["payload"]["roleId"]: (e["payload"]["role"], e["payload"]["status"], e["payload"].get("summary"))
        for e in events
        if e["type"] == "role_finished"
    }


def card_of(value: dict[str, Any]) -> dict[str, Any]:
    """The comparable part of a card: status, summary, artifacts, error."""
    return {
        "status": value.get("status"),
        "summary": value.get("summary"),
        "artifacts": value.get("artifacts", []),
        "error": value.get("error"),
    }


def leftover_files(run_dir: Path) -> list[str]:
    """What must be gone once a run's meta is terminal: the checkpoint and any ``*.tmp`` a killed
    atomic write left (``state.json.<pid>.tmp``, ``meta.json.<pid>.tmp``)."""
    names = ["state.json", "journal.jsonl"]
    return sorted(n for n in names if (run_dir / n).exists()) + sorted(p.name for p in run_dir.glob("*.tmp"))


@dataclass
class Reference:
    """The uncrashed run: its card, the files it produced, the per-instance outcomes, its duration."""

    card: dict[str, Any]
    files: dict[str, str]
    outcomes: dict[str, tuple[str, str, str | None]]
    duration: float
    #: From the first log event to the exit: the run without the interpreter's start-up.
    working: float
    #: Model turns in the run (``model_turns_done`` of the finished reference).
    turns: int = 1


def check_finished_workspace(
    workspace: Path,
    reference: Reference,
    *,
    run_id: str,
    checkpoint_seen: set[str],
    printed_cards: list[dict[str, Any]],
    resumed_ids: list[str],
) -> list[str]:
    """Every invariant of a workspace whose run has ended (docs/crash-harness.md, "Invariants")."""
    problems: list[str] = []
    finished: list[Path] = []
    for run_dir in run_dirs(workspace):
        meta, bad = strict_meta(run_dir)
        problems += bad
        if meta is None:
            problems.append(f"{run_dir.name} has no meta.json")
            continue
        if meta.status not in TERMINAL_STATUSES:
            problems.append(f"{run_dir.name} is still {meta.status!r}")
        left = leftover_files(run_dir)
        if left:
            problems.append(f"{run_dir.name} has a terminal meta ({meta.status}) but still holds {left}")
        data = (run_dir / "log.jsonl").read_bytes() if (run_dir / "log.jsonl").exists() else b""
        finished_log = meta.status != "interrupted"
        problems += [f"{run_dir.name}: {p}" for p in check_log_lines(data, finished=finished_log)]
        events = read_events(run_dir / "log.jsonl")
        if len(events) != sum(1 for line in data.split(b"\n") if _parse_line(line) is not None):
            problems.append(f"{run_dir.name}: read_events disagrees with the line count")
        if meta.status == "interrupted":
            reason = meta.error.message if meta.error else ""
            if run_dir.name in checkpoint_seen:
                problems.append(f"{run_dir.name} was marked interrupted although a checkpoint existed: {reason}")
            if "no checkpoint" not in (reason or ""):
                problems.append(f"{run_dir.name} was marked interrupted for another reason: {reason}")
            if any(e["type"] == "role_start" for e in events):
                problems.append(f"{run_dir.name} was marked interrupted but a role had started")
            continue
        finished.append(run_dir)
        if run_dir.name != run_id:
            problems.append(f"{run_dir.name} finished but the run being resumed was {run_id}")
        problems += [f"{run_dir.name}: {p}" for p in check_pairs(events)]
        outcomes = role_outcomes(events)
        if outcomes != reference.outcomes:
            problems.append(f"{run_dir.name}: role outcomes {outcomes} differ from the reference {reference.outcomes}")
        ids = {e["payload"].get("runId") for e in events if e["type"] == "run_resumed"}
        if ids - {run_id}:
            problems.append(f"{run_dir.name}: run_resumed names other run ids {sorted(ids - {run_id})}")
        card = card_of(msgspec.to_builtins(meta.result) if meta.result else {})
        if card != reference.card:
            problems.append(f"{run_dir.name}: meta card {card} differs from the reference {reference.card}")
    if len(finished) != 1:
        problems.append(f"expected exactly one finished run, found {[p.name for p in finished]}")
    for printed in printed_cards:
        if card_of(printed) != reference.card or printed.get("runId") != run_id:
            problems.append(f"a process printed {printed}, not the reference card for {run_id}")
    if set(resumed_ids) - {run_id}:
        problems.append(f"resume processes resumed {sorted(set(resumed_ids))}, expected only {run_id}")
    files = {name: (workspace / name).read_text() for name in reference.files if (workspace / name).exists()}
    if files != reference.files:
        problems.append(f"artifact files {files} differ from the reference {reference.files}")
    return problems


# --- kill classification -------------------------------------------------------------------------

PHASES = ("startup", "model-stream", "tool", "checkpoint-write", "between-events", "finalizing")


@dataclass
class Baseline:
    """What a run folder looked like when a process started (to attribute what it changed)."""

    dirs: set[str]
    log_sizes: dict[str, int]
    journals: dict[str, tuple[int, bytes] | None]

    @classmethod
    def take(cls, workspace: Path) -> Baseline:
        dirs = run_dirs(workspace)
        return cls(
            dirs={d.name for d in dirs},
            log_sizes={d.name: _size(d / "log.jsonl") for d in dirs},
            journals={d.name: _tail(d / "journal.jsonl") for d in dirs},
        )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _tail(path: Path) -> tuple[int, bytes] | None:
    """Size and last byte of a file: enough to tell whether a journal changed and ends torn."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            if not size:
                return 0, b""
            handle.seek(-1, os.SEEK_END)
            return size, handle.read(1)
    except FileNotFoundError:
        return None


def mid_checkpoint_write(workspace: Path, pid: int, baseline: Baseline) -> bool:
    """Whether process ``pid`` is (or was, when killed) half-way through a checkpoint write: its
    snapshot temp file exists, or the journal changed since it started and ends without a newline."""
    for run_dir in run_dirs(workspace):
        if (run_dir / f"state.json.{pid}.tmp").exists():
            return True
        tail = _tail(run_dir / "journal.jsonl")
        if tail is not None and tail[0] and tail[1] != b"\n" and tail != baseline.journals.get(run_dir.name):
            return True
    return False


def started_working(workspace: Path, baseline: Baseline) -> bool:
    """Whether a process has logged its first event (start-up over): a log grew since ``baseline``."""
    return any(
        _size(d / "log.jsonl") > (baseline.log_sizes.get(d.name, 0) if d.name in baseline.dirs else 0)
        for d in run_dirs(workspace)
    )


def classify_kill(workspace: Path, pid: int, baseline: Baseline) -> str:
    """Which phase a process was in when it was killed (from what it left on disk)."""
    if mid_checkpoint_write(workspace, pid, baseline):
        return "checkpoint-write"
    if run_ended(workspace):
        return "finalizing"
    events: list[dict[str, Any]] = []
    for run_dir in run_dirs(workspace):
        start = 0 if run_dir.name not in baseline.dirs else baseline.log_sizes.get(run_dir.name, 0)
        try:
            with (run_dir / "log.jsonl").open("rb") as handle:
                handle.seek(start)
                data = handle.read()
        except FileNotFoundError:
            continue
        events += [e for line in data.split(b"\n") if (e := _parse_line(line)) is not None]
    if not events:
        return "startup"
    last = events[-1]
    if last["type"] == "llm_call_start":
        return "model-stream"
    if last["type"] == "tool_call" and last["payload"].get("tool") == "run_shell":
        return "tool"
    return "between-events"


def forensics(workspace: Path, kills: list[Kill]) -> str:
    """A failed crash run in one line: its kills, each run folder's files and last events (the
    workspace itself may be gone by the time anyone looks: pytest rotates old base directories)."""
    parts = [
        "kills: " + ", ".join(f"{k.kind}/{k.mode}/{k.phase}/pause {k.pause_ms}/after {k.delay:.2f}s" for k in kills)
    ]
    for run_dir in run_dirs(workspace):
        meta, _ = strict_meta(run_dir)
        files = ", ".join(f"{f.name} {f.stat().st_size}B" for f in sorted(run_dir.iterdir()))
        last = [e["type"] for e in read_events(run_dir / "log.jsonl")[-6:]]
        parts.append(f"{run_dir.name} [{meta.status if meta else 'no meta'}]: {files}; last events {last}")
    return " | ".join(parts)


@dataclass
class Kill:
    run: int
    kind: str
    delay: float
    pause_ms: int
    mode: str
    phase: str


def run_ended(workspace: Path) -> bool:
    """Whether the workspace holds a run with a terminal meta other than ``interrupted``."""
    for run_dir in run_dirs(workspace):
        meta, _ = strict_meta(run_dir)
        if meta is not None and meta.status in TERMINAL_STATUSES and meta.status != "interrupted":
            return True
    return False
