"""Delivery tools: ``get_activity``, ``get_technique`` and ``get_resource``.

All three are refused under an active checkpoint, write the session once (seq + 1) and record what they
delivered in the reference-delivery ledger (``ledger``). get_activity's composition (eager bundling, batch
bound, dispatch accounting) lives in ``activity_delivery``; step-bound composition in ``composing``.
"""

from __future__ import annotations

from typing import Any

from orchestrator.workflow.corpus import (
    TERMINAL_ACTIVITY,
    Activity,
    TechniqueStep,
    resolve_technique,
    technique_payload,
)
from orchestrator.workflow.corpus import find_resource as corpus_find_resource
from orchestrator.workflow.errors import TechniqueNotFoundError, WorkflowError
from orchestrator.workflow.tools.activity_delivery import get_activity
from orchestrator.workflow.tools.batch_bound import scope_seen, step_started_before
from orchestrator.workflow.tools.composing import StepComposer, ended_error, not_current_error
from orchestrator.workflow.tools.context import McpCall, McpReply, SessionCall, ToolSpec
from orchestrator.workflow.tools.ledger import (
    InResponse,
    LedgerView,
    collapse_technique,
    content_hash,
    delivery_scope,
    fetch_mode,
    merge_ledger,
    resource_key,
    technique_key,
)
from orchestrator.workflow.tools.params import AGENT_ID, SESSION_INDEX, boolean, integer, params, string
from orchestrator.workflow.tools.render import to_yaml

__all__ = ["GET_ACTIVITY", "GET_RESOURCE", "GET_TECHNIQUE", "TOOLS"]

TECHNIQUE_UNCHANGED_NOTE = (
    "This agent context already received this technique, byte for byte. If you no longer hold it, call "
    "get_technique again with full: true."
)
RESOURCE_UNCHANGED_NOTE = (
    "This agent context already received this resource (same id, same section), byte for byte. If you no "
    "longer hold it, call get_resource again with full: true."
)


# ------------------------------------------------------------------------------------------ get_technique


def _no_activity_technique(s: SessionCall) -> tuple[Any, None, None]:
    workflow = s.workflow()
    if not workflow.techniques_workflow:
        raise TechniqueNotFoundError(
            f"Workflow '{workflow.id}' does not declare any workflow-level techniques (techniques.workflow); "
            "move to an activity first and fetch its techniques by step_id"
        )
    ref = workflow.techniques_workflow[0]
    resolved = resolve_technique(s.call.corpus(), ref, workflow_id=workflow.id)
    if resolved is None:
        raise TechniqueNotFoundError(f"Technique not found: {ref} (first workflow-level technique of '{workflow.id}')")
    return resolved, None, None


def _activity_technique(s: SessionCall, activity: Activity) -> Any:
    if not activity.techniques:
        raise TechniqueNotFoundError(
            f"Activity '{activity.id}' does not declare any techniques of its own; pass step_id to fetch the "
            "technique a step binds"
        )
    ref = activity.techniques[0]
    resolved = resolve_technique(
        s.call.corpus(),
        ref,
        workflow_id=activity.source_workflow or s.state.workflow_id,
        executing_workflow_id=s.state.workflow_id,
    )
    if resolved is None:
        raise TechniqueNotFoundError(f"Technique not found: {ref} (first technique of activity '{activity.id}')")
    return resolved


def _step_technique(s: SessionCall, activity: Activity, step_id: str) -> tuple[Any, dict[str, Any], list[str]]:
    flat = activity.find_step(step_id)
    if flat is None:
        available = ", ".join(f.step.id for f in activity.flattened_steps())
        raise WorkflowError(
            f"Step '{step_id}' not found in activity '{activity.id}'. Available steps: [{available}]",
            code="StepNotFound",
        )
    if not isinstance(flat.step, TechniqueStep):
        kind = type(flat.step).__name__.removesuffix("Step").lower()
        raise WorkflowError(
            f"Step '{step_id}' of activity '{activity.id}' is a {kind} step and has no associated technique; "
            "follow its definition in the activity instead",
            code="NoTechnique",
        )
    composer = StepComposer.for_workflow(s.server, s.call.corpus(), s.workflow())
    composed = composer.compose(activity, flat)
    if composed is None:
        ref = flat.step.technique if isinstance(flat.step.technique, str) else flat.step.technique.name
        raise TechniqueNotFoundError(
            f"Technique not found: {ref} (bound by step '{step_id}' of activity '{activity.id}', resolved in "
            f"workflow '{activity.source_workflow}')"
        )
    return composed.resolved, composed.payload, list(composed.warnings)


def _get_technique(call: McpCall) -> McpReply:
    args = call.args
    s = call.open(lock=True)
    current = s.state.current_activity
    requested = args.get("activity_id")
    if requested is not None and requested != current:
        raise not_current_error(requested, current)
    step_id: str | None = args.get("step_id")
    payload: dict[str, Any] | None = None
    if not current:
        if step_id is not None:
            raise WorkflowError(
                "No current activity: step_id needs one (the orchestrator calls next_activity first)",
                code="NoCurrentActivity",
            )
        resolved, _, _ = _no_activity_technique(s)
    else:
        if current == TERMINAL_ACTIVITY:
            raise ended_error(current)
        activity = s.activity(current)
        if step_id is None:
            resolved = _activity_technique(s, activity)
        else:
            resolved, payload, warnings = _step_technique(s, activity, step_id)
            for warning in warnings:
                call.warn(warning)
    if payload is None:
        payload = technique_payload(resolved)

    scope = delivery_scope(s.state, call.agent_id)
    consult = fetch_mode(s.state, args.get("bundle"), args.get("full")) == "reference"
    ledger = LedgerView(s.state.delivered_content, scope)
    digest = content_hash(to_yaml(payload))
    key = technique_key(resolved.resolved_id)
    if consult and ledger.holds(key, digest):
        body: dict[str, Any] = {
            "id": payload["id"],
            "delivery": "unchanged",
            "content_hash": digest,
            "note": TECHNIQUE_UNCHANGED_NOTE,
        }
        delivery = "unchanged"
    else:
        body = collapse_technique(payload, ledger=ledger, consult=consult, seen=InResponse(), where="technique")
        ledger.stage(key, digest)
        delivery = "full"
    text = f"session_index: {s.index}\n\n{to_yaml(body)}"

    activity_id = current or None
    if activity_id is not None and not scope_seen(s.state.history, scope):
        s.record("activity_dispatched", activity=activity_id, data={"agentId": scope, "dispatch": "fresh"})
    data: dict[str, Any] = {"techniqueId": resolved.resolved_id}
    if step_id is not None:
        data["stepId"] = step_id
    data.update({"agentId": scope, "chars": len(text), "delivery": delivery})
    s.record("technique_fetched", activity=activity_id, step=step_id, data=data)
    if step_id is not None and not step_started_before(s.state.history, current, step_id, scope):
        s.record("step_started", activity=current, step=step_id, data={"stepId": step_id, "agentId": scope})
    s.update(
        current_technique=resolved.resolved_id,
        delivered_content=merge_ledger(s.state.delivered_content, scope, ledger.staged),
    )
    s.save()
    return s.text(
        text,
        technique_id=resolved.resolved_id,
        step_id=step_id,
        delivery=delivery,
        content_hash=digest,
    )


# ------------------------------------------------------------------------------------------- get_resource


def _get_resource(call: McpCall) -> McpReply:
    args = call.args
    s = call.open(lock=True)
    resource_id: str = args["resource_id"]
    found = corpus_find_resource(s.call.corpus(), resource_id, workflow_id=s.workflow().id)
    header = [f"resource_id: {resource_id}", f"id: {found.id}"]
    if found.version:
        header.append(f"version: {found.version}")
    header.append(f"session_index: {s.index}")
    full_text = "\n".join(header) + "\n\n" + found.body
    digest = content_hash(full_text)

    scope = delivery_scope(s.state, call.agent_id)
    consult = fetch_mode(s.state, args.get("bundle"), args.get("full")) == "reference"
    ledger = LedgerView(s.state.delivered_content, scope)
    key = resource_key(resource_id)
    if consult and ledger.holds(key, digest):
        text = "\n".join([*header, "delivery: unchanged", f"content_hash: {digest}"]) + "\n\n" + RESOURCE_UNCHANGED_NOTE
        delivery = "unchanged"
    else:
        text = full_text
        ledger.stage(key, digest)
        delivery = "full"

    s.record(
        "resource_fetched",
        activity=s.state.current_activity or None,
        data={"resourceId": resource_id, "agentId": scope, "chars": len(text), "delivery": delivery},
    )
    s.update(delivered_content=merge_ledger(s.state.delivered_content, scope, ledger.staged))
    s.save()
    return s.text(text, resource_id=resource_id, delivery=delivery, content_hash=digest)


# ------------------------------------------------------------------------------------------------- specs

_BUNDLE = string(
    "reference: content this agent context already received comes back as {delivery: unchanged, content_hash} "
    "markers; full: always send content. Default: reference in a persistent-mode session, else full.",
    enum=("reference", "full"),
)
_FULL = boolean("true forces the full payload even when this agent context already holds it.")

GET_ACTIVITY = ToolSpec(
    "get_activity",
    "Load the current activity for the worker that runs it: the worker technique bundle and rules, the step "
    "techniques that fit your context budget (inlined under step_techniques), then the activity definition "
    "with its rules, enforcement notes, artifacts and your batch standing (may_continue). context_tokens, your "
    "context window in tokens, is required on every call. Refused while a checkpoint is active, and refused "
    "(Batch full) when your agent context has taken as many activities or characters as its batch allows.",
    params(
        {
            "session_index": SESSION_INDEX,
            "context_tokens": integer(
                "Your context window in tokens; sizes eager step-technique bundling and the batch budget. Never "
                "stored.",
                exclusive_minimum=0,
            ),
            "agent_id": AGENT_ID,
            "bundle": _BUNDLE,
            "activity_id": string("The activity you were dispatched for; must be the session's current activity."),
        },
        required=("session_index", "context_tokens"),
    ),
    get_activity,
)
GET_TECHNIQUE = ToolSpec(
    "get_technique",
    "Fetch one technique. With no current activity: the workflow's first workflow-level technique. During an "
    "activity: the technique a step binds (step_id), with source:/destination: binding annotations, or the "
    "activity's first technique (no step_id). The body carries its own rules; ancestors are named in inherits "
    "and their shared inputs, outputs and rules arrive under contracts. Refused while a checkpoint is active.",
    params(
        {
            "session_index": SESSION_INDEX,
            "agent_id": AGENT_ID,
            "step_id": string("Id of a technique step of the current activity."),
            "activity_id": string("The activity you are working on; must be the session's current activity."),
            "bundle": _BUNDLE,
            "full": _FULL,
        },
        required=("session_index",),
    ),
    _get_technique,
)
GET_RESOURCE = ToolSpec(
    "get_resource",
    "Fetch a resource (reference material linked from techniques) by id: 'x' from the session's workflow, "
    "'wf/x' from another workflow, optionally '#section' for one heading's slice. Returns a short header "
    "(resource_id, id, version, session_index), a blank line, then the markdown body. Refused while a "
    "checkpoint is active.",
    params(
        {
            "session_index": SESSION_INDEX,
            "resource_id": string("Resource id: x, wf/x, optionally with #section.", min_length=1),
            "agent_id": AGENT_ID,
            "bundle": _BUNDLE,
            "full": _FULL,
        },
        required=("session_index", "resource_id"),
    ),
    _get_resource,
)
TOOLS: tuple[ToolSpec, ...] = (GET_ACTIVITY, GET_TECHNIQUE, GET_RESOURCE)
