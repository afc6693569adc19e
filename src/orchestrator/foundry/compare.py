"""``orchestrator bench --repeats K --guild A --guild B``: each Guild K times on the suite, side by side.

Every Guild runs the whole suite ``repeats`` times (``runner.run_suite``, one results folder per Guild and
repeat). Each Guild gets, per benchmark and overall, its passes, mean and 95 % Wilson interval
(``stats``); a later Guild is *better* than the first only when its overall interval lies above the
first's. ``comparison.json`` (written atomically) holds it all.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

import msgspec

from orchestrator.foundry.report import SuiteSummary, new_out_dir
from orchestrator.foundry.runner import SuiteError, SuiteOptions, discover, load_benchmarks, preflight, run_suite
from orchestrator.foundry.stats import Score, clears, score_of
from orchestrator.fsutil import atomic_write

__all__ = ["Comparison", "GuildScores", "compare", "render_comparison", "run_comparison"]


class GuildScores(msgspec.Struct, kw_only=True, rename="camel"):
    label: str
    guild_path: str
    score: Score
    benchmarks: dict[str, Score]
    better_than_first: bool


class Comparison(msgspec.Struct, kw_only=True, rename="camel"):
    suite_path: str
    repeats: int
    guilds: list[GuildScores]
    verdict: str

    def encode(self) -> bytes:
        return msgspec.json.format(msgspec.json.encode(self), indent=2) + b"\n"


def label_of(index: int) -> str:
    return chr(ord("A") + index) if index < 26 else f"G{index + 1}"


def compare(suite: str, repeats: int, runs: Mapping[str, tuple[str, Sequence[SuiteSummary]]]) -> Comparison:
    """Score each Guild's runs (``label -> (guild path, one summary per repeat)``) against the first."""
    guilds: list[GuildScores] = []
    for label, (path, summaries) in runs.items():
        per_bench: dict[str, list[float]] = {}
        for summary in summaries:
            for result in summary.results:
                per_bench.setdefault(result.benchmark, []).append(1.0 if result.status == "pass" else 0.0)
        everything = [value for values in per_bench.values() for value in values]
        guilds.append(
            GuildScores(
                label=label,
                guild_path=path,
                score=score_of(everything),
                benchmarks={name: score_of(values) for name, values in sorted(per_bench.items())},
                better_than_first=False,
            )
        )
    first = guilds[0]
    for other in guilds[1:]:
        other.better_than_first = clears(other.score, first.score)
    better = [g.label for g in guilds[1:] if g.better_than_first]
    if len(guilds) == 1:
        verdict = f"{first.label}: {first.score.mean:.2f} [{first.score.low:.2f}, {first.score.high:.2f}]"
    elif better:
        verdict = f"better than {first.label} beyond its 95 % interval: {', '.join(better)}"
    else:
        verdict = f"no Guild is better than {first.label} beyond the 95 % intervals (more repeats narrow them)"
    return Comparison(suite_path=suite, repeats=repeats, guilds=guilds, verdict=verdict)


def render_comparison(comparison: Comparison) -> str:
    def cell(score: Score) -> str:
        return f"{score.mean:.2f} [{score.low:.2f}, {score.high:.2f}] {score.passes}/{score.runs}"

    lines = []
    for guild in comparison.guilds:
        mark = "  better than A" if guild.better_than_first else ""
        lines.append(f"{guild.label} {guild.guild_path}: {cell(guild.score)}{mark}")
        lines += [f"    {name}: {cell(score)}" for name, score in guild.benchmarks.items()]
    lines.append(comparison.verdict)
    return "\n".join(lines)


async def run_comparison(
    options: SuiteOptions, guilds: list[Path], repeats: int, *, progress_stream: TextIO | None = sys.stderr
) -> tuple[Comparison, Path]:
    """Run every Guild ``repeats`` times; ``SuiteError`` / ``ConfigError`` before any run when one cannot."""
    if options.server is not None:
        raise SuiteError("--repeats and several --guild run in this process; they do not combine with --server")
    benchmarks = load_benchmarks(discover(options.suite, options.only), sim_solutions=options.sim_solutions)
    for guild in guilds:
        preflight(dataclasses.replace(options, guild_dir=guild), benchmarks)
    out = new_out_dir(options.suite, options.out)
    runs: dict[str, tuple[str, list[SuiteSummary]]] = {}
    for index, guild in enumerate(guilds):
        label = label_of(index)
        summaries: list[SuiteSummary] = []
        for repeat in range(repeats):
            if progress_stream is not None:
                progress_stream.write(f"== {label} ({guild}), repeat {repeat + 1}/{repeats}\n")
            target = out / label / f"repeat-{repeat + 1}"
            summary, _ = await run_suite(
                dataclasses.replace(options, guild_dir=guild, out=target), progress_stream=progress_stream
            )
            summaries.append(summary)
        runs[label] = (str(guild), summaries)
        atomic_write(out / "comparison.json", compare(str(options.suite), repeats, runs).encode())
    return compare(str(options.suite), repeats, runs), out
