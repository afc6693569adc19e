"""``orchestrator bench SUITE_DIR [options]``: run a benchmark suite and report.

Exit codes: 0 every benchmark passed (comparing, ``--repeats K`` or several ``--guild``: the comparison
was written); 1 at least one failed or errored; 2 invalid usage, suite files or configuration; 130
interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from functools import partial
from pathlib import Path

import trio

from orchestrator.config import resolve_paths
from orchestrator.errors import ConfigError
from orchestrator.foundry.compare import render_comparison, run_comparison
from orchestrator.foundry.remote import ServiceError
from orchestrator.foundry.report import render_table
from orchestrator.foundry.runner import SuiteError, SuiteOptions, run_suite
from orchestrator.vocabulary import DEFAULT_EFFORT, EFFORT_TIERS

__all__ = ["build_parser", "main", "positive_count", "print_problems", "print_result"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number of seconds")
    return value


def positive_count(text: str) -> int:
    """An argparse type: a whole number of at least 1, else an error naming the text."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def build_parser(prog: str = "orchestrator bench") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Run every benchmark of a suite (or one benchmark folder) and validate the results.",
    )
    parser.add_argument("suite", metavar="SUITE_DIR", help="a folder of benchmark folders, or one benchmark folder")
    parser.add_argument(
        "--guild",
        metavar="DIR",
        action="append",
        default=[],
        help="Guild directory (default ORCHESTRATOR_GUILD_DIR or ./guild); give it again to compare Guilds",
    )
    parser.add_argument(
        "--repeats",
        metavar="K",
        type=positive_count,
        default=1,
        help="run the suite K times per Guild and report 95 %% intervals (default 1)",
    )
    parser.add_argument(
        "--deployment",
        metavar="FILE",
        help="deployment file (default ORCHESTRATOR_DEPLOYMENT_FILE or ./deployment/deployment.json)",
    )
    parser.add_argument(
        "--only", metavar="NAME", action="append", default=[], help="run only this benchmark (repeatable)"
    )
    parser.add_argument(
        "--effort", choices=EFFORT_TIERS, default=DEFAULT_EFFORT, help="effort tier of every run (default standard)"
    )
    parser.add_argument(
        "--json", action="store_true", help="print the JSON report on stdout (the table goes to stderr)"
    )
    parser.add_argument(
        "--sim-solutions",
        action="store_true",
        help="serve each benchmark's sim-solution.json as the model (no real model needed)",
    )
    parser.add_argument("--server", metavar="URL", help="run the tasks on this running service instead of in-process")
    parser.add_argument(
        "--server-workspace", metavar="DIR", help="with --server: the directory that service works in (must be empty)"
    )
    parser.add_argument("--out", metavar="DIR", help="results folder (default SUITE_DIR/.results/<UTC timestamp>)")
    parser.add_argument(
        "--keep-workspaces", action="store_true", help="keep each throwaway workspace (paths in validation.txt)"
    )
    parser.add_argument(
        "--run-timeout",
        metavar="SECONDS",
        type=_positive,
        default=1800.0,
        help="give up on a run after this long (default 1800)",
    )
    return parser


def options_from(args: argparse.Namespace, env: Mapping[str, str]) -> SuiteOptions:
    guild_dir, deployment_file = resolve_paths(args.guild[0] if args.guild else None, args.deployment, env)
    return SuiteOptions(
        suite=Path(args.suite).resolve(),
        guild_dir=guild_dir.resolve(),
        deployment_file=deployment_file.resolve(),
        env=env,
        only=list(args.only),
        effort=args.effort,
        sim_solutions=args.sim_solutions,
        server=args.server,
        server_workspace=Path(args.server_workspace).resolve() if args.server_workspace else None,
        out=Path(args.out).resolve() if args.out else None,
        keep_workspaces=args.keep_workspaces,
        run_timeout=args.run_timeout,
    )


def print_problems(prog: str, title: str, problems: list[str]) -> None:
    """``prog: title:`` then one indented line per problem, on stderr."""
    print(f"{prog}: {title}:", file=sys.stderr)
    for problem in problems:
        print(f"  - {problem}", file=sys.stderr)


def print_result(report: str, encoded: bytes, *, as_json: bool) -> None:
    """The report on stdout; with ``--json`` the report goes to stderr and ``encoded`` (the JSON) to stdout."""
    if as_json:
        print(report, file=sys.stderr)
        sys.stdout.write(encoded.decode())
    else:
        print(report)


def _compare(options: SuiteOptions, guilds: list[Path], repeats: int, *, as_json: bool) -> int:
    try:
        comparison, out_dir = trio.run(partial(run_comparison, options, guilds, repeats, progress_stream=sys.stderr))
    except SuiteError as exc:
        print_problems("orchestrator bench", "invalid suite", exc.problems)
        return EXIT_USAGE
    except ConfigError as exc:
        print_problems("orchestrator bench", "invalid configuration", exc.problems)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    print_result(render_comparison(comparison), comparison.encode(), as_json=as_json)
    print(f"comparison: {out_dir / 'comparison.json'}", file=sys.stderr)
    return EXIT_OK


def main(argv: list[str] | None = None, *, prog: str = "orchestrator bench") -> int:
    """Run the command; returns the exit code (argparse usage errors exit 2 through ``SystemExit``)."""
    args = build_parser(prog).parse_args(sys.argv[1:] if argv is None else argv)
    env = dict(os.environ)
    options = options_from(args, env)
    if len(args.guild) > 1 or args.repeats > 1:
        guilds = [options.guild_dir, *(Path(g).resolve() for g in args.guild[1:])]
        return _compare(options, guilds, args.repeats, as_json=args.json)
    try:
        summary, out_dir = trio.run(partial(run_suite, options, progress_stream=sys.stderr))
    except SuiteError as exc:
        print_problems("orchestrator bench", "invalid suite", exc.problems)
        return EXIT_USAGE
    except ServiceError as exc:
        print_problems("orchestrator bench", "the service cannot be used", [str(exc)])
        return EXIT_USAGE
    except ConfigError as exc:
        print_problems("orchestrator bench", "invalid configuration", exc.problems)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    print_result(render_table(summary), summary.encode(), as_json=args.json)
    print(f"summary: {out_dir / 'summary.json'}", file=sys.stderr)
    return EXIT_OK if summary.all_passed else EXIT_FAILED
