"""Suite results: the per-benchmark record, ``summary.json``, the table, and the per-benchmark artifacts.

``summary.json`` (camelCase)::

    {suitePath, guildPath, startedAt, totals{pass, fail, error, total},
     results[{benchmark, status, runId, tokens{promptTokens, completionTokens}, wallTimeSeconds, reasons[]}]}
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import msgspec

from orchestrator.fsutil import atomic_write
from orchestrator.process import ProcessRun
from orchestrator.runlog import read_events
from orchestrator.vocabulary import LLM_CALL

__all__ = [
    "RESULTS_DIR",
    "BenchResult",
    "Status",
    "SuiteSummary",
    "new_out_dir",
    "render_table",
    "run_tokens",
    "write_artifacts",
]

Status = Literal["pass", "fail", "error"]
#: Where results go inside the suite folder unless ``--out`` says otherwise.
RESULTS_DIR = ".results"


@dataclass
class BenchResult:
    benchmark: str
    status: Status
    run_id: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_time_seconds: float = 0.0
    reasons: list[str] = field(default_factory=list)
    #: Not in ``summary.json``: the validation command's output and where the run worked.
    command: ProcessRun | None = None
    workspace: Path | None = None
    #: The Guild the run used when the service reports it (``--server``).
    guild_path: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "status": self.status,
            "runId": self.run_id,
            "tokens": {"promptTokens": self.prompt_tokens, "completionTokens": self.completion_tokens},
            "wallTimeSeconds": self.wall_time_seconds,
            "reasons": list(self.reasons),
        }


@dataclass
class SuiteSummary:
    suite_path: str
    guild_path: str
    started_at: str
    results: list[BenchResult] = field(default_factory=list)

    def totals(self) -> dict[str, int]:
        counts = {"pass": 0, "fail": 0, "error": 0}
        for result in self.results:
            counts[result.status] += 1
        return {**counts, "total": len(self.results)}

    @property
    def all_passed(self) -> bool:
        return all(r.status == "pass" for r in self.results)

    def to_json(self) -> dict[str, Any]:
        return {
            "suitePath": self.suite_path,
            "guildPath": self.guild_path,
            "startedAt": self.started_at,
            "totals": self.totals(),
            "results": [r.to_json() for r in self.results],
        }

    def encode(self) -> bytes:
        return msgspec.json.format(msgspec.json.encode(self.to_json()), indent=2) + b"\n"

    def write(self, path: Path) -> None:
        atomic_write(path, self.encode(), durable=False)


def run_tokens(run_dirs: list[Path]) -> tuple[int, int]:
    """Prompt and completion tokens the endpoint reported, summed over every ``llm_call`` of the runs."""
    prompt = completion = 0
    for run_dir in run_dirs:
        for event in read_events(run_dir / "log.jsonl"):
            if event.get("type") != LLM_CALL:
                continue
            usage = event.get("payload", {}).get("usage") or {}
            prompt += int(usage.get("promptTokens") or 0)
            completion += int(usage.get("completionTokens") or 0)
    return prompt, completion


def new_out_dir(suite: Path, out: Path | None) -> Path:
    """``out`` as given, else a fresh ``<suite>/.results/<UTC timestamp>/`` (suffixed when taken)."""
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        return out
    root = suite / RESULTS_DIR
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    for attempt in range(1, 100):
        candidate = root / (stamp if attempt == 1 else f"{stamp}-{attempt}")
        try:
            candidate.mkdir(parents=True)
        except FileExistsError:
            continue
        return candidate
    raise FileExistsError(f"{root}: no free results folder for {stamp}")


def write_artifacts(
    directory: Path, result: BenchResult, run_dirs: list[Path], *, kept_workspace: Path | None = None
) -> None:
    """``validation.txt`` (the command's output and the reasons) and a copy of each run folder."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = [f"status: {result.status}", *(f"reason: {r}" for r in result.reasons)]
    if kept_workspace is not None:
        lines.append(f"workspace: {kept_workspace}")
    if result.command is not None:
        cmd = result.command
        lines += [
            f"exit code: {cmd.exit_code}" + (" (timed out)" if cmd.timed_out else ""),
            f"seconds: {cmd.seconds:.2f}",
            "--- stdout",
            cmd.stdout.rstrip("\n"),
            "--- stderr",
            cmd.stderr.rstrip("\n"),
        ]
    (directory / "validation.txt").write_text("\n".join(lines) + "\n")
    for run_dir in run_dirs:
        if run_dir.is_dir():
            shutil.copytree(run_dir, directory / "runs" / run_dir.name, dirs_exist_ok=True)


def _reason_text(result: BenchResult) -> str:
    if not result.reasons:
        return ""
    more = f" (+{len(result.reasons) - 1} more)" if len(result.reasons) > 1 else ""
    return result.reasons[0] + more


def render_table(summary: SuiteSummary) -> str:
    """A fixed-width table of the results and a totals line."""
    headers = ("benchmark", "status", "run", "tokens in/out", "time", "reason")
    rows = [
        (
            r.benchmark,
            r.status,
            r.run_id or "-",
            f"{r.prompt_tokens}/{r.completion_tokens}",
            f"{r.wall_time_seconds:.1f} s",
            _reason_text(r),
        )
        for r in summary.results
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(cells[:-1])) + "  " + cells[-1]

    totals = summary.totals()
    out = [line(headers).rstrip(), *(line(row).rstrip() for row in rows)]
    out.append(f"{totals['pass']} pass, {totals['fail']} fail, {totals['error']} error of {totals['total']}")
    return "\n".join(out)
