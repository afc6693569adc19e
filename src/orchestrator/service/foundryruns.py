"""Runs of the workspace's Foundry searches in the run view: their run id, and its one resolution.

A search keeps each run at ``<search>/runs/<candidate>/<benchmark>/<repeat>/run-*/`` (``docs/foundry.md``).
The run view names one ``foundry~<search>~<candidate>~<benchmark>~<repeat>~<run>``: ``<search>`` is the
Foundry route's path of the search (``.results/<stamp>`` or ``<suite>/.results/<stamp>``, relative to the
workspace) with ``~`` for ``/``. Every character of the id is one a URL carries unescaped, so it is one
path segment of ``/api/runs/<id>/…`` and of ``#watch/<id>``; it never equals a run id of the service's own
(``run-YYYYMMDD-HHMMSS``), so caches keyed by run id hold both without a clash.

``FoundryRuns.locate`` is the one check. Every segment matches ``SEGMENT`` (never ``.`` or ``..``), the
repeat is a plain number, the run a run id; the search folder holds ``foundry.json`` and ``summary.json``
(a folder the Foundry route lists); the run folder, and each file the run view reads in it, resolves
inside the search folder (no symlink leads out); the folder holds a ``meta.json`` or a ``log.jsonl``.
Anything else locates nothing, which the routes answer with their ``404``.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from orchestrator.engine.runfolder import RUN_ID_PATTERN
from orchestrator.foundry.report import RESULTS_DIR

__all__ = ["PREFIX", "FoundryRun", "FoundryRuns", "foundry_run_id", "is_foundry_id", "parse_foundry_id", "run_ids"]

PREFIX = "foundry~"
SEPARATOR = "~"
SEGMENT = re.compile(r"[A-Za-z0-9_.-]{1,128}")
_REPEAT = re.compile(r"0|[1-9][0-9]{0,5}")
#: The files the run view reads in a run folder (each must resolve inside the search folder).
READ_FILES = ("meta.json", "log.jsonl", "plan.md")


class FoundryRun(msgspec.Struct, frozen=True, kw_only=True):
    """Which run of which search a Foundry run id names (``search`` relative to the workspace)."""

    search: str
    candidate: str
    benchmark: str
    repeat: int
    run: str


def is_foundry_id(run_id: str) -> bool:
    return run_id.startswith(PREFIX)


def _safe(segment: str) -> bool:
    return SEGMENT.fullmatch(segment) is not None and segment not in (".", "..")


def parse_foundry_id(run_id: str) -> FoundryRun | None:
    """The run a Foundry run id names, or ``None`` when it is not one (in its one spelling)."""
    if not is_foundry_id(run_id):
        return None
    parts = run_id[len(PREFIX) :].split(SEPARATOR)
    if len(parts) not in (6, 7) or not all(_safe(part) for part in parts):
        return None
    *search, candidate, benchmark, repeat, run = parts
    if search[-2] != RESULTS_DIR or not _REPEAT.fullmatch(repeat) or not RUN_ID_PATTERN.fullmatch(run):
        return None
    return FoundryRun(search="/".join(search), candidate=candidate, benchmark=benchmark, repeat=int(repeat), run=run)


def foundry_run_id(run: FoundryRun) -> str | None:
    """The run id of ``run``, or ``None`` when one of its names cannot be spelled in one."""
    parts = [*run.search.split("/"), run.candidate, run.benchmark, str(run.repeat), run.run]
    run_id = PREFIX + SEPARATOR.join(parts)
    return run_id if parse_foundry_id(run_id) == run else None


def run_ids(folder: Path, search: str, candidate: str, benchmark: str, repeat: int) -> list[str]:
    """The run ids of the run folders of one (candidate, benchmark, repeat) of the search at ``folder``
    (``search`` its path relative to the workspace), oldest first; names that cannot be spelled are left out."""
    if not all(_safe(name) for name in (candidate, benchmark)):
        return []
    try:
        names = sorted(p.name for p in (folder / "runs" / candidate / benchmark / str(repeat)).iterdir())
    except OSError:
        return []
    found = (
        foundry_run_id(FoundryRun(search=search, candidate=candidate, benchmark=benchmark, repeat=repeat, run=name))
        for name in names
    )
    return [run_id for run_id in found if run_id is not None]


def _inside(path: Path, base: Path) -> bool:
    return path.resolve().is_relative_to(base)


class FoundryRuns:
    """The runs of the Foundry searches under ``workspace``, by their run id."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace

    def locate(self, run_id: str) -> Path | None:
        """The run folder ``run_id`` names, when every check of the module's docstring holds."""
        run = parse_foundry_id(run_id)
        if run is None:
            return None
        search = self.workspace / run.search
        run_dir = search / "runs" / run.candidate / run.benchmark / str(run.repeat) / run.run
        try:
            if not ((search / "foundry.json").is_file() and (search / "summary.json").is_file()):
                return None
            base = search.resolve(strict=True)
            if not run_dir.is_dir() or not _inside(run_dir, base):
                return None
            if not all(_inside(run_dir / name, base) for name in READ_FILES):
                return None
            if not ((run_dir / "meta.json").is_file() or (run_dir / "log.jsonl").is_file()):
                return None
        except (OSError, RuntimeError):  # a loop of symlinks, a name the system refuses
            return None
        return run_dir
