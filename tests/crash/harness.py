"""The crash harness: SIGKILL ``orchestrator run`` / ``resume`` at random instants, resume, and check
that the run ends exactly as an uncrashed one does (see docs/crash-harness.md).

``CrashHarness`` drives a reference run and the crash runs and collects a ``Report``. The pieces it
drives: ``scenario.py`` (the sim script and the workspace), ``processes.py`` (spawn, kill, orphan
reaping), ``checks.py`` (pure invariant checks over a workspace, and the classification of kills).
"""

from __future__ import annotations

import json
import random
import re
import secrets
import shutil
import signal
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import trio
from tests.crash.checks import (
    PHASES,
    Baseline,
    Kill,
    Reference,
    card_of,
    check_finished_workspace,
    check_log_lines,
    check_pairs,
    classify_kill,
    forensics,
    mid_checkpoint_write,
    model_turns_done,
    role_outcomes,
    run_dirs,
    run_ended,
    started_working,
    strict_meta,
)
from tests.crash.processes import Finished, Reaper, child_env
from tests.crash.scenario import ARTIFACTS, TASK, write_config
from tests.helpers import REPO, Sim

from orchestrator.runlog import read_events

# --- the driver ----------------------------------------------------------------------------------

#: ``resume``'s announcement (``engine/reconcile.py:Resumable.notice``): the run id it resumes.
RESUMING = re.compile(r"^orchestrator: resuming run (\S+) from its checkpoint", re.MULTILINE)


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
            trace.resumed += RESUMING.findall(done.stderr)
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
            if run_ended(workspace):
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


async def _wait_for_a_fresh_run_id(workspace: Path) -> None:
    """Run ids have one-second resolution: wait until the clock is past the newest existing id."""
    dirs = run_dirs(workspace)
    if not dirs:
        return
    newest = datetime.strptime(dirs[-1].name, "run-%Y%m%d-%H%M%S").replace(tzinfo=UTC)
    remaining = (newest + timedelta(seconds=1) - datetime.now(UTC)).total_seconds()
    if remaining > 0:
        await trio.sleep(remaining)
