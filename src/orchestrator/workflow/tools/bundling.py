"""Eager step-technique bundling for get_activity: budget, gates, decisions, notes. Pure.

A technique step is a bundling candidate when its gate — its own ``when``/``condition`` and those of every
enclosing loop, and-combined — answers *true* against the bag at activity open. A gate has no answer
yet (it stays lazy and is counted in ``_meta.lazy_gates``) when it reads a variable this activity
itself writes (``pending``), compares a variable absent from the bag (``unbound``) or does not parse
(``unparsed``). Candidates are inlined in document order while the running tally (which starts at the
worker bundle's size) stays within ``context_tokens × headroom × chars_per_token``; the first that
would overflow stops bundling. A technique longer than the activity's ``bundleTechniques.maxChars`` is
skipped (``maxChars: 0`` opts the activity out), and one the context already holds costs nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

import msgspec

from orchestrator.workflow.corpus import (
    MISSING,
    ActionStep,
    Activity,
    AndCondition,
    CheckpointStep,
    Condition,
    FlatStep,
    LoopStep,
    NotCondition,
    OrCondition,
    SimpleCondition,
    Step,
    TechniqueStep,
    WhenSyntaxError,
    evaluate_condition,
    evaluate_when,
    lookup_path,
    parse_when,
    when_variables,
)

__all__ = [
    "BUNDLE_NOTE",
    "RESOURCES_NOTE",
    "STEP_TECHNIQUES_NOTE",
    "BundleDecision",
    "Gate",
    "GateReason",
    "bundle_budget",
    "bundle_decision",
    "combine_gates",
    "condition_paths",
    "enforcement_notes",
    "gate_of",
    "step_gate",
    "step_marker",
    "written_variables",
]

GateReason = Literal["pending", "unbound", "unparsed"]
BundleDecision = Literal["skip", "held", "stop", "add"]

BUNDLE_NOTE = (
    "Entries of the form {delivery: unchanged, content_hash} stand for content this agent context already "
    "received, byte for byte; a 'see' field points at the full copy earlier in this same response. If your "
    "context no longer holds an earlier copy, call get_activity again with bundle: full (or get_technique "
    "with full: true) instead of working from memory."
)
STEP_TECHNIQUES_NOTE = (
    "step_techniques holds, per step id, the technique you would get from get_technique with that step_id; "
    "each entry opens with a '▼ STEP' marker line. Work through the steps strictly in order, and as you reach "
    "an inlined step say '▶ step <step_id>' before doing it. A technique step missing from this map (its gate "
    "is false or not yet answerable, or it did not fit the budget) still needs get_technique with its step_id "
    "when you reach it."
)
RESOURCES_NOTE = (
    "Resources linked from the inlined techniques are not included. resource_refs lists their ids; fetch one "
    "with get_resource when a step needs it (an id with #section returns just that section)."
)
_ACTIONS_NOTE = (
    "The actions[] lists are carried out by you, not by the server: a 'set' action changes no session "
    "variable on its own; report the value through the step manifest or variables_changed."
)
_AUTO_ADVANCE_NOTE = (
    "A checkpoint with autoAdvanceMs is timed by the server from its yield; its default option may be taken "
    "only once that time has passed. The 'blocking' flag is advisory."
)


class Gate(msgspec.Struct, frozen=True):
    """A gate's answer at activity open: ``True``/``False``, or ``None`` with the reason it has none."""

    answer: bool | None
    reason: GateReason | None = None


OPEN = Gate(True)


def bundle_budget(context_tokens: int, headroom_fraction: float, chars_per_token: float) -> int:
    """Eager-bundling budget in characters: ``floor(context_tokens × headroom × chars_per_token)``."""
    return max(0, math.floor(context_tokens * headroom_fraction * chars_per_token))


def _root(path: str) -> str:
    return path.split(".", 1)[0]


def condition_paths(condition: Condition) -> tuple[set[str], set[str]]:
    """(paths a condition needs a value of, paths it only tests for presence — ``exists``/``notExists``)."""
    values: set[str] = set()
    presence: set[str] = set()

    def walk(node: Condition) -> None:
        if isinstance(node, SimpleCondition):
            (presence if node.operator in ("exists", "notExists") else values).add(node.variable)
        elif isinstance(node, AndCondition | OrCondition):
            for member in node.conditions:
                walk(member)
        elif isinstance(node, NotCondition):
            walk(node.condition)

    walk(condition)
    return values, presence


def gate_of(when: str | None, condition: Condition | None, bag: Mapping[str, Any], written: set[str]) -> Gate:
    """Answer one step's (or loop's) own gate; see the module docstring for the unanswered cases."""
    if when is None and condition is None:
        return OPEN
    values: set[str] = set()
    presence: set[str] = set()
    expr = None
    if when is not None:
        try:
            expr = parse_when(when)
        except WhenSyntaxError:
            return Gate(None, "unparsed")
        values |= when_variables(expr)
    if condition is not None:
        more_values, more_presence = condition_paths(condition)
        values |= more_values
        presence |= more_presence
    if any(_root(path) in written for path in values | presence):
        return Gate(None, "pending")
    if any(lookup_path(bag, path) is MISSING for path in values):
        return Gate(None, "unbound")
    says = True
    if expr is not None:
        says = evaluate_when(expr, bag)
    if says and condition is not None:
        says = evaluate_condition(condition, bag)
    return Gate(says)


def combine_gates(outer: Gate, own: Gate) -> Gate:
    """And-combine: any false ⇒ false; else the first unanswered (outermost first); else true."""
    if outer.answer is False or own.answer is False:
        return Gate(False)
    if outer.answer is None:
        return outer
    return own


def step_gate(flat: FlatStep, bag: Mapping[str, Any], written: set[str]) -> Gate:
    """The combined gate of a flattened step: every enclosing loop's, outermost first, then its own."""
    gate = OPEN
    for step in (*flat.loops, flat.step):
        gate = combine_gates(gate, gate_of(step.when, step.condition, bag, written))
        if gate.answer is False:
            break
    return gate


def written_variables(activity: Activity, outputs_of: Callable[[TechniqueStep], Iterable[str]]) -> set[str]:
    """Bag variables (roots) this activity writes: technique outputs (remap targets replacing the ids they
    remap), checkpoint ``setVariable``/``recordReply`` targets, action ``set`` targets, loop variables.

    ``outputs_of(step)`` gives the bound technique's own declared output ids (empty when unresolved).
    """
    written: set[str] = set()
    for flat in activity.flattened_steps():
        step: Step = flat.step
        if isinstance(step, TechniqueStep):
            remaps = {} if isinstance(step.technique, str) else dict(step.technique.outputs or {})
            written.update(remaps.get(output, output) for output in outputs_of(step))
            written.update(remaps.values())
        if isinstance(step, TechniqueStep | ActionStep):
            written.update(a.target for a in step.actions or () if a.action == "set" and a.target)
        if isinstance(step, CheckpointStep):
            for option in step.options or ():
                effect = option.effect
                if effect is None:
                    continue
                written.update((effect.set_variable or {}).keys())
                if effect.record_reply:
                    written.add(effect.record_reply)
        if isinstance(step, LoopStep) and step.variable:
            written.add(step.variable)
    return {_root(name) for name in written}


def bundle_decision(length: int, *, max_chars: int | None, held: bool, tally: int, budget: int) -> BundleDecision:
    """What to do with one candidate of ``length`` characters (its full YAML).

    ``skip`` — longer than ``max_chars``; ``held`` — already with the context (a marker, free); ``stop`` —
    would overflow the budget (bundling ends here); ``add`` — inline it.
    """
    if max_chars is not None and length > max_chars:
        return "skip"
    if held:
        return "held"
    if tally + length > budget:
        return "stop"
    return "add"


def step_marker(step_id: str, resolved_id: str) -> str:
    """The arrival line of a bundled step entry: ``▼ STEP <step_id> · technique <resolvedId>``."""
    return f"▼ STEP {step_id} · technique {resolved_id}"


def enforcement_notes(activity: Activity) -> dict[str, str]:
    """``{actions?, auto_advance?}``: an action step or a step carrying ``actions[]``; a checkpoint with
    ``autoAdvanceMs``. Empty when the activity has neither."""
    notes: dict[str, str] = {}
    steps = [flat.step for flat in activity.flattened_steps()]
    if any(isinstance(s, ActionStep) or (isinstance(s, TechniqueStep) and s.actions) for s in steps):
        notes["actions"] = _ACTIONS_NOTE
    if any(isinstance(s, CheckpointStep) and s.auto_advance_ms for s in steps):
        notes["auto_advance"] = _AUTO_ADVANCE_NOTE
    return notes
