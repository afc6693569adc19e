"""Advisory checks of what next_activity is told. Pure apart from listing files.

Every function returns warning texts; none raises for odd input (a manifest is evidence, not a command).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from orchestrator.workflow.corpus.model import Activity, TechniqueStep, Workflow, exits, step_technique_ref
from orchestrator.workflow.session.sessionfile import DeclaredArtifact, HistoryEvent

__all__ = [
    "activity_manifest_warnings",
    "artifact_warnings",
    "condition_warning",
    "fetch_warnings",
    "step_manifest_warnings",
]

_IGNORED_FILES = frozenset({"session.json", "README.md"})
_MAX_LISTED = 20
_PREFIXED = re.compile(r"^\d+-")


def _ids(manifest: Sequence[dict[str, Any]]) -> list[str]:
    return [str(entry.get("step_id", "")) for entry in manifest]


def step_manifest_warnings(activity: Activity, manifest: Sequence[dict[str, Any]]) -> list[str]:
    """Missing ungated top-level steps, unexpected ids, relative order of top-level ids, empty outputs."""
    warnings: list[str] = []
    top_level = [step.id for step in activity.steps]
    known = {flat.step.id for flat in activity.flattened_steps()}
    reported = _ids(manifest)
    expected = [step.id for step in activity.steps if step.when is None and step.condition is None and step.required]
    missing = [sid for sid in expected if sid not in reported]
    if missing:
        warnings.append(f"Missing steps in manifest: [{', '.join(missing)}]")
    unexpected = [sid for sid in dict.fromkeys(reported) if sid not in known]
    if unexpected:
        warnings.append(f"Unexpected steps in manifest: [{', '.join(unexpected)}]")
    got = [sid for sid in dict.fromkeys(reported) if sid in top_level]
    want = [sid for sid in top_level if sid in got]
    if got != want:
        warnings.append(
            f"Step order mismatch: the activity orders them [{', '.join(want)}] but the manifest has [{', '.join(got)}]"
        )
    for entry in manifest:
        if not str(entry.get("output", "")).strip():
            warnings.append(f"Step '{entry.get('step_id', '')}' has empty output")
    return warnings


def _visit(history: Sequence[HistoryEvent], activity_id: str) -> Sequence[HistoryEvent]:
    """Events since the last ``activity_entered`` of ``activity_id`` (all of them if never entered)."""
    for position in range(len(history) - 1, -1, -1):
        event = history[position]
        if event.type == "activity_entered" and event.activity == activity_id:
            return history[position + 1 :]
    return history


def fetch_warnings(
    activity: Activity,
    manifest: Sequence[dict[str, Any]],
    history: Sequence[HistoryEvent],
    *,
    agent_id: str | None = None,
) -> list[str]:
    """Warning (9): manifested technique steps with no technique fetch/bundle during this visit."""
    fetched_steps: set[str] = set()
    fetched_ids: set[str] = set()
    for event in _visit(history, activity.id):
        if event.type not in ("technique_fetched", "technique_bundled"):
            continue
        data = event.data or {}
        if agent_id is not None and data.get("agentId") != agent_id:
            continue
        if data.get("stepId"):
            fetched_steps.add(str(data["stepId"]))
        if data.get("techniqueId"):
            fetched_ids.add(str(data["techniqueId"]))
    warnings: list[str] = []
    for step_id in dict.fromkeys(_ids(manifest)):
        flat = activity.find_step(step_id)
        if flat is None or not isinstance(flat.step, TechniqueStep):
            continue
        binding = step_technique_ref(flat.step)
        if step_id in fetched_steps or binding in fetched_ids or f"{activity.id}::{binding}" in fetched_ids:
            continue
        warnings.append(
            f"Step '{step_id}' (technique '{binding}') was reported complete without an in-session technique "
            f"fetch since activity '{activity.id}' was entered; load it with get_technique {{step_id}}"
        )
    return warnings


def _matching_exit(activity: Activity, target: str) -> dict[str, Any] | None:
    for entry in exits(activity):
        if entry["to"] == target:
            return entry
    return None


def condition_warning(activity: Activity, target: str, claimed: str) -> str | None:
    """Warning (10): the claimed condition against the exit leading to ``target`` (none ⇒ nothing to check)."""
    entry = _matching_exit(activity, target)
    if entry is None:
        return None
    condition = entry.get("condition")
    default = bool(entry.get("isDefault"))
    if claimed in ("", "default"):
        if default or condition is None:
            return None
        said = "'default'" if claimed == "default" else "no condition"
        return f"Transition to '{target}' requires condition '{condition}' but {said} was claimed"
    if condition is None:
        return f"Transition to '{target}' is the default exit (no condition) but condition '{claimed}' was claimed"
    if condition != claimed:
        return (
            f"Condition mismatch for transition to '{target}': the workflow defines '{condition}' but "
            f"'{claimed}' was claimed"
        )
    return None


def activity_manifest_warnings(workflow: Workflow, manifest: Sequence[dict[str, Any]]) -> list[str]:
    """Warning (11): empty manifest, unknown activities, empty outcomes, conditions not among the exits."""
    if not manifest:
        return ["Empty activity_manifest provided; omit it when no activities have completed"]
    warnings: list[str] = []
    for entry in manifest:
        activity_id = str(entry.get("activity_id", ""))
        activity = workflow.get_activity(activity_id)
        if activity is None:
            warnings.append(f"Activity manifest references unknown activity '{activity_id}'")
        if not str(entry.get("outcome", "")).strip():
            warnings.append(f"Activity '{activity_id}' has empty outcome")
        claimed = entry.get("transition_condition")
        if activity is None or claimed in (None, ""):
            continue
        options = exits(activity)
        fits = any(
            e.get("condition") == claimed or (claimed == "default" and e.get("isDefault")) or e["to"] == claimed
            for e in options
        )
        if options and not fits:
            warnings.append(
                f"Activity '{activity_id}' claims transition condition '{claimed}', which is not among its exits"
            )
    return warnings


def _listed_files(folder: Path) -> list[str]:
    """Files under ``folder`` (posix, relative), skipping dot entries, ``session.json`` and ``README.md``."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith(".") or name in _IGNORED_FILES:
                continue
            out.append(Path(dirpath, name).relative_to(folder).as_posix())
            if len(out) >= 500:
                return out
    return out


def _inside(path: str, roots: Iterable[str]) -> bool:
    real = os.path.realpath(path)
    for root in roots:
        base = os.path.realpath(root)
        if real == base or real.startswith(base.rstrip("/") + "/"):
            return True
    return False


def _declared(file: str, known: set[str]) -> bool:
    """A file counts as declared by its relative path, its name, or its name without an ``NN-`` prefix."""
    name = Path(file).name
    bare = _PREFIXED.sub("", name)
    return file in known or name in known or bare in known


def artifact_warnings(
    folder: Path,
    host_folder: str | None,
    declared: Sequence[DeclaredArtifact],
    produced: Sequence[dict[str, Any]],
) -> list[str]:
    """Warning (13): newly declared artifacts outside the planning folder; files there nobody declared."""
    roots = [str(folder)] + ([host_folder] if host_folder else [])
    warnings: list[str] = []
    for item in produced:
        path = item.get("path")
        if path and os.path.isabs(path) and not _inside(path, roots):
            warnings.append(
                f"Artifact '{item.get('id')}' at {path} is outside the planning folder {host_folder or folder}"
            )
    known: set[str] = set()
    for artifact in declared:
        known.add(artifact.name)
        if artifact.path:
            if os.path.isabs(artifact.path):
                for root in roots:
                    base = os.path.realpath(root).rstrip("/") + "/"
                    real = os.path.realpath(artifact.path)
                    if real.startswith(base):
                        known.add(real[len(base) :])
            else:
                known.add(Path(artifact.path).as_posix().removeprefix("./"))
    undeclared = [f for f in _listed_files(folder) if not _declared(f, known)]
    if undeclared:
        shown = ", ".join(undeclared[:_MAX_LISTED]) + (" …" if len(undeclared) > _MAX_LISTED else "")
        warnings.append(f"Planning folder files not declared as artifacts: [{shown}]")
    return warnings
