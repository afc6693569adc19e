"""The Foundry's results folder: ``summary.json``, ``best-guild/``, ``candidates/<id>/``, and the table.

Scores come from the evaluation cache, never from gepa's running averages: per candidate and per
benchmark the passes over the repeats with a 95 % Wilson interval (``stats``). The best candidate is
the seed unless a fully evaluated candidate's interval clears the seed's; among those, the highest
mean wins. Every file is written atomically (``fsutil.atomic_write``), so ``summary.json`` is never
torn, whenever the driver is killed.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import msgspec

from orchestrator.foundry.candidate import Candidate, candidate_id, changed_components
from orchestrator.foundry.evalcache import EvalCache
from orchestrator.foundry.job import RunOutcome
from orchestrator.foundry.stats import Score, clears, score_of
from orchestrator.fsutil import atomic_write

__all__ = [
    "CandidateReport",
    "Lineage",
    "Summary",
    "build_summary",
    "render_report",
    "write_best_guild",
    "write_candidate",
    "write_summary",
]

Status = Literal["running", "finished", "interrupted", "stopped"]


@dataclass
class Lineage:
    """The candidates gepa produced, in order, and each one's parent index (``None`` for the seed)."""

    candidates: list[Candidate]
    parents: list[int | None]


class CandidateReport(msgspec.Struct, kw_only=True, rename="camel"):
    id: str
    parent: str | None
    score: Score
    benchmarks: dict[str, Score]
    changed: list[str]
    complete: bool
    better_than_seed: bool
    problems: list[str] = []


class Summary(msgspec.Struct, kw_only=True, rename="camel"):
    suite_path: str
    guild_path: str
    status: Status
    budget: int
    repeats: int
    seed: int
    #: benchmark runs spent: distinct (candidate, benchmark, repeat) finished in the durable cache
    evaluations: int
    #: the same count (a finished run is never made twice); kept for readers of older summaries
    runs: int
    #: gepa's metric calls, what ``--budget`` caps (a cached run reused counts again)
    metric_calls: int = 0
    seed_score: Score
    best_score: Score
    best_candidate: str
    improved: bool
    verdict: str
    candidates: list[CandidateReport]
    message: str | None = None

    def encode(self) -> bytes:
        return msgspec.json.format(msgspec.json.encode(self), indent=2) + b"\n"


def _report(
    candidate: Candidate,
    parent: str | None,
    seed: Candidate,
    benchmarks: Sequence[str],
    repeats: int,
    cache: EvalCache,
    problems: list[str],
) -> CandidateReport:
    cid = candidate_id(candidate)
    per_bench: dict[str, Score] = {}
    everything: list[float] = []
    for bench in benchmarks:
        found: list[RunOutcome] = [o for r in range(repeats) if (o := cache.get(cid, bench, r)) is not None]
        per_bench[bench] = score_of([o.score for o in found])
        everything += [o.score for o in found]
    score = score_of(everything)
    return CandidateReport(
        id=cid,
        parent=parent,
        score=score,
        benchmarks=per_bench,
        changed=changed_components(seed, candidate),
        complete=not problems and score.runs == len(benchmarks) * repeats,
        better_than_seed=False,
        problems=problems,
    )


def build_summary(
    *,
    lineage: Lineage,
    benchmarks: Sequence[str],
    repeats: int,
    cache: EvalCache,
    problems: Mapping[str, list[str]],
    status: Status,
    head: Mapping[str, str | int],
    metric_calls: int,
    message: str | None = None,
) -> Summary:
    """The summary of everything gepa produced so far, scored from the cache.

    ``evaluations`` is what the search really spent, read from the durable cache: a resumed search
    reports exactly what an uninterrupted one does (every finished run is cached once, never run again).
    """
    seed = lineage.candidates[0]
    ids = [candidate_id(c) for c in lineage.candidates]
    reports: list[CandidateReport] = []
    seen: set[str] = set()
    for index, candidate in enumerate(lineage.candidates):
        if ids[index] in seen:
            continue
        seen.add(ids[index])
        parent_index = lineage.parents[index] if index < len(lineage.parents) else None
        parent = ids[parent_index] if parent_index is not None else None
        reports.append(_report(candidate, parent, seed, benchmarks, repeats, cache, list(problems.get(ids[index], []))))
    seed_report = reports[0]
    best = seed_report
    for report in reports[1:]:
        report.better_than_seed = report.complete and clears(report.score, seed_report.score)
        if report.better_than_seed and (report.score.mean, report.score.low) > (best.score.mean, best.score.low):
            best = report
    if best is seed_report:
        verdict = (
            f"no candidate is better than the seed: none of {len(reports) - 1} candidate(s) has a 95 % interval "
            f"above the seed's [{seed_report.score.low:.2f}, {seed_report.score.high:.2f}]; best-guild/ is the seed"
        )
    else:
        verdict = (
            f"candidate {best.id} is better than the seed: {best.score.mean:.2f} "
            f"[{best.score.low:.2f}, {best.score.high:.2f}] against {seed_report.score.mean:.2f} "
            f"[{seed_report.score.low:.2f}, {seed_report.score.high:.2f}]"
        )
    return Summary(
        suite_path=str(head["suitePath"]),
        guild_path=str(head["guildPath"]),
        status=status,
        budget=int(head["budget"]),
        repeats=repeats,
        seed=int(head["seed"]),
        evaluations=cache.count(),
        runs=cache.count(),
        metric_calls=metric_calls,
        seed_score=seed_report.score,
        best_score=best.score,
        best_candidate=best.id,
        improved=best is not seed_report,
        verdict=verdict,
        candidates=reports,
        message=message,
    )


def write_summary(out: Path, summary: Summary) -> None:
    atomic_write(out / "summary.json", summary.encode())


def write_candidate(out: Path, candidate: Candidate, seed: Candidate, problems: list[str]) -> None:
    """``candidates/<id>/candidate.json``: the component texts, what changed, the loader's problems."""
    directory = out / "candidates" / candidate_id(candidate)
    directory.mkdir(parents=True, exist_ok=True)
    document = {"components": candidate, "changed": changed_components(seed, candidate), "problems": problems}
    atomic_write(directory / "candidate.json", msgspec.json.format(msgspec.json.encode(document), indent=2))


def write_best_guild(out: Path, guild_dir: Path) -> None:
    """Replace ``best-guild/`` with a copy of ``guild_dir`` (copied beside it, then swapped in)."""
    target = out / "best-guild"
    staging = out / ".best-guild.tmp"
    old = out / ".best-guild.old"
    for leftover in (staging, old):
        if leftover.exists():
            shutil.rmtree(leftover)
    shutil.copytree(guild_dir, staging)
    if target.exists():
        target.rename(old)
    staging.rename(target)
    if old.exists():
        shutil.rmtree(old)


def _interval(score: Score) -> str:
    return f"{score.mean:.2f} [{score.low:.2f}, {score.high:.2f}] ({score.passes}/{score.runs})"


def render_report(summary: Summary) -> str:
    """The human report: one line per candidate, then the verdict."""
    lines = [f"seed {_interval(summary.seed_score)}"]
    for report in summary.candidates:
        mark = " better" if report.better_than_seed else ""
        partial = "" if report.complete or report.problems else " (partly evaluated)"
        invalid = f" — not a valid Guild: {report.problems[0]}" if report.problems else ""
        changed = ", ".join(report.changed) or "-"
        parent = report.parent or "-"
        lines.append(
            f"  {report.id}  parent {parent}  {_interval(report.score)}{mark}{partial}  changed: {changed}{invalid}"
        )
    lines.append(summary.verdict)
    lines.append(
        f"{summary.evaluations} evaluations, {summary.metric_calls}/{summary.budget} metric calls ({summary.status})"
    )
    return "\n".join(lines)
