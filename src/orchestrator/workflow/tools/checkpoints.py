"""The checkpoint tools: ``yield_checkpoint``, ``present_checkpoint``, ``respond_checkpoint``, ``resume_checkpoint``.

A worker *yields* a checkpoint (declared in its current activity, or an ad hoc gate it describes itself);
that sets ``activeCheckpoint`` and locks the session. The user-facing agent *presents* it, asks the
user and *responds*; the response clears the gate, is stored under ``"<activity>-<checkpoint>"`` and
applies the option's effects (``setVariable``, ``recordReply``, ``skipActivities``; ``transitionTo`` is
only reported). The worker then *resumes* and learns the answer. Yielding an answered checkpoint again
replays the stored answer instead of pausing.

Every refusal is a ``WorkflowCheckpointError`` (no effect, nothing written). Time is the server clock
(``ServerState.now``); elapsed time is measured in milliseconds against the stored ``yieldedAt``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from orchestrator.workflow.corpus.model import CheckpointStep
from orchestrator.workflow.errors import WorkflowCheckpointError
from orchestrator.workflow.session.sessionfile import ActiveCheckpoint, AdhocCheckpoint, CheckpointResponse, iso_utc
from orchestrator.workflow.tools.checkpoint_gate import (
    CONDITION_NOT_MET,
    adhoc_gate,
    decide,
    replayed_effect,
    response_key,
    stored_effects,
)
from orchestrator.workflow.tools.context import McpCall, McpReply, SessionCall, ToolSpec
from orchestrator.workflow.tools.params import SESSION_INDEX, arr, boolean, obj, params, string

__all__ = ["PRESENT_CHECKPOINT", "RESPOND_CHECKPOINT", "RESUME_CHECKPOINT", "TOOLS", "YIELD_CHECKPOINT"]


# ------------------------------------------------------------------------------------------ lookups


def _declared_in_current(session: SessionCall, checkpoint_id: str) -> CheckpointStep | None:
    """The checkpoint of the session's current activity matching ``checkpoint_id`` (exact, then base id)."""
    activity_id = session.state.current_activity
    if not activity_id:
        return None
    activity = session.workflow().get_activity(activity_id)
    return activity.find_checkpoint(checkpoint_id) if activity is not None else None


def _active(session: SessionCall) -> ActiveCheckpoint:
    """The active checkpoint, or ``CHECKPOINT_NOT_FOUND`` when the session has none."""
    active = session.state.active_checkpoint
    if active is None:
        raise WorkflowCheckpointError(
            "CHECKPOINT_NOT_FOUND",
            f"No active checkpoint on session '{session.index}'; a worker must call yield_checkpoint first",
        )
    return active


def _definition(session: SessionCall, active: ActiveCheckpoint) -> CheckpointStep:
    """The declared definition of the active (non ad hoc) checkpoint.

    ``CHECKPOINT_NOT_FOUND`` when the activity or checkpoint vanished from the corpus since the yield.
    """
    activity = session.workflow().get_activity(active.activity_id)
    found = activity.find_checkpoint(active.checkpoint_id) if activity is not None else None
    if found is None:
        raise WorkflowCheckpointError(
            "CHECKPOINT_NOT_FOUND",
            f"Checkpoint not found: '{active.checkpoint_id}' is no longer declared in activity "
            f"'{active.activity_id}' of workflow '{session.state.workflow_id}' (the definition changed after "
            "the yield; restore it to resolve the gate)",
        )
    return found


# ------------------------------------------------------------------------------------------ yield


def _yield(call: McpCall) -> McpReply:
    session = call.open()
    checkpoint_id: str = call.args["checkpoint_id"]
    current = session.state.active_checkpoint
    if current is not None:
        raise WorkflowCheckpointError(
            "CHECKPOINT_ACTIVE",
            f"Cannot yield checkpoint '{checkpoint_id}': checkpoint '{current.checkpoint_id}' (activity "
            f"'{current.activity_id}') is already active and awaits the orchestrator's respond_checkpoint",
        )
    activity_id = session.state.current_activity
    declared = _declared_in_current(session, checkpoint_id)
    adhoc: AdhocCheckpoint | None = None
    if declared is not None:
        extra = [name for name in ("message", "options") if name in call.args]
        if extra:
            raise WorkflowCheckpointError(
                "CHECKPOINT_MODE",
                f"Checkpoint '{checkpoint_id}' is declared in activity '{activity_id}'; drop "
                f"{' and '.join(extra)}. Yield it by id alone",
            )
    else:
        adhoc = adhoc_gate(checkpoint_id, activity_id, call.args.get("message"), call.args.get("options") or [])

    key = response_key(activity_id, checkpoint_id)
    prior = session.state.checkpoint_responses.get(key)
    if prior is not None:
        session.record(
            "checkpoint_replayed",
            activity=activity_id or None,
            checkpoint=checkpoint_id,
            data={"optionId": prior.option_id},
        )
        session.save()
        payload: dict[str, Any] = {
            "status": "replayed",
            "checkpoint_id": checkpoint_id,
            "session_index": session.index,
            "resolved_option": prior.option_id,
        }
        effect = replayed_effect(prior.effects)
        if effect is not None:
            payload["effect"] = effect
        if prior.option_id == CONDITION_NOT_MET:
            payload["dismissed"] = True
        payload["message"] = (
            f"Checkpoint '{checkpoint_id}' was already answered in this activity (option '{prior.option_id}'). "
            "The stored answer is replayed: apply its effect to your own state and carry on without yielding."
        )
        return session.json(payload)

    session.update(
        active_checkpoint=ActiveCheckpoint(
            checkpoint_id=checkpoint_id,
            activity_id=activity_id,
            yielded_at=iso_utc(call.state.now()),
            adhoc=adhoc,
        )
    )
    session.record(
        "checkpoint_reached",
        activity=activity_id or None,
        checkpoint=checkpoint_id,
        data={"adhoc": True} if adhoc is not None else None,
    )
    session.save()
    return session.json(
        {
            "status": "yielded",
            "checkpoint_id": checkpoint_id,
            "session_index": session.index,
            "message": (
                f"Checkpoint '{checkpoint_id}' is now active and the session is paused. Emit an empty "
                "<checkpoint_yield> block and stop; call resume_checkpoint once the orchestrator has answered."
            ),
        }
    )


# ------------------------------------------------------------------------------------------ present


def _present(call: McpCall) -> McpReply:
    session = call.open()
    active = _active(session)
    if active.adhoc is not None:
        return session.yaml(
            {
                "id": active.checkpoint_id,
                "message": active.adhoc.message,
                "options": [
                    {"id": o.id, "label": o.label} | ({"description": o.description} if o.description else {})
                    for o in active.adhoc.options
                ],
                "blocking": True,
                "declared": False,
                "session_index": session.index,
            }
        )
    step = _definition(session, active)
    payload: dict[str, Any] = {
        "id": active.checkpoint_id,
        "name": step.id,
        "message": step.message or "",
        "options": msgspec.to_builtins(step.options or ()),
    }
    if step.condition is not None:
        payload["condition"] = msgspec.to_builtins(step.condition)
    if step.default_option is not None:
        payload["defaultOption"] = step.default_option
    if step.auto_advance_ms is not None:
        payload["autoAdvanceMs"] = step.auto_advance_ms
    payload["session_index"] = session.index
    return session.yaml(payload)


# ------------------------------------------------------------------------------------------ respond


def _respond(call: McpCall) -> McpReply:
    session = call.open()
    active = _active(session)
    step = _definition(session, active) if active.adhoc is None else None
    answer = decide(
        call.args, active, step, now=call.state.now(), floor_seconds=call.state.settings.min_checkpoint_response_seconds
    )
    call.warn(answer.warning)
    effect, reply = answer.effect, answer.reply
    stored, variables = stored_effects(effect, reply)
    now = call.state.now()

    activity = active.activity_id
    key = response_key(activity, active.checkpoint_id)
    responses = dict(session.state.checkpoint_responses)
    responses[key] = CheckpointResponse(option_id=answer.option_id, responded_at=iso_utc(now), effects=stored)
    session.update(active_checkpoint=None, checkpoint_responses=responses)
    session.record(
        "checkpoint_response",
        activity=activity or None,
        checkpoint=active.checkpoint_id,
        data={"optionId": answer.option_id},
    )
    reply_var = effect.record_reply if effect is not None and reply is not None else None
    for name, value in variables.items():
        session.set_variable(name, value, "recordReply" if name == reply_var else "setVariable", activity=activity)
    for skipped in (effect.skip_activities or ()) if effect is not None else ():
        if session.workflow().get_activity(skipped) is None:
            call.warn(f"Checkpoint '{active.checkpoint_id}' skips unknown activity '{skipped}'")
        if skipped in session.state.skipped_activities:
            continue
        session.update(skipped_activities=[*session.state.skipped_activities, skipped])
        session.record("activity_skipped", activity=skipped, checkpoint=active.checkpoint_id)
    session.save()

    payload: dict[str, Any] = {"checkpoint_id": active.checkpoint_id, "resolved": True, "session_index": session.index}
    if not answer.dismissed:
        payload["resolved_option"] = answer.option_id
    shown: dict[str, Any] | None = msgspec.to_builtins(effect) if effect is not None else None
    if shown:
        if reply is not None:
            shown["reply"] = reply
        payload["effect"] = shown
    if answer.dismissed:
        payload["dismissed"] = True
    return session.json(payload)


# ------------------------------------------------------------------------------------------ resume


def _latest_answer(session: SessionCall) -> tuple[str, CheckpointResponse] | None:
    """(checkpoint id, stored response) of the newest ``checkpoint_response`` in the current activity."""
    activity = session.state.current_activity
    for event in reversed(session.state.history):
        if event.type != "checkpoint_response" or (event.activity or "") != activity or not event.checkpoint:
            continue
        stored = session.state.checkpoint_responses.get(response_key(activity, event.checkpoint))
        if stored is not None:
            return event.checkpoint, stored
    return None


def _resume(call: McpCall) -> McpReply:
    session = call.open()
    active = session.state.active_checkpoint
    if active is not None:
        raise WorkflowCheckpointError(
            "CHECKPOINT_ACTIVE",
            f"Cannot resume: checkpoint '{active.checkpoint_id}' (activity '{active.activity_id}') is still active; "
            "the orchestrator has not answered it yet",
        )
    session.save()
    payload: dict[str, Any] = {"status": "resumed", "session_index": session.index}
    latest = _latest_answer(session)
    if latest is None:
        payload["message"] = "No checkpoint is active. No answer is recorded in the current activity; carry on."
        return session.json(payload)
    checkpoint_id, stored = latest
    effects = stored.effects
    payload["checkpoint_id"] = checkpoint_id
    payload["resolved_option"] = stored.option_id
    payload["variables_set"] = dict(effects.variables_set or {}) if effects is not None else {}
    if effects is not None and effects.transitioned_to:
        payload["exit"] = {"to": effects.transitioned_to, "ends_activity": True}
        payload["message"] = (
            f"Checkpoint '{checkpoint_id}' was answered '{stored.option_id}', which exits to "
            f"'{effects.transitioned_to}': run none of the remaining steps and report the ones you ran."
        )
    else:
        payload["message"] = (
            f"Checkpoint '{checkpoint_id}' was answered '{stored.option_id}'. Apply variables_set to your state "
            "and continue with the next step."
        )
    return session.json(payload)


# ------------------------------------------------------------------------------------------ specs

_OPTION = obj(
    {
        "id": string("Option id the user's answer will name.", min_length=1),
        "label": string("Short label shown to the user.", min_length=1),
        "description": string("Optional longer explanation of the option."),
    },
    required=("id", "label"),
    description="One choice of an ad hoc checkpoint.",
)

YIELD_CHECKPOINT = ToolSpec(
    name="yield_checkpoint",
    description=(
        "Worker tool: pause at a checkpoint step and hand the decision to the orchestrator. Pass the checkpoint "
        "id as declared in the current activity (by id alone). For a question the activity does not declare, "
        "raise an ad hoc gate by also passing message and at least two options. The session stays locked until "
        "respond_checkpoint; emit an empty <checkpoint_yield> block and stop. A checkpoint already answered in "
        "this activity is not asked again: the stored answer comes back with status 'replayed'."
    ),
    schema=params(
        {
            "session_index": SESSION_INDEX,
            "checkpoint_id": string("Id of the checkpoint step (or of the ad hoc gate).", min_length=1),
            "message": string("Ad hoc gates only: the question to put to the user."),
            "options": arr("Ad hoc gates only: at least two options.", _OPTION),
        },
        required=("session_index", "checkpoint_id"),
    ),
    handler=_yield,
)

PRESENT_CHECKPOINT = ToolSpec(
    name="present_checkpoint",
    description=(
        "Read the session's active checkpoint so it can be put to the user: message, options with their "
        "effects, and condition/defaultOption/autoAdvanceMs when declared. Placeholders such as {var} are left "
        "as written. Read-only; allowed while the checkpoint locks the session."
    ),
    schema=params({"session_index": SESSION_INDEX}, required=("session_index",)),
    handler=_present,
)

RESPOND_CHECKPOINT = ToolSpec(
    name="respond_checkpoint",
    description=(
        "Answer the active checkpoint after presenting it to the user and waiting for their input, which clears "
        "the lock. Give exactly one of: option_id (the user's choice; refused when it arrives under the minimum "
        "response time after the yield), auto_advance: true (the declared default, only once its autoAdvanceMs "
        "timer has run out), condition_not_met: true (dismiss a checkpoint with a condition that does not hold). "
        "reply carries text the user typed, accepted only with an option whose effect declares recordReply. "
        "The option's setVariable and skipActivities effects are applied; transitionTo is returned for the "
        "orchestrator to act on."
    ),
    schema=params(
        {
            "session_index": SESSION_INDEX,
            "option_id": string("Id of the option the user chose."),
            "auto_advance": boolean("true: resolve with defaultOption because the auto-advance timer elapsed."),
            "condition_not_met": boolean("true: dismiss a conditional checkpoint whose condition is false."),
            "reply": string("Text the user typed, for an option whose effect declares recordReply."),
        },
        required=("session_index",),
    ),
    handler=_respond,
)

RESUME_CHECKPOINT = ToolSpec(
    name="resume_checkpoint",
    description=(
        "Worker tool, after the orchestrator resumes you: confirms the checkpoint was answered and returns the "
        "latest answer in the current activity (checkpoint_id, resolved_option, variables_set, and exit when "
        "the option leaves the activity - then run none of the remaining steps). Refused while the checkpoint "
        "is still active."
    ),
    schema=params({"session_index": SESSION_INDEX}, required=("session_index",)),
    handler=_resume,
)

TOOLS: tuple[ToolSpec, ...] = (YIELD_CHECKPOINT, PRESENT_CHECKPOINT, RESPOND_CHECKPOINT, RESUME_CHECKPOINT)
