"""The suite runner: every benchmark of a suite, one run each, validated and summarized.

Per benchmark: copy the folder to a throwaway workspace without ``eval.json`` and ``sim-solution.json``;
run ``description`` as the task at a fixed effort (in this process, or on a service); skip validation
when the run did not end ``success`` (status ``error``); otherwise validate (``pass`` / ``fail``). Every
``eval.json`` (and, with sim solutions, every script) is checked before anything runs.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

import trio

from orchestrator.config import load_settings
from orchestrator.engine.runfolder import read_meta
from orchestrator.foundry.evalspec import EvalSpec, EvalSpecError, load_eval
from orchestrator.foundry.inprocess import RunRecord, run_in_process, sim_env
from orchestrator.foundry.progress import Progress
from orchestrator.foundry.remote import (
    claim_service_workspace,
    clear_service_workspace,
    run_on_service,
    service_token,
)
from orchestrator.foundry.report import BenchResult, SuiteSummary, new_out_dir, run_tokens, write_artifacts
from orchestrator.foundry.validate import validate_workspace
from orchestrator.sim import ScriptError, SimScript, load_script
from orchestrator.vocabulary import DEFAULT_EFFORT

__all__ = [
    "EVAL_FILE",
    "SOLUTION_FILE",
    "Benchmark",
    "SuiteError",
    "SuiteOptions",
    "copy_benchmark",
    "discover",
    "load_benchmarks",
    "run_suite",
]

EVAL_FILE = "eval.json"
SOLUTION_FILE = "sim-solution.json"
#: Never copied into a workspace: the judge's files, and caches left by trying the benchmark by hand.
_TOP_LEVEL_HIDDEN = frozenset({EVAL_FILE, SOLUTION_FILE, ".orchestration"})
_CACHES = ("__pycache__", ".pytest_cache")


class SuiteError(Exception):
    """The suite cannot run as asked; ``problems`` names each finding (exit code 2)."""

    def __init__(self, problems: list[str] | str) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("; ".join(self.problems))


@dataclass
class Benchmark:
    name: str
    path: Path
    spec: EvalSpec
    script: SimScript | None = None


@dataclass
class SuiteOptions:
    suite: Path
    guild_dir: Path
    deployment_file: Path
    env: Mapping[str, str]
    only: list[str] = field(default_factory=list)
    effort: str = DEFAULT_EFFORT
    sim_solutions: bool = False
    server: str | None = None
    server_workspace: Path | None = None
    out: Path | None = None
    keep_workspaces: bool = False
    run_timeout: float = 1800.0


def discover(suite: Path, only: list[str]) -> list[Path]:
    """The benchmark folders of ``suite`` (sorted by name), or ``suite`` itself when it is one."""
    if not suite.is_dir():
        raise SuiteError(f"{suite}: not a directory")
    if (suite / EVAL_FILE).is_file():
        found = [suite]
    else:
        found = sorted(
            p for p in suite.iterdir() if p.is_dir() and not p.name.startswith((".", "_")) and (p / EVAL_FILE).is_file()
        )
    if not found:
        raise SuiteError(f"{suite}: no benchmark folders (a folder with an {EVAL_FILE})")
    if only:
        names = {p.name for p in found}
        unknown = [name for name in only if name not in names]
        if unknown:
            raise SuiteError(
                f"--only {', '.join(unknown)}: no such benchmark in {suite} (have: {', '.join(sorted(names))})"
            )
        found = [p for p in found if p.name in only]
    return found


def load_benchmarks(paths: list[Path], *, sim_solutions: bool) -> list[Benchmark]:
    """Check every ``eval.json`` (and sim script); ``SuiteError`` listing every problem of every file."""
    problems: list[str] = []
    benchmarks: list[Benchmark] = []
    for path in paths:
        try:
            spec = load_eval(path / EVAL_FILE)
        except EvalSpecError as exc:
            problems.extend(f"{exc.source}: {problem}" for problem in exc.problems)
            continue
        script = None
        if sim_solutions:
            try:
                script = load_script(path / SOLUTION_FILE)
            except FileNotFoundError:
                problems.append(f"{path / SOLUTION_FILE}: missing (--sim-solutions needs one per benchmark)")
                continue
            except (OSError, ScriptError) as exc:
                problems.append(str(exc))
                continue
        benchmarks.append(Benchmark(path.name, path, spec, script))
    if problems:
        raise SuiteError(problems)
    return benchmarks


def _ignore(directory: str, names: list[str], *, top: Path) -> set[str]:
    hidden = {n for n in names if n in _CACHES}
    if Path(directory) == top:
        hidden |= {n for n in names if n in _TOP_LEVEL_HIDDEN}
    return hidden


def copy_benchmark(source: Path, target: Path) -> None:
    """Copy the benchmark's files into ``target`` (created or existing), leaving out the judge's files."""
    shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True, ignore=lambda d, n: _ignore(d, n, top=source))


def _error_reason(record: RunRecord) -> str:
    if record.problem:
        return record.problem
    summary = f": {record.summary}" if record.summary else ""
    return f"the run ended {record.status}{summary} (validation skipped)"


async def _run_one(bench: Benchmark, options: SuiteOptions, workspace: Path, progress: Progress) -> RunRecord:
    task = bench.spec.description
    if options.server is not None:
        return await run_on_service(
            server=options.server,
            workspace=workspace,
            task=task,
            effort=options.effort,
            human_responses=bench.spec.human_responses,
            run_timeout=options.run_timeout,
            on_phase=progress.phase,
            token=service_token(options.env, options.server_workspace or workspace),
        )
    return await run_in_process(
        guild_dir=options.guild_dir,
        deployment_file=options.deployment_file,
        env=options.env,
        workspace=workspace,
        task=task,
        effort=options.effort,
        human_responses=bench.spec.human_responses,
        script=bench.script,
        run_timeout=options.run_timeout,
        on_phase=progress.phase,
    )


def _workspace_for(bench: Benchmark, options: SuiteOptions) -> Path:
    if options.server_workspace is not None:
        clear_service_workspace(options.server_workspace)
        copy_benchmark(bench.path, options.server_workspace)
        return options.server_workspace
    workspace = Path(tempfile.mkdtemp(prefix=f"bench-{bench.name}-"))
    copy_benchmark(bench.path, workspace)
    return workspace


async def run_benchmark(bench: Benchmark, options: SuiteOptions, out_dir: Path, progress: Progress) -> BenchResult:
    """Run and judge one benchmark; its artifacts go to ``out_dir/<name>/``."""
    workspace = _workspace_for(bench, options)
    try:
        started = time.monotonic()
        progress.phase("running")
        record = await _run_one(bench, options, workspace, progress)
        wall = time.monotonic() - started
        prompt, completion = run_tokens(record.run_dirs)
        result = BenchResult(
            benchmark=bench.name,
            status="error",
            run_id=record.run_id,
            prompt_tokens=prompt,
            completion_tokens=completion,
            wall_time_seconds=round(wall, 3),
            workspace=workspace,
        )
        if record.status != "success" or record.problem:
            result.reasons = [_error_reason(record)]
        else:
            progress.phase("validating")
            verdict = await validate_workspace(bench.spec.validation, workspace)
            result.status = "pass" if verdict.passed else "fail"
            result.reasons = verdict.reasons
            result.command = verdict.command
        kept = workspace if options.keep_workspaces and options.server_workspace is None else None
        write_artifacts(out_dir / bench.name, result, record.run_dirs, kept_workspace=kept)
        if options.server is not None:
            result.guild_path = _service_guild(record.run_dirs)
        return result
    finally:
        if options.server_workspace is not None:
            clear_service_workspace(workspace)
        elif not options.keep_workspaces:
            shutil.rmtree(workspace, ignore_errors=True)


def _service_guild(run_dirs: list[Path]) -> str | None:
    """The Guild a service run used, from its ``meta.json`` (the local ``--guild`` means nothing there)."""
    for run_dir in run_dirs:
        meta = read_meta(run_dir)
        if meta is not None and meta.guild_path:
            return meta.guild_path
    return None


def preflight(options: SuiteOptions, benchmarks: list[Benchmark]) -> None:
    """Load the Guild and the deployment once before anything runs (``ConfigError`` when they do not).

    A sim run's endpoint is only known per benchmark, so this checks with a placeholder one.
    """
    if options.server is not None:
        return
    env = dict(options.env)
    script = next((b.script for b in benchmarks if b.script is not None), None)
    if script is not None:
        env = sim_env(env, script, "http://127.0.0.1:9/v1")
    load_settings(options.guild_dir, options.deployment_file, env)


async def run_suite(options: SuiteOptions, *, progress_stream: TextIO | None = sys.stderr) -> tuple[SuiteSummary, Path]:
    """Run the suite; returns the summary and the folder ``summary.json`` was written to.

    Raises ``SuiteError`` before anything runs when the suite or its files are invalid, and
    ``ConfigError`` when the Guild or the deployment do not load.
    """
    if options.sim_solutions and options.server is not None:
        raise SuiteError("--sim-solutions runs the model in this process; it does not combine with --server")
    if options.server is not None and options.server_workspace is None:
        raise SuiteError("--server needs --server-workspace DIR: the directory the service works in")
    benchmarks = load_benchmarks(discover(options.suite, options.only), sim_solutions=options.sim_solutions)
    preflight(options, benchmarks)
    if options.server_workspace is not None:
        claim_service_workspace(options.server_workspace)
        if options.server is not None:
            service_token(options.env, options.server_workspace)  # no token: refused before anything runs
    out_dir = new_out_dir(options.suite, options.out)
    summary = SuiteSummary(
        suite_path=str(options.suite),
        guild_path=str(options.guild_dir),
        started_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
    )
    progress = Progress(len(benchmarks), progress_stream)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(progress.ticker)
        for index, bench in enumerate(benchmarks, start=1):
            progress.start(index, bench.name)
            result = await run_benchmark(bench, options, out_dir, progress)
            progress.finish(result.status, result.wall_time_seconds, result.reasons[0] if result.reasons else None)
            summary.results.append(result)
            if index == 1 and result.guild_path is not None:
                summary.guild_path = result.guild_path
            summary.write(out_dir / "summary.json")  # after each benchmark: an interrupted suite keeps its results
        nursery.cancel_scope.cancel()
    return summary, out_dir
