"""The crash harness: SIGKILL ``orchestrator run`` / ``resume`` at random instants, resume, and check
that the run ends exactly as an uncrashed one does (see docs/crash-harness.md).

Layout: the sim script and workspace setup, the child processes (spawn, kill, orphan reaping), the
invariant checks (pure functions over a workspace, each returning problem strings), and
``CrashHarness`` that drives reference + crash runs and collects a ``Report``.
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import secrets
import shutil
import signal
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import msgspec
import trio
from tests.engine.harness import call, finish, turn
from tests.helpers import REPO, Sim, write_deployment, write_guild

from orchestrator.engine.runfolder import RUN_ID_PATTERN, TERMINAL_STATUSES, RunMeta, runs_root
from orchestrator.runlog import read_events

# --- the scenario --------------------------------------------------------------------------------

TASK = "assemble the crash-test widget"
ROLES: dict[str, list[str]] = {
    "lead": ["agent", "finish"],
    "helper": ["agent", "finish", "run_shell"],
    "leaf": ["finish", "run_shell"],
}
#: Model streaming takes real time: ~25 deltas of 10 characters, 5 ms apart, per turn.
STREAM: dict[str, Any] = {"chunkChars": 10, "chunkDelayMs": 5}
PARTS = ("alpha", "beta")


def _reply(role: str, last: str, *calls: dict[str, Any], thought: str) -> dict[str, Any]:
    """A reusable turn for ``role`` whose last input contains ``last``; streams reasoning and content."""
    content = f"The {role} acts on: {last}."
    reasoning = f"Thinking as the {role}: {thought} Keep every step idempotent so a replay is harmless."
    return turn(role, *calls, last=last, reusable=True, reasoning=reasoning, content=content, **STREAM)


def _shell(command: str) -> dict[str, Any]:
    return call("run_shell", command=command)


def crash_script() -> dict[str, Any]:
    """lead → helper → leaf(alpha), leaf(beta) → helper checks → lead finishes. Replies are a function
    of the request (role + last input), every turn reusable and the later stage of each role first, so
    a replayed request always gets the same answer."""
    turns = [
        _reply("lead", "both parts ready", finish(FINAL_SUMMARY, artifacts=list(ARTIFACTS)), thought="all done."),
        _reply("lead", TASK, call("agent", role="helper", task="prepare both parts"), thought="delegate."),
        _reply("helper", "wc -l", finish("both parts ready", artifacts=list(ARTIFACTS)), thought="verified."),
        _reply("helper", "part beta built", _shell("sleep 0.15 && cat alpha.txt beta.txt | wc -l"), thought="check."),
        _reply("helper", "part alpha built", call("agent", role="leaf", task="build part beta"), thought="next."),
        _reply("helper", "prepare both parts", call("agent", role="leaf", task="build part alpha"), thought="go."),
    ]
    for part in PARTS:
        turns += [
            _reply("leaf", f"cat {part}.txt", finish(f"part {part} built", artifacts=[f"{part}.txt"]), thought="ok."),
            _reply("leaf", f"{part}-step-two", _shell(f"sleep 0.15 && cat {part}.txt"), thought="read it back."),
            _reply(
                "leaf",
                f"build part {part}",
                # Truncate, then append: the pair is idempotent as a whole, as a replayed turn needs.
                _shell(f"sleep 0.15 && echo {part}-one > {part}.txt && echo {part}-step-one"),
                _shell(f"sleep 0.1 && echo {part}-two >> {part}.txt && echo {part}-step-two"),
                thought="write the part.",
            ),
        ]
    return {"contextWindow": 32768, "turns": turns}


FINAL_SUMMARY = "widget assembled from parts alpha and beta"
ARTIFACTS = ("alpha.txt", "beta.txt")


def write_config(directory: Path, api_base: str) -> list[str]:
    """The Guild and deployment for the scenario; returns the ``--guild/--deployment`` arguments."""
    guild = write_guild(directory / "guild", ROLES)
    deployment = write_deployment(directory / "deployment.json", api_base)
    return ["--guild", str(guild), "--deployment", str(deployment)]


# --- child processes -----------------------------------------------------------------------------

TOKEN_VARIABLE = "CRASH_HARNESS_TOKEN"
_PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 36, 37
#: A sweep that cannot clear the strays in this long is a harness failure.
SWEEP_SECONDS = 10.0


def child_env(token: str, pause_ms: int) -> dict[str, str]:
    """The orchestrator's environment: no inherited ``ORCHESTRATOR_*``, fast failure, the fault pause,
    and a token every descendant inherits (how strays are found)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    env.update(
        {
            TOKEN_VARIABLE: token,
            "ORCHESTRATOR_LLM_BACKOFF_SECONDS": "0.05",
            "ORCHESTRATOR_STALL_HEADERS_SECONDS": "10",
            "ORCHESTRATOR_STALL_IDLE_SECONDS": "10",
        }
    )
    if pause_ms:
        env["ORCHESTRATOR_FAULT_CHECKPOINT_PAUSE_MS"] = str(pause_ms)
    return env


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """``(state, ppid)`` of a process, or ``None`` once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1])


def _pids() -> Iterator[int]:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


def children_of(parent: int) -> set[int]:
    return {pid for pid in _pids() if (stat := _proc_stat(pid)) is not None and stat[1] == parent}


def token_pids(token: str) -> set[int]:
    """Live processes (not zombies: their environ reads empty) carrying ``token``."""
    marker = f"{TOKEN_VARIABLE}={token}".encode()
    found = set()
    for pid in _pids():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            found.add(pid)
    return found


class Reaper:
    """Makes this process a child subreaper while the harness runs, so the tool processes a killed
    orchestrator orphans (``run_shell`` children live in their own sessions) are re-parented here rather
    than to PID 1 — which in some containers never reaps them — and can be killed and reaped."""

    def __init__(self) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._previous = ctypes.c_int(0)
        self.preexisting: set[int] = set()
        self.reaped = 0

    def __enter__(self) -> Reaper:
        self._libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(self._previous), 0, 0, 0)
        if self._libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
        self.preexisting = children_of(os.getpid())
        return self

    def __exit__(self, *exc: object) -> None:
        self._libc.prctl(_PR_SET_CHILD_SUBREAPER, self._previous.value, 0, 0, 0)

    def adopted(self) -> set[int]:
        return children_of(os.getpid()) - self.preexisting

    async def sweep(self, token: str, *, exclude: set[int]) -> int:
        """Kill every process carrying ``token`` (whole process groups) and reap every adopted child
        until none is left; returns how many were killed. Waits on the process table, not a clock."""
        killed: set[int] = set()
        with trio.fail_after(SWEEP_SECONDS):
            while True:
                strays = token_pids(token) - exclude
                for pid in strays:
                    for kill in (os.killpg, os.kill):  # its process group first: a shell and its children
                        try:
                            kill(pid, signal.SIGKILL)
                        except (ProcessLookupError, PermissionError):
                            pass
                killed |= strays
                adopted = self.adopted() - exclude
                self.reaped += sum(_reap(pid) for pid in adopted)
                if not strays and not adopted:
                    return len(killed)
                await trio.sleep(0.002)


def _reap(pid: int) -> bool:
    """Reap ``pid`` if it has exited (never blocks)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return bool(done)


@dataclass
class Finished:
    """How a child process ended: its exit code (``None`` if we killed it) and its output."""

    kind: str
    returncode: int | None
    stdout: str
    stderr: str
    elapsed: float
    pid: int
    #: Seconds from the first log event to the end (``elapsed`` when the anchor was the spawn).
    working: float


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
    if _ended(workspace):
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


# --- the driver ----------------------------------------------------------------------------------


@dataclass
class Kill:
    run: int
    kind: str
    delay: float
    pause_ms: int
    mode: str
    phase: str


@dataclass
class Plan:
    """One process's fault injection: checkpoint pause, kill instant (``None``: let it finish), mode."""

    pause_ms: int
    kill_after: float | None
    mode: str
    #: The kill delay counts from the spawn, or from the process's first log event (``started``).
    anchor: str = "spawn"


@dataclass
class Trace:
    """What one crash run observed across its processes."""

    kills: int = 0
    current: str | None = None
    printed: list[dict[str, Any]] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    checkpoint_seen: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)


@dataclass
class Report:
    target: int
    seed: int
    kills: list[Kill] = field(default_factory=list)
    runs: int = 0
    failed_runs: int = 0
    processes: int = 0
    fresh_restarts: int = 0
    strays_killed: int = 0
    #: Temp files (``<name>.<pid>.tmp``) a kill left behind in a finished run folder (also a failure).
    stray_temp_files: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    reference_seconds: float = 0.0
    elapsed: float = 0.0

    def phases(self) -> Counter[str]:
        return Counter(k.phase for k in self.kills)

    def summary(self) -> str:
        phases = ", ".join(f"{p} {self.phases()[p]}" for p in PHASES)
        strays = ", ".join(sorted(Path(p).name for p in self.stray_temp_files)[:5])
        outcome = (
            "all resumed to the reference card"
            if not self.failures
            else f"{self.failed_runs} runs FAILED ({len(self.failures)} problem lines)"
        )
        return (
            f"crash harness: {len(self.kills)} kills, {self.runs} runs, {outcome} "
            f"({self.processes} processes, {self.fresh_restarts} fresh runs after a kill before the first "
            f"checkpoint, {self.strays_killed} orphaned tool processes killed, {len(self.stray_temp_files)} stray "
            f"temp files{f' ({strays})' if strays else ''}; kills by phase: {phases}; "
            f"reference run {self.reference_seconds:.2f} s, total {self.elapsed:.0f} s, seed {self.seed})"
        )


class CrashHarness:
    """Runs the scenario once uncrashed, then crash runs (``parallel`` at a time, each in its own
    workspace) until exactly ``target`` kills have been made."""

    def __init__(
        self,
        root: Path,
        sim: Sim,
        *,
        target: int,
        seed: int,
        parallel: int = 2,
        max_kills_per_run: int = 8,
        log: Callable[[str], None] = print,
    ) -> None:
        self.root = root
        self.sim = sim
        self.seed = seed
        self.parallel = parallel
        self.report = Report(target=target, seed=seed)
        self.max_kills_per_run = max_kills_per_run
        self.config = write_config(root / "config", sim.base_url)
        self.reaper = Reaper()
        self.log = log
        self.reference: Reference | None = None
        #: Kills planned but not yet made (a process may exit before its kill instant).
        self._reserved = 0
        self._next_index = 0
        #: Orchestrator processes alive now: never reaped by a sweep, only by their own ``wait``.
        self._live: set[int] = set()
        #: ``(duration, working)`` of uncrashed runs, the reference first (see ``_expected``).
        self._timings: list[tuple[float, float]] = []

    # processes

    async def _spawn_and_maybe_kill(
        self, workspace: Path, kind: str, token: str, plan: Plan
    ) -> tuple[Finished, Baseline]:
        """Start ``orchestrator <kind>``; kill it with SIGKILL after ``plan.kill_after`` seconds (in
        ``checkpoint`` mode: at the first checkpoint write seen after that), unless it exits first."""
        argv = [sys.executable, "-m", "orchestrator", kind, "--workspace", str(workspace), *self.config, "--json"]
        if kind == "run":
            argv.append(TASK)
        number = self.report.processes
        self.report.processes += 1
        out_path, err_path = (workspace.parent / f"{workspace.name}.{number}.{ext}" for ext in ("out", "err"))
        baseline = Baseline.take(workspace)
        started = anchored = time.monotonic()
        with out_path.open("wb") as out, err_path.open("wb") as err:
            process = await trio.lowlevel.open_process(
                argv, stdout=out, stderr=err, env=child_env(token, plan.pause_ms), cwd=REPO
            )
        self._live.add(process.pid)
        try:
            if plan.kill_after is None:
                await process.wait()
            else:
                if plan.anchor == "started":
                    await _until(process, lambda: started_working(workspace, baseline))
                    anchored = time.monotonic()
                with trio.move_on_after(plan.kill_after):
                    await process.wait()
                if plan.mode == "checkpoint":
                    await _until(process, lambda: mid_checkpoint_write(workspace, process.pid, baseline))
        finally:
            if process.returncode is None:
                process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
                self._live.discard(process.pid)
                self.report.strays_killed += await self.reaper.sweep(token, exclude=self._live)
        finished = Finished(
            kind=kind,
            returncode=None if process.returncode == -signal.SIGKILL else process.returncode,
            stdout=out_path.read_text(),
            stderr=err_path.read_text(),
            elapsed=time.monotonic() - started,
            pid=process.pid,
            working=time.monotonic() - anchored,
        )
        out_path.unlink()
        err_path.unlink()
        return finished, baseline

    # runs

    async def run_reference(self) -> Reference:
        workspace = self.root / "reference"
        workspace.mkdir()
        plan = Plan(pause_ms=0, kill_after=float("inf"), mode="none", anchor="started")
        done, _ = await self._spawn_and_maybe_kill(workspace, "run", secrets.token_hex(8), plan)
        if done.returncode != 0:
            raise AssertionError(f"the uncrashed run failed ({done.returncode}): {done.stderr}")
        card = json.loads(done.stdout)
        (run_dir,) = run_dirs(workspace)
        events = read_events(run_dir / "log.jsonl")
        problems = check_pairs(events) + check_log_lines((run_dir / "log.jsonl").read_bytes(), finished=True)
        problems += await self._check_sim_requests("reference")
        if problems:
            raise AssertionError(f"the uncrashed run is itself inconsistent: {problems}")
        self.reference = Reference(
            card=card_of(card),
            files={name: (workspace / name).read_text() for name in ARTIFACTS},
            outcomes=role_outcomes(events),
            duration=done.elapsed,
            working=done.working,
            turns=model_turns_done(workspace),
        )
        self.report.reference_seconds = done.elapsed
        self._timings.append((done.elapsed, done.working))
        return self.reference

    def _plan(self, rng: random.Random, kills_in_run: int, remaining: float) -> Plan:
        """The next process's fault pause and kill instant; reserves the kill against the target.

        A fifth of the kills come at a uniformly random instant of a whole uncrashed process lifetime
        (start-up included). The rest come at a random instant of the work still expected (``remaining``
        of the run's turns, plus a margin, so a process sometimes finishes first), counted from the
        process's first log event; half of those with a checkpoint pause then wait for the next
        checkpoint write."""
        assert self.reference is not None
        pause_ms = rng.choice((20, 35, 50)) if rng.random() < 0.35 else 0
        mode = "checkpoint" if pause_ms and rng.random() < 0.5 else "random" if rng.random() < 0.2 else "working"
        duration, working = self._expected()
        if mode == "random":
            span = duration
        else:
            span = max(0.3, 1.25 * remaining * working) * (0.8 if mode == "checkpoint" else 1.0)
        delay = rng.uniform(0, span)
        if len(self.report.kills) + self._reserved >= self.report.target or kills_in_run >= self.max_kills_per_run:
            return Plan(pause_ms, None, "none")
        self._reserved += 1
        return Plan(pause_ms, delay, mode, anchor="spawn" if mode == "random" else "started")

    def _expected(self) -> tuple[float, float]:
        """Expected ``(duration, working)`` of an uncrashed process: the median of the latest uncrashed
        runs (the reference and every crash run's first process that finished unkilled), so the kill
        timing follows the machine's load as it changes."""
        recent = self._timings[-7:]
        return statistics.median(t[0] for t in recent), statistics.median(t[1] for t in recent)

    async def crash_run(self, index: int) -> None:
        """One workspace: ``run``, then ``resume`` after every kill, until a process ends the run."""
        assert self.reference is not None
        workspace = self.root / f"run-{index:04d}"
        workspace.mkdir()
        trace = Trace()
        started = time.monotonic()
        try:
            await self._cycles(index, workspace, trace)
            if trace.current is None:
                trace.problems.append("no run folder was ever created")
            else:
                trace.problems += check_finished_workspace(
                    workspace,
                    self.reference,
                    run_id=trace.current,
                    checkpoint_seen=trace.checkpoint_seen,
                    printed_cards=trace.printed,
                    resumed_ids=trace.resumed,
                )
            self.report.stray_temp_files += [str(p) for d in run_dirs(workspace) for p in d.glob("*.tmp")]
        except Exception as exc:  # recorded, so a long harness run reports every failure, not the first
            trace.problems.append(f"harness error: {exc!r}")
        trace.problems += await self._check_sim_requests(workspace.name)
        self.report.runs += 1
        self.report.failures += [f"{workspace}: {p}" for p in trace.problems]
        if trace.problems:
            self.report.failed_runs += 1
            kills = [k for k in self.report.kills if k.run == index]
            trace.problems.append(f"forensics: {forensics(workspace, kills)}")
            self.report.failures.append(f"{workspace}: {trace.problems[-1]}")
        else:
            shutil.rmtree(workspace)
        phases = Counter(k.phase for k in self.report.kills if k.run == index)
        self.log(
            f"crash run {index}: {trace.kills} kills ({', '.join(f'{p} {n}' for p, n in phases.items())}), "
            f"{time.monotonic() - started:.1f} s; "
            f"{'ok' if not trace.problems else 'FAILED: ' + '; '.join(trace.problems)}; "
            f"total {len(self.report.kills)}/{self.report.target} kills"
        )

    async def _cycles(self, index: int, workspace: Path, trace: Trace) -> None:
        """Start, kill and restart processes until one ends the run on its own."""
        assert self.reference is not None
        rng = random.Random(f"{self.seed}-{index}")
        token = secrets.token_hex(8)
        kind = "run"
        for _cycle in range(10 * self.max_kills_per_run + 10):
            if kind == "run":
                await _wait_for_a_fresh_run_id(workspace)
            done_turns = model_turns_done(workspace) if kind == "resume" else 0
            plan = self._plan(rng, trace.kills, max(0.0, 1 - done_turns / self.reference.turns))
            try:
                done, baseline = await self._spawn_and_maybe_kill(workspace, kind, token, plan)
            finally:
                self._reserved -= plan.kill_after is not None
            trace.resumed += [
                line.split()[2] for line in done.stderr.splitlines() if line.startswith("orchestrator: resuming")
            ]
            new_dirs = [d.name for d in run_dirs(workspace) if d.name not in baseline.dirs]
            if kind == "run" and new_dirs:
                trace.current = new_dirs[-1]
            for run_dir in run_dirs(workspace):
                if (run_dir / "state.json").exists():
                    trace.checkpoint_seen.add(run_dir.name)
                trace.problems += strict_meta(run_dir)[1]
                log = run_dir / "log.jsonl"
                data = log.read_bytes() if log.exists() else b""
                trace.problems += [f"{run_dir.name}: {p}" for p in check_log_lines(data, finished=False)]
            if done.returncode is None:
                phase = classify_kill(workspace, done.pid, baseline)
                self.report.kills.append(Kill(index, kind, plan.kill_after or 0.0, plan.pause_ms, plan.mode, phase))
                trace.kills += 1
                kind = "resume"
                continue
            if kind == "run" and not trace.kills and not plan.pause_ms and plan.anchor == "started":
                self._timings.append((done.elapsed, done.working))
            if done.stdout.strip():
                trace.printed.append(json.loads(done.stdout))
            if done.returncode != 0 and "is taken" not in done.stderr:
                trace.problems.append(f"{kind} exited {done.returncode}: {done.stderr.strip()[-500:]}")
                return
            if _ended(workspace):
                return
            # Nothing to resume (killed before the first checkpoint): start the task afresh.
            if kind == "resume":
                self.report.fresh_restarts += 1
            kind = "run"
        trace.problems.append("the run never ended")

    async def _check_sim_requests(self, label: str) -> list[str]:
        """Every model request matched a scripted turn (replies stayed a function of the request)."""
        async with httpx.AsyncClient() as client:
            response = await client.get(f"{self.sim.root}/_sim/requests")
            records = response.json()
            await client.delete(f"{self.sim.root}/_sim/requests")
        unmatched = [r for r in records if r["path"].endswith("/responses") and r["turn"] is None]
        return [f"{label}: {len(unmatched)} model requests matched no scripted turn"] if unmatched else []

    def _kills_wanted(self) -> bool:
        return len(self.report.kills) + self._reserved < self.report.target

    async def _worker(self) -> None:
        while self._kills_wanted():
            self._next_index += 1
            await self.crash_run(self._next_index)

    async def run(self) -> Report:
        started = time.monotonic()
        with self.reaper:
            await self.run_reference()
            while self._kills_wanted():  # a reserved kill whose process exited first is made up here
                async with trio.open_nursery() as nursery:
                    for _ in range(self.parallel):
                        nursery.start_soon(self._worker)
            leftovers = self.reaper.adopted()
        if leftovers:
            self.report.failures.append(f"processes left behind: {sorted(leftovers)}")
        self.report.elapsed = time.monotonic() - started
        return self.report


async def _until(process: trio.Process, condition: Callable[[], bool]) -> None:
    """Return once ``condition()`` holds (polled: it is about files) or the process has exited."""
    async with trio.open_nursery() as nursery:

        async def exited() -> None:
            await process.wait()
            nursery.cancel_scope.cancel()

        nursery.start_soon(exited)
        while True:
            if condition():
                break
            await trio.sleep(0.002)
        nursery.cancel_scope.cancel()


def _ended(workspace: Path) -> bool:
    """Whether the workspace holds a run with a terminal meta other than ``interrupted``."""
    for run_dir in run_dirs(workspace):
        meta, _ = strict_meta(run_dir)
        if meta is not None and meta.status in TERMINAL_STATUSES and meta.status != "interrupted":
            return True
    return False


async def _wait_for_a_fresh_run_id(workspace: Path) -> None:
    """Run ids have one-second resolution: wait until the clock is past the newest existing id."""
    dirs = run_dirs(workspace)
    if not dirs:
        return
    newest = datetime.strptime(dirs[-1].name, "run-%Y%m%d-%H%M%S").replace(tzinfo=UTC)
    remaining = (newest + timedelta(seconds=1) - datetime.now(UTC)).total_seconds()
    if remaining > 0:
        await trio.sleep(remaining)
