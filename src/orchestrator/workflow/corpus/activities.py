"""One activity definition built from its raw YAML: step ids derived, checkpoint fragments in place.

Pure (the raw mapping comes in, an ``Activity`` goes out); bad content is a ``LoadFailure`` that the
loader records as an ``activity_load_errors`` entry. A technique step without an ``id`` takes its
technique's name (after any ``workflow::``); any other step without one, or two steps sharing one in a
scope, fails. A checkpoint step either declares ``message`` and ``options`` itself or names a fragment
with ``ref`` (then no body fields of its own, and no ``condition``/``blocking`` the fragment also has).
"""

from __future__ import annotations

from typing import Any

import msgspec

from orchestrator.workflow.corpus.fragments import ManifestIndex
from orchestrator.workflow.corpus.model import Activity
from orchestrator.workflow.corpus.schema import ActivityDef
from orchestrator.workflow.corpus.validity import LoadFailure, check_activity_values

__all__ = ["build_activity", "materialise", "process_steps"]


def materialise(step: dict[str, Any], source: str, manifests: ManifestIndex) -> dict[str, Any]:
    """A checkpoint step with its fragment ``ref`` replaced by the fragment's body (in the ref's place)."""
    step_id = step.get("id")
    if "ref" not in step:
        if step.get("message") is None or step.get("options") is None:
            raise LoadFailure(f"checkpoint '{step_id}' declares neither a fragment ref nor message and options")
        return step
    local = [key for key in ("message", "options", "defaultOption", "autoAdvanceMs") if key in step]
    if local:
        raise LoadFailure(f"checkpoint '{step_id}' declares ref '{step['ref']}' and body field(s) {', '.join(local)}")
    body = manifests.checkpoint_fragment(str(step["ref"]), source)
    for key in ("condition", "blocking"):
        if key in body and key in step:
            raise LoadFailure(f"checkpoint '{step_id}' declares {key} but fragment '{step['ref']}' already has one")
    out: dict[str, Any] = {}
    for key, value in step.items():
        if key == "ref":
            out.update(body)
        else:
            out[key] = value
    return out


def process_steps(steps: list[Any], scope: str, source: str, manifests: ManifestIndex) -> list[dict[str, Any]]:
    """Raw steps with ids derived (technique steps only), duplicates refused, checkpoint fragments
    materialised, loops processed in turn."""
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for position, original in enumerate(steps, start=1):
        step = dict(original)
        kind = step.get("kind")
        step_id = step.get("id")
        if not step_id:
            technique = step.get("technique")
            name = technique.get("name") if isinstance(technique, dict) else technique
            derived = name.split("::")[-1] if kind == "technique" and isinstance(name, str) else ""
            if not derived:
                raise LoadFailure(f"{scope}: step {position} ({kind}) has no id; only technique steps derive one")
            step_id = derived
            step = {
                **{k: v for k, v in step.items() if k == "kind"},
                "id": derived,
                **{k: v for k, v in step.items() if k not in ("kind", "id")},
            }
        if step_id in seen:
            raise LoadFailure(f"{scope}: duplicate step id '{step_id}'")
        seen.add(step_id)
        if kind == "checkpoint":
            step = materialise(step, source, manifests)
        elif kind == "loop":
            step["steps"] = process_steps(list(step.get("steps") or ()), f"loop '{step_id}' steps", source, manifests)
        out.append(step)
    return out


def build_activity(
    raw: Any, manifests: ManifestIndex, *, label: str, expected_id: str | None, prefix: str, source: str
) -> Activity:
    """An ``Activity`` from its raw YAML mapping: schema, filename id, steps processed, values checked."""
    if not isinstance(raw, dict):
        raise LoadFailure("activity is not a YAML mapping")
    definition = msgspec.convert(raw, ActivityDef)
    if expected_id is not None and definition.id != expected_id:
        raise LoadFailure(f"activity id '{definition.id}' does not match the filename id '{expected_id}'")
    processed = dict(raw)
    if "steps" in processed:
        processed["steps"] = process_steps(list(raw["steps"]), "top-level steps", source, manifests)
    final = msgspec.convert(processed, ActivityDef)
    check_activity_values(final.steps)
    return Activity(
        id=final.id,
        version=final.version,
        name=final.name,
        description=final.description,
        required=final.required,
        rules=final.rules,
        outcome=final.outcome,
        techniques=final.techniques,
        bundle_max_chars=final.bundle_techniques.max_chars if final.bundle_techniques else None,
        steps=final.steps,
        decisions=final.decisions,
        transitions=final.transitions,
        triggers=final.triggers,
        artifact_prefix=prefix,
        source_workflow=source,
        source_file=label,
        raw=processed,
    )
