"""Binding-seam provenance for step-bound technique deliveries. Pure.

For a technique fetched through a step (get_technique with ``step_id``, or an eagerly bundled step), each
of the technique's own inputs gets a ``source:`` saying where its value comes from, remapped outputs get a
``destination:`` naming the bag variable they land in, and the payload carries a ``provenance_note``.

The classification is static — the workflow's declarations and document order only, never the session's
bag — so the same corpus and step always give byte-identical annotations (which reference delivery
relies on). Priority for an input: the step binding (literal, ``{token}``, template, or a bare rename of
a bag name); then the input's own id as a bag name (the closest producer *before* the step, a declared
workflow variable, a variable the server seeds, a producer *later* in the workflow); then the input's
declared default; then an optional input; then, for inherited contract entries, ambient context; else
UNRESOLVED (own inputs only warn). Inherited entries are annotated only when the answer is noteworthy
(a binding override, or a producer later in the workflow).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

import msgspec

from orchestrator.workflow.corpus import (
    ActionStep,
    Activity,
    CheckpointStep,
    LoopStep,
    TechniqueBinding,
    TechniqueInput,
    TechniqueStep,
)

__all__ = [
    "PROVENANCE_NOTE",
    "SEEDED_VARIABLES",
    "Producer",
    "ProvenanceContext",
    "Source",
    "annotate",
    "input_source",
    "optional_inputs",
    "output_destination",
    "scan_producers",
    "unresolved_warning",
]

PROVENANCE_NOTE = (
    "Each input's source says where its value comes from in this workflow (UNRESOLVED: nothing supplies it, "
    "so ask or report rather than invent a value). Outputs are stored in the session bag under their own id, "
    "or under the destination shown; they get there through the output you report for this step in the "
    "step manifest."
)

SEEDED_VARIABLES: frozenset[str] = frozenset(
    {"user_request", "planning_folder_path", "host_repo_path", "target_repo", "component_path", "is_monorepo"}
)
"""Bag variables the server seeds when it knows them (the request and the checkout facts)."""

Via = Literal["output", "remap", "checkpoint", "reply", "action", "loop"]
SourceKind = Literal[
    "binding",
    "prior",
    "declared",
    "declared_later",
    "seeded",
    "later",
    "default",
    "optional",
    "inherited",
    "unresolved",
]
_NOTEWORTHY: frozenset[str] = frozenset({"binding", "later", "declared_later"})
_TOKEN = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_EXACT_TOKEN = re.compile(r"^\{([A-Za-z_][A-Za-z0-9_]*)\}$")


class Producer(msgspec.Struct, frozen=True, kw_only=True):
    """A place in the workflow that writes bag variable ``name``; ``ordinal`` is its document position."""

    name: str
    via: Via
    step_id: str
    activity_id: str
    ordinal: int
    output_id: str | None = None


class ProvenanceContext(msgspec.Struct, frozen=True, kw_only=True):
    """Everything classification needs about one workflow: declared variables, producers, step positions."""

    declared: frozenset[str]
    producers: tuple[Producer, ...]
    positions: dict[str, int]

    def position(self, activity_id: str, step_id: str) -> int | None:
        """Document position of a step (``None`` if the workflow has no such step)."""
        return self.positions.get(f"{activity_id}\0{step_id}")


class Source(msgspec.Struct, frozen=True):
    text: str
    kind: SourceKind
    unresolved: bool = False


def _step_producers(activity: Activity, step: Any, at: int, outputs_of: Callable[..., Iterable[str]]) -> list[Producer]:
    found: list[tuple[str, Via, str | None]] = []
    if isinstance(step, TechniqueStep):
        remaps = {} if isinstance(step.technique, str) else dict(step.technique.outputs or {})
        found.extend((bag_name, "remap", output_id) for output_id, bag_name in remaps.items())
        found.extend((o, "output", None) for o in outputs_of(activity, step) if o not in remaps)
    if isinstance(step, CheckpointStep):
        for option in step.options or ():
            if option.effect is None:
                continue
            found.extend((name, "checkpoint", None) for name in option.effect.set_variable or {})
            if option.effect.record_reply:
                found.append((option.effect.record_reply, "reply", None))
    if isinstance(step, TechniqueStep | ActionStep):
        found.extend((a.target, "action", None) for a in step.actions or () if a.action == "set" and a.target)
    if isinstance(step, LoopStep) and step.variable:
        found.append((step.variable, "loop", None))
    return [
        Producer(name=name, via=via, step_id=step.id, activity_id=activity.id, ordinal=at, output_id=output_id)
        for name, via, output_id in found
    ]


def scan_producers(
    activities: Iterable[Activity],
    declared: Iterable[str],
    outputs_of: Callable[[Activity, TechniqueStep], Iterable[str]],
) -> ProvenanceContext:
    """Walk a workflow's activities (assembly order) and their flattened steps, collecting producers and
    positions; ``declared`` are the workflow's variable names.

    ``outputs_of(activity, step)`` gives the bound technique's own declared output ids (uncomposed; empty
    when it does not resolve). Remapped outputs are recorded under their remap target.
    """
    producers: list[Producer] = []
    positions: dict[str, int] = {}
    ordinal = 0
    for activity in activities:
        for flat in activity.flattened_steps():
            positions.setdefault(f"{activity.id}\0{flat.step.id}", ordinal)
            producers.extend(_step_producers(activity, flat.step, ordinal, outputs_of))
            ordinal += 1
    return ProvenanceContext(declared=frozenset(declared), producers=tuple(producers), positions=positions)


def _producer_text(p: Producer, later: bool) -> str:
    where = f"step '{p.step_id}' in activity '{p.activity_id}'"
    if p.via == "output":
        text = f"output of {where}"
    elif p.via == "remap":
        text = f"output '{p.output_id}' of {where}, stored as '{p.name}'"
    elif p.via == "checkpoint":
        text = f"set by checkpoint {where}"
    elif p.via == "reply":
        text = f"the user's reply at checkpoint {where}"
    elif p.via == "action":
        text = f"set by an action of {where}"
    else:
        text = f"item variable of loop {where}"
    return f"{text} (comes later in the workflow; not available yet)" if later else text


def _bag_name(name: str, ctx: ProvenanceContext, position: int) -> Source | None:
    """Where bag variable ``name`` comes from, seen from ``position``; ``None`` when nothing supplies it."""
    root = name.split(".", 1)[0]
    sites = [p for p in ctx.producers if p.name == root]
    prior = [p for p in sites if p.ordinal < position]
    later = [p for p in sites if p.ordinal >= position]
    if prior:
        return Source(_producer_text(prior[-1], False), "prior")
    if root in ctx.declared:
        if later:
            return Source(
                f"workflow variable '{root}' (first written later: {_producer_text(later[0], False)})", "declared_later"
            )
        return Source(f"workflow variable '{root}'", "declared")
    if root in SEEDED_VARIABLES:
        return Source(f"session variable '{root}' (seeded by the server when the session opens)", "seeded")
    if later:
        return Source(_producer_text(later[0], True), "later")
    return None


def input_source(
    input_id: str,
    ctx: ProvenanceContext,
    position: int,
    bound: Mapping[str, Any] | None,
    *,
    has_default: bool,
    optional: bool,
    inherited: bool,
) -> Source:
    """Classify one input (see the module docstring for the priority)."""
    if bound is not None and input_id in bound:
        return _binding_source(bound[input_id], ctx, position)
    own = _bag_name(input_id, ctx, position)
    if own is not None:
        return own
    if has_default:
        return Source("the input's declared default (nothing in this workflow supplies it)", "default")
    if optional:
        return Source(
            "optional input (nothing in this workflow supplies it; use your working context if it has a value)",
            "optional",
        )
    if inherited:
        return Source("ambient session context (inherited contract; nothing in this workflow supplies it)", "inherited")
    return Source(
        f"UNRESOLVED: no step binding, workflow variable or earlier step output supplies '{input_id}'",
        "unresolved",
        True,
    )


def _binding_source(value: Any, ctx: ProvenanceContext, position: int) -> Source:
    if not isinstance(value, str):
        return Source(f"step binding: literal {json.dumps(value)}", "binding")
    exact = _EXACT_TOKEN.match(value)
    if exact:
        inner = _bag_name(exact.group(1), ctx, position)
        if inner is None:
            return Source(
                f"step binding '{value}': UNRESOLVED, nothing in this workflow supplies '{exact.group(1)}'",
                "binding",
                True,
            )
        return Source(f"step binding: {inner.text}", "binding")
    if "{" in value:
        missing = [m.group(1) for m in _TOKEN.finditer(value) if _bag_name(m.group(1), ctx, position) is None]
        if missing:
            names = ", ".join(f"'{{{name}}}'" for name in missing)
            return Source(
                f"step binding: template {json.dumps(value)}, UNRESOLVED: nothing supplies {names}", "binding", True
            )
        return Source(f"step binding: template {json.dumps(value)}", "binding")
    renamed = _bag_name(value, ctx, position) if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", value) else None
    if renamed is not None:
        return Source(f"step binding: {renamed.text}", "binding")
    return Source(f"step binding: literal {json.dumps(value)}", "binding")


def output_destination(output_id: str, binding: TechniqueBinding | None) -> str | None:
    """The bag variable a remapped output lands in, else ``None`` (it lands under its own id)."""
    if binding is None or not binding.outputs:
        return None
    return binding.outputs.get(output_id)


def unresolved_warning(input_id: str, technique_id: str, step_id: str) -> str:
    """Warning (16)."""
    return f"Input '{input_id}' of technique '{technique_id}' is UNRESOLVED at step '{step_id}'"


def _annotate_inputs(
    items: Any,
    *,
    ctx: ProvenanceContext,
    position: int,
    binding: TechniqueBinding | None,
    optional_ids: frozenset[str],
    inherited: bool,
    unresolved: list[str],
) -> Any:
    if not isinstance(items, list):
        return items
    out = []
    for item in items:
        if not isinstance(item, Mapping) or "id" not in item:
            out.append(item)
            continue
        source = input_source(
            item["id"],
            ctx,
            position,
            binding.inputs if binding is not None else None,
            has_default=item.get("default") is not None,
            optional=item["id"] in optional_ids,
            inherited=inherited,
        )
        if inherited and source.kind not in _NOTEWORTHY:
            out.append(item)
            continue
        out.append({**item, "source": source.text})
        if source.unresolved and not inherited:
            unresolved.append(item["id"])
    return out


def _annotate_outputs(items: Any, binding: TechniqueBinding | None) -> Any:
    if not isinstance(items, list):
        return items
    out = []
    for item in items:
        destination = output_destination(item["id"], binding) if isinstance(item, Mapping) and "id" in item else None
        out.append({**item, "destination": destination} if destination is not None else item)
    return out


def optional_inputs(inputs: Iterable[TechniqueInput]) -> frozenset[str]:
    """Ids of inputs marked optional."""
    return frozenset(i.id for i in inputs if i.optional)


def annotate(
    payload: Mapping[str, Any],
    *,
    ctx: ProvenanceContext,
    position: int,
    binding: TechniqueBinding | None,
    optional_ids: frozenset[str],
    technique_id: str,
    step_id: str,
) -> tuple[dict[str, Any], list[str]]:
    """The payload with ``source:``/``destination:`` annotations and ``provenance_note`` (placed right after
    ``capability``), plus the UNRESOLVED warnings for its own inputs."""
    unresolved: list[str] = []
    common = {
        "ctx": ctx,
        "position": position,
        "binding": binding,
        "optional_ids": optional_ids,
        "unresolved": unresolved,
    }
    out: dict[str, Any] = {}
    for key, value in payload.items():
        if key == "inputs":
            value = _annotate_inputs(value, inherited=False, **common)
        elif key == "outputs":
            value = _annotate_outputs(value, binding)
        elif key == "contracts" and isinstance(value, Mapping):
            blocks: dict[str, Any] = {}
            for scope, block in value.items():
                annotated = dict(block)
                if "inputs" in annotated:
                    annotated["inputs"] = _annotate_inputs(annotated["inputs"], inherited=True, **common)
                if "outputs" in annotated:
                    annotated["outputs"] = _annotate_outputs(annotated["outputs"], binding)
                blocks[scope] = annotated
            value = blocks
        out[key] = value
        if key == "capability":
            out["provenance_note"] = PROVENANCE_NOTE
    if "provenance_note" not in out:
        out["provenance_note"] = PROVENANCE_NOTE
    warnings = [unresolved_warning(i, technique_id, step_id) for i in unresolved]
    return out, warnings
