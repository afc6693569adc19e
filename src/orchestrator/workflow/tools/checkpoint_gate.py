"""Pure rules of the checkpoint gate, used by ``tools/checkpoints.py``.

Nothing here reads or writes a session: each function takes the active checkpoint, its definition and
the call's arguments and either returns what to record or raises the ``WorkflowCheckpointError`` that refuses
the call. Elapsed time is whole milliseconds between the stored ``yieldedAt`` and the server clock.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

import msgspec

from orchestrator.workflow.corpus.model import CheckpointEffect, CheckpointOption, CheckpointStep
from orchestrator.workflow.errors import WorkflowCheckpointError
from orchestrator.workflow.session.sessionfile import ActiveCheckpoint, AdhocCheckpoint, AdhocOption, CheckpointEffects

__all__ = [
    "ADHOC_MIN_OPTIONS",
    "CONDITION_NOT_MET",
    "CheckpointAnswer",
    "adhoc_gate",
    "answer_mode",
    "decide",
    "elapsed_ms",
    "replayed_effect",
    "response_key",
    "stored_effects",
]

CONDITION_NOT_MET = "__condition_not_met__"
ADHOC_MIN_OPTIONS = 2
Mode = Literal["option", "auto_advance", "condition_not_met"]


def response_key(activity_id: str, checkpoint_id: str) -> str:
    """The ``checkpointResponses`` key of a checkpoint answered in an activity."""
    return f"{activity_id}-{checkpoint_id}"


def elapsed_ms(yielded_at: str, now: float) -> int:
    """Whole milliseconds from ``yielded_at`` (ISO-8601 UTC, ms precision) to ``now`` (unix seconds).

    An unreadable or zone-less ``yielded_at`` counts as "just now" (0): a gate never opens early by accident.
    """
    try:
        moment = datetime.fromisoformat(yielded_at.replace("Z", "+00:00"))
    except ValueError:
        return 0
    if moment.tzinfo is None:
        return 0
    return math.floor(now * 1000) - round(moment.timestamp() * 1000)


def adhoc_gate(
    checkpoint_id: str, activity_id: str, message: Any, options: Sequence[Mapping[str, Any]]
) -> AdhocCheckpoint:
    """The ad hoc gate an undeclared id describes (``message`` + ≥2 options with distinct ids).

    ``CHECKPOINT_NOT_FOUND`` (with the hint to supply both) when either is missing; ``CHECKPOINT_OPTION``
    for a repeated option id.
    """
    if not (isinstance(message, str) and message.strip()) or len(options) < ADHOC_MIN_OPTIONS:
        where = f"activity '{activity_id}'" if activity_id else "the session (no current activity)"
        raise WorkflowCheckpointError(
            "CHECKPOINT_NOT_FOUND",
            f"Checkpoint not found: '{checkpoint_id}' is not declared in {where}. To raise an ad hoc gate, "
            f"supply a message and at least {ADHOC_MIN_OPTIONS} options ({{id, label}})",
        )
    built = [AdhocOption(id=o["id"], label=o["label"], description=o.get("description")) for o in options]
    seen: set[str] = set()
    for option in built:
        if option.id in seen:
            raise WorkflowCheckpointError(
                "CHECKPOINT_OPTION", f"Ad hoc checkpoint '{checkpoint_id}' lists option id '{option.id}' twice"
            )
        seen.add(option.id)
    return AdhocCheckpoint(message=message, options=built)


class CheckpointAnswer(msgspec.Struct, kw_only=True):
    """A respond call that passed every check: what to store and apply."""

    option_id: str
    effect: CheckpointEffect | None = None
    dismissed: bool = False
    reply: str | None = None
    warning: str | None = None


def answer_mode(args: Mapping[str, Any]) -> Mode:
    """Which answer the arguments give; ``CHECKPOINT_MODE`` unless exactly one of the three is given.

    ``option_id`` counts when present (even empty); the two flags count only when ``true``.
    """
    given: list[Mode] = []
    if "option_id" in args:
        given.append("option")
    if args.get("auto_advance") is True:
        given.append("auto_advance")
    if args.get("condition_not_met") is True:
        given.append("condition_not_met")
    if len(given) != 1:
        raise WorkflowCheckpointError(
            "CHECKPOINT_MODE",
            "Exactly one of option_id, auto_advance: true or condition_not_met: true must be provided "
            f"(got {', '.join(given) or 'none'})",
        )
    return given[0]


def _find_option(
    checkpoint_id: str, option_id: str, options: Sequence[CheckpointOption | AdhocOption]
) -> CheckpointOption | AdhocOption:
    for option in options:
        if option.id == option_id:
            return option
    valid = ", ".join(option.id for option in options)
    raise WorkflowCheckpointError(
        "CHECKPOINT_OPTION", f"Invalid option '{option_id}' for checkpoint '{checkpoint_id}'. Valid options: [{valid}]"
    )


def _check_floor(checkpoint_id: str, elapsed: int, floor_seconds: float) -> None:
    if elapsed < floor_seconds * 1000:
        raise WorkflowCheckpointError(
            "CHECKPOINT_TOO_FAST",
            f"Checkpoint response too fast for '{checkpoint_id}': {max(elapsed, 0) / 1000:.3f}s after the yield, "
            f"minimum {floor_seconds:g}s. Present the checkpoint to the user and answer with their choice",
        )


def _resolve(
    mode: Mode,
    args: Mapping[str, Any],
    active: ActiveCheckpoint,
    step: CheckpointStep | None,
    elapsed: int,
    floor_seconds: float,
) -> CheckpointAnswer:
    cp_id = active.checkpoint_id
    if active.adhoc is not None or step is None:
        if mode != "option":
            detail = (
                f"auto-advance ad hoc checkpoint '{cp_id}': missing defaultOption or autoAdvanceMs"
                if mode == "auto_advance"
                else f"dismiss ad hoc checkpoint '{cp_id}': it has no condition field"
            )
            raise WorkflowCheckpointError("CHECKPOINT_MODE", f"Cannot {detail}; answer it with the user's option_id")
        _check_floor(cp_id, elapsed, floor_seconds)
        options = active.adhoc.options if active.adhoc is not None else []
        return CheckpointAnswer(option_id=_find_option(cp_id, args["option_id"], options).id)

    options_declared = step.options or ()
    if mode == "option":
        _check_floor(cp_id, elapsed, floor_seconds)
        chosen = _find_option(cp_id, args["option_id"], options_declared)
        assert isinstance(chosen, CheckpointOption)
        return CheckpointAnswer(option_id=chosen.id, effect=chosen.effect)
    if mode == "auto_advance":
        if not step.default_option or not step.auto_advance_ms:
            raise WorkflowCheckpointError(
                "CHECKPOINT_MODE", f"Cannot auto-advance checkpoint '{cp_id}': missing defaultOption or autoAdvanceMs"
            )
        required_s = math.ceil(step.auto_advance_ms / 1000)
        if elapsed < required_s * 1000:
            raise WorkflowCheckpointError(
                "CHECKPOINT_TIMER",
                f"Auto-advance timer not elapsed for checkpoint '{cp_id}': {max(elapsed, 0) / 1000:.3f}s of "
                f"{required_s}s (autoAdvanceMs {step.auto_advance_ms}). Wait for the full timer, or answer with "
                "the user's option_id",
            )
        default = _find_option(cp_id, step.default_option, options_declared)
        assert isinstance(default, CheckpointOption)
        return CheckpointAnswer(option_id=default.id, effect=default.effect)
    if step.condition is None:
        raise WorkflowCheckpointError(
            "CHECKPOINT_MODE",
            f"Cannot dismiss checkpoint '{cp_id}': it has no condition field, so condition_not_met does not apply; "
            "answer it with the user's option_id",
        )
    return CheckpointAnswer(option_id=CONDITION_NOT_MET, dismissed=True)


def decide(
    args: Mapping[str, Any],
    active: ActiveCheckpoint,
    step: CheckpointStep | None,
    *,
    now: float,
    floor_seconds: float,
) -> CheckpointAnswer:
    """Check a respond call against the active gate (``step`` = its declaration, ``None`` for ad hoc).

    Order: exactly one mode; for ``option_id`` the response-time floor, then the option id; for
    ``auto_advance`` defaultOption + autoAdvanceMs, then the timer (whole seconds, rounded up); for
    ``condition_not_met`` a structured condition. ``reply`` is accepted only with an ``option_id`` whose
    effect declares ``recordReply`` (``REPLY_NOT_ACCEPTED`` otherwise). ``blocking`` is never consulted.
    """
    mode = answer_mode(args)
    answer = _resolve(mode, args, active, step, elapsed_ms(active.yielded_at, now), floor_seconds)
    target = answer.effect.record_reply if answer.effect is not None else None
    reply = args.get("reply")
    if reply is None:
        if mode == "option" and target:
            answer.warning = (
                f"Option '{answer.option_id}' of checkpoint '{active.checkpoint_id}' records the user's reply into "
                f"'{target}', but no reply was given; the variable is unchanged"
            )
        return answer
    if mode != "option" or not target:
        reason = (
            f"option '{answer.option_id}' declares no recordReply effect"
            if mode == "option"
            else "only an option_id whose effect declares recordReply takes a reply"
        )
        raise WorkflowCheckpointError(
            "REPLY_NOT_ACCEPTED", f"reply is not accepted for checkpoint '{active.checkpoint_id}': {reason}"
        )
    answer.reply = str(reply)
    return answer


def stored_effects(
    effect: CheckpointEffect | None, reply: str | None
) -> tuple[CheckpointEffects | None, dict[str, Any]]:
    """(effects to store, variables to write, in order) for a resolved answer.

    ``variablesSet`` holds every variable the answer writes: the option's ``setVariable`` and, when a
    reply was given, its ``recordReply`` target (which wins over a ``setVariable`` of the same name).
    """
    variables: dict[str, Any] = dict(effect.set_variable or {}) if effect is not None else {}
    if effect is not None and effect.record_reply and reply is not None:
        variables[effect.record_reply] = reply
    transitioned = effect.transition_to if effect is not None and effect.transition_to else None
    skipped = list(effect.skip_activities) if effect is not None and effect.skip_activities else None
    if not (variables or transitioned or skipped or reply is not None):
        return None, variables
    stored = CheckpointEffects(
        variables_set=variables or None, transitioned_to=transitioned, activities_skipped=skipped, reply=reply
    )
    return stored, variables


def replayed_effect(effects: CheckpointEffects | None) -> dict[str, Any] | None:
    """Stored effects in the option-effect vocabulary (``setVariable``, ``transitionTo``, ``skipActivities``,
    plus ``reply``); ``None`` when the answer had none."""
    if effects is None:
        return None
    out: dict[str, Any] = {}
    if effects.variables_set:
        out["setVariable"] = dict(effects.variables_set)
    if effects.transitioned_to:
        out["transitionTo"] = effects.transitioned_to
    if effects.activities_skipped:
        out["skipActivities"] = list(effects.activities_skipped)
    if effects.reply is not None:
        out["reply"] = effects.reply
    return out or None
