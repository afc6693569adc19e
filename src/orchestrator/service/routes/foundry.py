"""``GET /api/foundry``: the Foundry searches found in the workspace, newest first (the Foundry screen).

A search is a results folder holding ``foundry.json`` and ``summary.json`` (``docs/foundry.md``), at
``<workspace>/.results/<stamp>/`` or ``<workspace>/<suite>/.results/<stamp>/`` (the default places of
``orchestrator foundry SUITE_DIR``). The answer is ``{searches: [{path, …summary.json}]}``, ``path``
relative to the workspace, at most ``MAX_SEARCHES``; a folder whose summary does not decode is left out.
Each candidate also gets ``outcomes``: per benchmark, how many of its finished runs passed, failed and
ended in error (``{"bench_0": {"pass": 3, "fail": 1, "error": 0}}``), read from the evaluation cache
(``cache/<candidate>/<benchmark>/<repeat>.json``; only the ``status`` field is decoded). A candidate id
or benchmark name that is not a plain folder name is not looked up, so no read leaves the results folder.
Each candidate also gets ``runs``: per benchmark, every finished run the run view opens,
``{repeat, status, runId}`` (the ``foundry~…`` id of ``service/foundryruns.py``; a run folder whose names
cannot be spelled in one is left out).
A candidate with a parent also gets ``diffs``: ``[{component, diff}]``, a unified diff (``difflib``) of
each component whose text differs from its parent's, from ``candidates/<id>/candidate.json``; a diff
longer than ``MAX_DIFF_CHARS`` is cut there and says so.
The folders are read in a worker thread; the answer is conditional JSON (ETag).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import msgspec
import trio
from quart import Blueprint, Response

from orchestrator.foundry.results import Summary
from orchestrator.service.core import Service
from orchestrator.service.foundryruns import run_ids
from orchestrator.service.routes.common import conditional_json

__all__ = [
    "MAX_DIFF_CHARS",
    "MAX_SEARCHES",
    "candidate_runs",
    "component_diffs",
    "find_searches",
    "foundry_blueprint",
    "outcome_counts",
]

MAX_SEARCHES = 20
MAX_DIFF_CHARS = 20_000


class _Status(msgspec.Struct):
    status: str


def _plain(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name and "\0" not in name


def _status(folder: Path, candidate: str, bench: str, repeat: int) -> str | None:
    """The cached ``status`` of one finished run (``None``: not finished, or names that are not plain)."""
    if not (_plain(candidate) and _plain(bench)):
        return None
    try:
        raw = (folder / "cache" / candidate / bench / f"{repeat}.json").read_bytes()
        return msgspec.json.decode(raw, type=_Status).status
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def outcome_counts(folder: Path, candidate: str, benchmarks: list[str], repeats: int) -> dict[str, dict[str, int]]:
    """Per benchmark, the pass / fail / error counts of ``candidate``'s cached runs in ``folder``."""
    counts: dict[str, dict[str, int]] = {}
    for bench in benchmarks:
        tally = {"pass": 0, "fail": 0, "error": 0}
        counts[bench] = tally
        for repeat in range(repeats):
            status = _status(folder, candidate, bench, repeat)
            if status in tally:
                tally[status] += 1
    return counts


def candidate_runs(
    folder: Path, search: str, candidate: str, benchmarks: list[str], repeats: int
) -> dict[str, list[dict[str, Any]]]:
    """Per benchmark, each finished run of ``candidate`` the run view can open: ``{repeat, status, runId}``
    (a repeat whose task made several run folders lists each), ``search`` the folder's workspace path."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for bench in benchmarks:
        runs[bench] = [
            {"repeat": repeat, "status": status, "runId": run_id}
            for repeat in range(repeats)
            if (status := _status(folder, candidate, bench, repeat)) is not None
            for run_id in run_ids(folder, search, candidate, bench, repeat)
        ]
    return runs


class _Components(msgspec.Struct):
    components: dict[str, str]


def _components(folder: Path, candidate: str) -> dict[str, str] | None:
    if not _plain(candidate):
        return None
    try:
        raw = (folder / "candidates" / candidate / "candidate.json").read_bytes()
        return msgspec.json.decode(raw, type=_Components).components
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def component_diffs(parent: dict[str, str], child: dict[str, str]) -> list[dict[str, str]]:
    """A unified diff per component whose text differs between ``parent`` and ``child``, sorted by name."""
    diffs: list[dict[str, str]] = []
    for name in sorted(set(parent) | set(child)):
        before, after = parent.get(name, ""), child.get(name, "")
        if before == after:
            continue
        lines = difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), f"parent/{name}", f"child/{name}"
        )
        text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
        if len(text) > MAX_DIFF_CHARS:
            text = text[:MAX_DIFF_CHARS] + f"\n… (cut at {MAX_DIFF_CHARS} characters)\n"
        diffs.append({"component": name, "diff": text})
    return diffs


def _diffs(folder: Path, candidate: str, parent: str | None) -> list[dict[str, str]]:
    if parent is None:
        return []
    child_texts, parent_texts = _components(folder, candidate), _components(folder, parent)
    if child_texts is None or parent_texts is None:
        return []
    return component_diffs(parent_texts, child_texts)


def find_searches(workspace: Path) -> list[dict[str, Any]]:
    """Every readable search under ``workspace``, newest ``summary.json`` first."""
    folders = [
        p.parent for p in (*workspace.glob(".results/*/foundry.json"), *workspace.glob("*/.results/*/foundry.json"))
    ]
    found: list[tuple[float, dict[str, Any]]] = []
    for folder in folders:
        path = folder / "summary.json"
        try:
            summary = msgspec.json.decode(path.read_bytes(), type=Summary)
            stamp = path.stat().st_mtime
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            continue
        view = msgspec.to_builtins(summary)
        path = folder.relative_to(workspace).as_posix()
        for candidate in view["candidates"]:
            benches = sorted(candidate["benchmarks"])
            candidate["outcomes"] = outcome_counts(folder, candidate["id"], benches, summary.repeats)
            candidate["runs"] = candidate_runs(folder, path, candidate["id"], benches, summary.repeats)
            candidate["diffs"] = _diffs(folder, candidate["id"], candidate["parent"])
        found.append((stamp, {"path": path, **view}))
    found.sort(key=lambda item: item[0], reverse=True)
    return [view for _, view in found[:MAX_SEARCHES]]


def foundry_blueprint(service: Service) -> Blueprint:
    blueprint = Blueprint("foundry", __name__)

    @blueprint.get("/api/foundry")
    async def get_foundry() -> Response:
        searches = await trio.to_thread.run_sync(find_searches, service.workspace)
        return conditional_json({"searches": searches})

    return blueprint
