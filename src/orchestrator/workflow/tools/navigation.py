"""``get_workflow`` and ``next_activity``: the orchestrator's map and its one move.

get_workflow answers the orchestrator technique bundle, a ``\\n\\n---\\n\\n`` separator and the workflow
summary (rules, variables, initialActivity, activity stubs with their exits). next_activity validates the
move (errors only for a locked session, a stale position or an unknown activity; everything else warns),
records the exit of the previous activity and the entry of the next, completes the workflow on
``complete``/``__terminal__`` (flipping the parent's entry for an embedded child) and hands back a signed
trace token of the calls since the previous move.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from orchestrator.workflow.corpus import CORE_ORCHESTRATOR, bundle_for
from orchestrator.workflow.corpus.model import TERMINAL_ACTIVITY, Activity, Workflow, exits
from orchestrator.workflow.errors import WorkflowError
from orchestrator.workflow.session.sessionfile import (
    DeclaredArtifact,
    HistoryEvent,
    SessionFile,
    iso_utc,
    new_history,
    replace_at,
    state_at,
    touch,
)
from orchestrator.workflow.tools.batch import batch_block
from orchestrator.workflow.tools.context import McpCall, McpReply, SessionCall, ToolSpec, content_hash
from orchestrator.workflow.tools.manifests import (
    activity_manifest_warnings,
    artifact_warnings,
    condition_warning,
    fetch_warnings,
    step_manifest_warnings,
)
from orchestrator.workflow.tools.params import AGENT_ID, SESSION_INDEX, arr, boolean, integer, obj, params, string
from orchestrator.workflow.tools.render import SEPARATOR, to_yaml

__all__ = ["COMPLETE_ACTIVITY", "GET_WORKFLOW", "NEXT_ACTIVITY", "activity_stubs", "transition_warning"]

COMPLETE_ACTIVITY = "complete"
UNCHANGED_NOTE = (
    "The orchestrator bundle is byte-identical to the one this agent already received in this session; reuse "
    "it from your context."
)


# ------------------------------------------------------------------------------------------ get_workflow


def activity_stubs(workflow: Workflow) -> list[dict[str, Any]]:
    """``[{id, name, required, artifactPrefix, exits}]`` in assembly order."""
    return [
        {
            "id": activity.id,
            "name": activity.name,
            "required": activity.required,
            "artifactPrefix": activity.artifact_prefix,
            "exits": exits(activity),
        }
        for activity in workflow.activities
    ]


def _bundle_text(call: McpCall, workflow: Workflow) -> str:
    def compute() -> str:
        bundle = bundle_for(call.corpus(), workflow.id, workflow.techniques_workflow, CORE_ORCHESTRATOR)
        return to_yaml(bundle) if bundle else ""

    return call.state.memo(("workflow_bundle", workflow.id), compute)


def _summary_text(call: McpCall, workflow: Workflow) -> str:
    """The session-independent part of the summary as YAML (memoised per corpus load)."""

    def compute() -> str:
        summary: dict[str, Any] = {
            "id": workflow.id,
            "version": workflow.version,
            "title": workflow.title,
            "description": workflow.description or "",
        }
        rules = [*workflow.rules.workflow, *workflow.rules.universal]
        if rules:
            summary["rules"] = rules
        declared = workflow.raw.get("variables")
        if declared:
            summary["variables"] = declared
        summary["initialActivity"] = workflow.initial_activity
        summary["activities"] = activity_stubs(workflow)
        if workflow.activity_load_errors:
            summary["activity_load_errors"] = [
                {"file": e.file, "activity_id": e.activity_id, "error": e.error} for e in workflow.activity_load_errors
            ]
        return to_yaml(summary)

    return call.state.memo(("workflow_summary", workflow.id), compute)


def get_workflow(call: McpCall) -> McpReply:
    s = call.open(lock=True)
    workflow = s.workflow()
    bundle = _bundle_text(call, workflow)
    digest = content_hash(bundle)
    key = f"workflow_bundle:{digest}"
    if s.state.context_mode == "persistent" and s.delivered(key) == digest:
        bundle = to_yaml({"delivery": "unchanged", "content_hash": digest, "note": UNCHANGED_NOTE})
    s.remember_delivery({key: digest})
    s.save()
    tail = to_yaml({"session_index": s.index, "planning_folder_path": s.planning_folder_path})
    text = f"{bundle}{SEPARATOR}{_summary_text(call, workflow)}\n{tail}"
    return s.text(text)


# ------------------------------------------------------------------------------------------ next_activity


def transition_warning(workflow: Workflow, current: str, target: str) -> str | None:
    """Warning (2): ``target`` is not among the current activity's exits (self, the sentinel, no exits: fine)."""
    if not current or current == target or target == TERMINAL_ACTIVITY:
        return None
    activity = workflow.get_activity(current)
    if activity is None:
        return None
    valid = [entry["to"] for entry in exits(activity)]
    if not valid or target in valid:
        return None
    return f"Activity '{target}' is not a direct transition from '{current}'. Valid transitions: [{', '.join(valid)}]"


def _stale(s: SessionCall, returning: str) -> WorkflowError:
    current = s.state.current_activity or "(none)"
    return WorkflowError(
        f"returning_activity_id '{returning}' is not the session's current activity '{current}'; the session "
        "moved since this context last looked. Read get_workflow_status and continue from there.",
        code="STALE_POSITION",
    )


def _completed_parent(top: SessionFile, path: tuple[int, ...], child: SessionFile, now: float) -> SessionFile:
    """The top-level file with the embedding parent's entry for ``child`` flipped to completed."""
    parent_path, slot = path[:-1], path[-1]
    parent = state_at(top, parent_path)
    entries = list(parent.triggered_workflows)
    entry = entries[slot]
    if entry.status != "running":
        return top
    entries[slot] = msgspec.structs.replace(entry, status="completed", completed_at=iso_utc(now))
    event = new_history(
        "workflow_returned",
        now=now,
        activity=parent.current_activity or None,
        data={"sessionIndex": child.session_index, "workflowId": child.workflow_id},
    )
    new_parent = touch(
        msgspec.structs.replace(parent, triggered_workflows=entries, history=[*parent.history, event]), now=now
    )
    return replace_at(top, parent_path, new_parent)


def _validate(s: SessionCall, workflow: Workflow, target: str, target_activity: Activity | None) -> None:
    call, args = s.call, s.call.args
    current = s.state.current_activity
    if not current:
        initial = workflow.initial_activity
        if initial and target != initial:
            call.warn(f"First activity must be '{initial}' (initialActivity from get_workflow); got '{target}'")
    else:
        call.warn(transition_warning(workflow, current, target))
    previous = workflow.get_activity(current) if current else None
    if current and previous is not None:
        manifest = args.get("step_manifest")
        if manifest is None:
            call.warn(
                f"No step_manifest provided for previous activity '{current}'; include one so step completion "
                "can be checked"
            )
        else:
            for warning in step_manifest_warnings(previous, manifest):
                call.warn(warning)
            for warning in fetch_warnings(previous, manifest, s.state.history, agent_id=call.agent_id):
                call.warn(warning)
        if current != target:
            for key in ("transition_condition", "exit"):
                claimed = args.get(key)
                if claimed is not None and not (key == "exit" and claimed == target):
                    call.warn(condition_warning(previous, target, claimed))
    if "activity_manifest" in args:
        for warning in activity_manifest_warnings(workflow, args["activity_manifest"]):
            call.warn(warning)


def next_activity(call: McpCall) -> McpReply:
    args = call.args
    s = call.open(lock=True)
    target = args["activity_id"]
    returning = args.get("returning_activity_id")
    if returning is not None and returning != s.state.current_activity:
        raise _stale(s, returning)
    workflow = s.workflow()
    target_activity = None if target == TERMINAL_ACTIVITY else s.activity(target)
    _validate(s, workflow, target, target_activity)

    previous = s.state.current_activity
    for entry in args.get("step_manifest") or []:
        if previous and str(entry.get("output", "")).strip():
            data = {"stepId": entry["step_id"]}
            if call.agent_id:
                data["agentId"] = call.agent_id
            s.record("step_completed", activity=previous, data=data)
    for name, value in (args.get("variables_changed") or {}).items():
        s.set_variable(name, value, "variables_changed", activity=previous or None, workflow=workflow)
    if previous:
        s.record("activity_exited", activity=previous)
        if previous not in s.state.completed_activities and previous != TERMINAL_ACTIVITY:
            s.update(completed_activities=[*s.state.completed_activities, previous])
    # Once per manifested activity and visit: a later transition repeating an outcome adds nothing. An
    # outcome for the activity this call enters (not a re-entry of the one it leaves) belongs to the visit
    # being entered, so it is recorded after that ``activity_entered``: before it, the entry would reset the
    # visit and the next call repeating the manifest would record the same outcome a second time.
    recorded = outcomes_recorded(s.state.history)
    entering: list[dict[str, Any]] = []
    for entry in args.get("activity_manifest") or []:
        if entry["activity_id"] in recorded:
            continue
        recorded.add(entry["activity_id"])
        if entry["activity_id"] == target and target != previous:
            entering.append(entry)
        else:
            _record_outcome(s, entry)
    _merge_artifacts(s, args.get("artifacts_produced") or [])
    claimed = args.get("transition_condition")
    if claimed is None and args.get("exit") not in (None, target):
        claimed = args.get("exit")
    s.update(current_activity=target, condition=claimed or "", current_technique="")
    s.record("activity_entered", activity=target)
    for entry in entering:
        _record_outcome(s, entry)
    if "progress_published" in args:
        s.record("progress_published", activity=target, data={"published": args["progress_published"]})

    completing = target in (COMPLETE_ACTIVITY, TERMINAL_ACTIVITY) and s.state.status == "running"
    top_edit = None
    if completing:
        s.record("workflow_completed", activity=target)
        s.update(status="completed")
        if s.depth > 0:
            now = s.server.now()
            path = s.handle.path

            def top_edit(top: SessionFile) -> SessionFile:
                return _completed_parent(top, path, state_at(top, path), now)

    s.save(top_edit=top_edit)

    extra: dict[str, Any] = {}
    token = s.server.traces.token_for(s.index, target, now=s.server.now())
    if token is not None:
        extra["trace_token"] = token
    if call.agent_id and "context_tokens" in args:
        settings = s.server.settings
        extra["batch"] = batch_block(
            s.state.history,
            scope=call.agent_id,
            session_agent=s.state.agent_id,
            context_tokens=args["context_tokens"],
            max_activities=settings.batch_max_activities,
            headroom_fraction=settings.batch_headroom_fraction,
            chars_per_token=settings.bundle_chars_per_token,
        )
    name = target_activity.name if target_activity is not None else "Workflow Complete"
    return s.json({"activity_id": target, "name": name, "session_index": s.index}, **extra)


def _record_outcome(s: SessionCall, entry: dict[str, Any]) -> None:
    data = {"outcome": entry.get("outcome", "")}
    if entry.get("transition_condition") is not None:
        data["transitionCondition"] = entry["transition_condition"]
    s.record("activity_outcome", activity=entry["activity_id"], data=data)


def outcomes_recorded(history: Sequence[HistoryEvent]) -> set[str]:
    """Activities whose outcome is already recorded for their latest visit (since their last
    ``activity_entered``; an activity never entered here counts from the start of the history)."""
    recorded: set[str] = set()
    for event in history:
        if event.type == "activity_entered" and event.activity:
            recorded.discard(event.activity)
        elif event.type == "activity_outcome" and event.activity:
            recorded.add(event.activity)
    return recorded


def _merge_artifacts(s: SessionCall, produced: list[dict[str, Any]]) -> None:
    """Merge newly declared artifacts by id, then check the planning folder (warning 13) on every move."""
    if produced:
        merged = {a.id: a for a in s.state.declared_artifacts or []}
        for item in produced:
            merged[item["id"]] = DeclaredArtifact(id=item["id"], name=item["name"], path=item.get("path"))
        s.update(declared_artifacts=list(merged.values()))
    folder = s.planning_folder
    if folder is not None:
        for warning in artifact_warnings(folder, s.planning_folder_path, s.state.declared_artifacts or [], produced):
            s.call.warn(warning)


_STEP_ITEM = obj(
    {"step_id": string("Step id from the activity's steps[]."), "output": string("Short summary of what it produced.")},
    required=("step_id", "output"),
)
_ACTIVITY_ITEM = obj(
    {
        "activity_id": string("Completed activity."),
        "outcome": string("What it achieved."),
        "transition_condition": string("Condition of the exit it took."),
    },
    required=("activity_id", "outcome"),
)
_ARTIFACT_ITEM = obj(
    {
        "id": string("Artifact id (merge key)."),
        "name": string("File name."),
        "path": string("Path, absolute or relative to the planning folder."),
    },
    required=("id", "name"),
)

GET_WORKFLOW = ToolSpec(
    "get_workflow",
    "Load the session's workflow: the orchestrator technique bundle, a '---' separator, then the metadata "
    "(rules, variables, initialActivity — the id of the first next_activity — and every activity with its "
    "exits) plus planning_folder_path, the one place session artifacts go.",
    params({"session_index": SESSION_INDEX}, required=("session_index",)),
    get_workflow,
)
NEXT_ACTIVITY = ToolSpec(
    "next_activity",
    "Move the session to an activity (the orchestrator's advance; it does not return the activity body — the "
    "worker calls get_activity). First call: initialActivity from get_workflow; later: an exit of the current "
    "activity. step_manifest, activity_manifest, transition_condition and exit are checked and produce "
    "warnings, never errors. Returns {activity_id, name, session_index}; _meta.trace_token signs the calls "
    "since the previous move.",
    params(
        {
            "session_index": SESSION_INDEX,
            "activity_id": string("Activity to move to ('__terminal__' ends the workflow).", min_length=1),
            "transition_condition": string("Condition of the exit taken ('default' for the default exit)."),
            "step_manifest": arr("Steps completed in the previous activity, in order.", _STEP_ITEM),
            "activity_manifest": arr("Activities completed so far with their outcomes.", _ACTIVITY_ITEM),
            "variables_changed": obj(closed=False, description="Variables the previous activity set."),
            "artifacts_produced": arr("Artifacts the previous activity wrote.", _ARTIFACT_ITEM),
            "agent_id": AGENT_ID,
            "context_tokens": integer("Caller's context window in tokens (for _meta.batch).", exclusive_minimum=0),
            "progress_published": boolean("Whether progress was published on entering this activity."),
            "exit": string("Exit taken: the target id, 'default', or 'checkpoint:<cp>:<option>'."),
            "returning_activity_id": string("The activity this caller believes is current (stale-position check)."),
        },
        required=("session_index", "activity_id"),
    ),
    next_activity,
)
