"""``orchestrator foundry SUITE_DIR [options]``: adapt the Guild's prompts to the model, on a suite.

Exit codes: 0 the search finished (improved or not); 1 it stopped early (the reflection model is down;
resumable); 2 invalid usage, suite files, configuration or cluster; 130 interrupted (resumable).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import TextIO

import trio

from orchestrator.config import resolve_paths
from orchestrator.errors import ConfigError
from orchestrator.foundry.cli import positive_count as _count
from orchestrator.foundry.cli import print_problems, print_result
from orchestrator.foundry.results import render_report
from orchestrator.foundry.runner import SuiteError
from orchestrator.foundry.search import (
    DEFAULT_BUDGET,
    FoundryError,
    FoundryOptions,
    FoundryStopped,
    resumed,
    run_foundry,
)
from orchestrator.vocabulary import DEFAULT_EFFORT, EFFORT_TIERS

__all__ = ["ProgressLine", "build_parser", "main"]

EXIT_OK, EXIT_STOPPED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
PROG = "orchestrator foundry"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Search for role prompts and tool descriptions that score better on a benchmark suite "
        "with your model (GEPA), running every benchmark run as a Dask task. See docs/foundry.md.",
    )
    add = parser.add_argument
    add("suite", metavar="SUITE_DIR", nargs="?", help="a folder of benchmark folders (not needed with --resume)")
    add("--guild", metavar="DIR", help="the seed Guild (default ORCHESTRATOR_GUILD_DIR or ./guild)")
    add("--deployment", metavar="FILE", help="deployment file (default ORCHESTRATOR_DEPLOYMENT_FILE or ./deployment/…)")
    add(
        "--budget",
        metavar="N",
        type=_count,
        help=f"most runs, the seed's included (default {DEFAULT_BUDGET}; with --resume: raise the search's own)",
    )
    add("--repeats", metavar="K", type=_count, default=1, help="runs of each benchmark per candidate (default 1)")
    add("--workers", metavar="N", type=_count, default=1, help="workers of the local Dask cluster (default 1)")
    add("--scheduler", metavar="ADDR", help="use this running Dask scheduler (tcp://host:8786) instead")
    add("--reflection-api-base", metavar="URL", help="the reflection model's endpoint (default: the runs' model)")
    add("--reflection-model", metavar="NAME", help="the reflection model's name (default: the runs' model)")
    add("--sim-solutions", action="store_true", help="each benchmark's sim-solution.json plays the runs' model")
    add("--out", metavar="DIR", help="results folder (default SUITE_DIR/.results/<UTC timestamp>)")
    add("--resume", metavar="DIR", help="continue the search whose results folder is DIR")
    add("--only", metavar="NAME", action="append", default=[], help="use only this benchmark (repeatable)")
    add("--seed", metavar="N", type=int, default=0, help="seed of gepa's sampling (default 0)")
    add("--effort", choices=EFFORT_TIERS, default=DEFAULT_EFFORT, help="effort tier of every run (default standard)")
    add("--run-timeout", metavar="SECONDS", type=float, default=1800.0, help="give up on a run after this long")
    add("--json", action="store_true", help="print summary.json on stdout (the report goes to stderr)")
    return parser


class ProgressLine:
    """``foundry: 12/40 evaluations · best 0.50 · ETA 1m20s`` on stderr (redrawn in place on a terminal)."""

    def __init__(self, budget: int, stream: TextIO | None = sys.stderr) -> None:
        self.budget = budget
        self.stream = stream
        self.live = bool(stream is not None and stream.isatty())
        self.started = time.monotonic()
        self.first: int | None = None
        self.last = -1

    def text(self, done: int, best: float) -> str:
        eta = "-"
        if self.first is not None and done > self.first:
            rate = (time.monotonic() - self.started) / (done - self.first)
            seconds = int(rate * max(0, self.budget - done))
            eta = f"{seconds // 60}m{seconds % 60:02d}s"
        return f"foundry: {done}/{self.budget} evaluations · best {best:.2f} · ETA {eta}"

    def update(self, done: int, best: float) -> None:
        if self.first is None:
            self.first = done
        if self.stream is None or done == self.last:
            return
        self.last = done
        line = self.text(done, best)
        self.stream.write(("\r" + line.ljust(72)) if self.live else line + "\n")
        self.stream.flush()

    def end(self) -> None:
        if self.live and self.stream is not None:
            self.stream.write("\n")


def options_from(args: argparse.Namespace, env: Mapping[str, str]) -> FoundryOptions:
    guild_dir, deployment_file = resolve_paths(args.guild, args.deployment, env)
    return FoundryOptions(
        suite=Path(args.suite or ".").resolve(),
        guild_dir=guild_dir.resolve(),
        deployment_file=deployment_file.resolve(),
        env=env,
        budget=DEFAULT_BUDGET if args.budget is None else args.budget,
        repeats=args.repeats,
        workers=args.workers,
        scheduler=args.scheduler,
        reflection_api_base=args.reflection_api_base,
        reflection_model=args.reflection_model,
        sim_solutions=args.sim_solutions,
        out=Path(args.out).resolve() if args.out else None,
        resume=Path(args.resume).resolve() if args.resume else None,
        only=list(args.only),
        seed=args.seed,
        effort=args.effort,
        run_timeout=args.run_timeout,
        resume_budget=args.budget if args.resume else None,
    )


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the exit code (argparse usage errors exit 2 through ``SystemExit``)."""
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.suite is None and args.resume is None:
        parser.error("SUITE_DIR is required (or --resume DIR)")
    options = options_from(args, dict(os.environ))
    if options.resume is not None:
        try:
            options = resumed(options)  # the progress line counts against the resumed search's budget
        except FoundryError as exc:
            print_problems(PROG, "cannot start", exc.problems)
            return EXIT_USAGE
    progress = ProgressLine(options.budget)
    try:
        summary, out = trio.run(partial(run_foundry, options, on_progress=progress.update))
    except (FoundryError, SuiteError) as exc:
        print_problems(PROG, "cannot start", exc.problems)
        return EXIT_USAGE
    except ConfigError as exc:
        print_problems(PROG, "invalid configuration", exc.problems)
        return EXIT_USAGE
    except FoundryStopped as exc:
        progress.end()
        print(render_report(exc.summary), file=sys.stderr)
        print(f"{PROG}: {exc}", file=sys.stderr)
        return EXIT_STOPPED
    except KeyboardInterrupt:
        progress.end()
        print(f"{PROG}: interrupted; continue with --resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    progress.end()
    print_result(render_report(summary), summary.encode(), as_json=args.json)
    print(f"summary: {out / 'summary.json'}; best Guild: {out / 'best-guild'}", file=sys.stderr)
    return EXIT_OK
