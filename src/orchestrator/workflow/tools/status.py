"""Read-side and bookkeeping tools: ``get_workflow_status``, ``inspect_session``, ``record_usage``,
``get_trace``.

get_workflow_status and inspect_session never write and work under an active checkpoint; record_usage
appends one ``activity_usage`` event (allowed under the lock); get_trace is refused under the lock and only
bumps ``seq``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from orchestrator.workflow.errors import SessionStoreError, WorkflowError
from orchestrator.workflow.session.sessionfile import SessionFile, state_at
from orchestrator.workflow.session.trace import TraceEvent, TraceTokenError
from orchestrator.workflow.tools.context import McpCall, McpReply, SessionCall, ToolSpec
from orchestrator.workflow.tools.inspect_views import VIEWS, render_view
from orchestrator.workflow.tools.params import AGENT_ID, SESSION_INDEX, arr, integer, obj, params, string

__all__ = ["GET_TRACE", "GET_WORKFLOW_STATUS", "INSPECT_SESSION", "RECORD_USAGE", "session_status"]


def session_status(state: SessionFile) -> str:
    """``blocked`` (active gate), else ``completed``/``aborted`` as stored, else ``active``."""
    if state.active_checkpoint is not None:
        return "blocked"
    if state.status in ("completed", "aborted"):
        return state.status
    return "active"


def _last_checkpoint(state: SessionFile) -> dict[str, Any] | None:
    for event in reversed(state.history):
        if event.type == "checkpoint_response":
            data = event.data or {}
            return {
                "activity_id": event.activity or data.get("activityId"),
                "checkpoint_id": event.checkpoint or data.get("checkpointId"),
                "option_id": data.get("optionId"),
                "timestamp": event.timestamp,
            }
    return None


def _title(s: SessionCall) -> str | None:
    try:
        return s.workflow().title
    except WorkflowError:
        return None


def get_workflow_status(call: McpCall) -> McpReply:
    s = call.open()
    state = s.state
    status = session_status(state)
    payload: dict[str, Any] = {
        "status": status,
        "current_activity": state.current_activity or "none",
        "activities_in_flight": [state.current_activity]
        if state.current_activity and state.status == "running"
        else [],
        "completed_activities": list(state.completed_activities),
        "variables": state.variables,
        "workflow": {"id": state.workflow_id, "version": state.workflow_version, "title": _title(s)},
    }
    parent = s.parent()
    if parent is not None:
        payload["parent"] = {
            "session_index": parent.session_index,
            "workflow_id": parent.workflow_id,
            "activity": parent.current_activity,
            "version": parent.workflow_version,
        }
    last = _last_checkpoint(state)
    if last is not None:
        payload["last_checkpoint"] = last
    active = state.active_checkpoint
    if active is not None:
        payload["active_checkpoint"] = {
            "checkpoint_id": active.checkpoint_id,
            "activity_id": active.activity_id,
            "yielded_at": active.yielded_at,
            "adhoc": active.adhoc is not None,
        }
    payload["children"] = [
        {"index": slot, "session_index": entry.session_index, "workflow_id": entry.workflow_id, "status": entry.status}
        for slot, entry in enumerate(state.triggered_workflows)
    ]
    payload["session_index"] = s.index
    return s.json(payload)


def inspect_session(call: McpCall) -> McpReply:
    """The answer is the view's own shape: the summary object, one view's object, or one variable's bare
    value. Which session, view and child it describes travel in ``_meta`` (``view``, ``child_index``)."""
    args = call.args
    s = call.open()
    state = s.state
    extra: dict[str, Any] = {}
    if "child_index" in args:
        slot = args["child_index"]
        try:
            state = state_at(s.handle.top, (*s.handle.path, slot))
        except LookupError:
            raise SessionStoreError(
                "NOT_FOUND",
                f"session {s.index} has no child at child_index {slot} "
                f"({len(s.state.triggered_workflows)} child session(s) listed under triggeredWorkflows)",
            ) from None
        extra["child_index"] = slot
        extra["child_session_index"] = state.session_index
    view = args.get("view", "summary")
    extra["view"] = view
    return s.json(render_view(state, view, variable=args.get("variable"), agent_id=call.agent_id), **extra)


def record_usage(call: McpCall) -> McpReply:
    args = call.args
    s = call.open()
    data: dict[str, Any] = {"usage": args["usage"], "basis": args["basis"]}
    if call.agent_id:
        data["agentId"] = call.agent_id
    s.record("activity_usage", activity=args["activity"], data=data)
    s.save()
    count = sum(1 for event in s.state.history if event.type == "activity_usage")
    return s.json(
        {
            "status": "recorded",
            "activity": args["activity"],
            "session_index": s.index,
            "usage_events": count,
            "message": f"Recorded {args['basis']} usage for activity '{args['activity']}' "
            f"({count} usage event(s) in this session).",
        }
    )


def _event_dicts(events: list[TraceEvent], agent_id: str | None) -> list[dict[str, Any]]:
    return [msgspec.to_builtins(e) for e in events if agent_id is None or e.aid == agent_id]


def get_trace(call: McpCall) -> McpReply:
    args = call.args
    s = call.open(lock=True)
    traces = s.server.traces
    tokens = args.get("trace_tokens")
    payload: dict[str, Any] = {"traceId": s.index}
    if tokens:
        events: list[TraceEvent] = []
        errors: list[str] = []
        for position, token in enumerate(tokens):
            try:
                decoded = traces.decode_token(token)
            except TraceTokenError as exc:
                errors.append(f"token {position}: {exc}")
                continue
            if decoded.sid != s.index:
                errors.append(f"token {position}: belongs to session {decoded.sid}, not {s.index}")
                continue
            events.extend(decoded.events)
        listed = _event_dicts(events, call.agent_id)
        payload.update(source="tokens", event_count=len(listed), events=listed, session_index=s.index)
        if errors:
            payload["token_errors"] = errors
    else:
        listed = _event_dicts(traces.events(s.index), call.agent_id)
        payload.update(
            source="memory", event_count=len(listed), events=listed, session_index=s.index, tracing_enabled=True
        )
    s.save()  # nothing changes but seq (and ts)
    return s.json(payload)


GET_WORKFLOW_STATUS = ToolSpec(
    "get_workflow_status",
    "The orchestrator's poll (read-only, works while a checkpoint is open): status active|blocked|completed|"
    "aborted, current activity, activities in flight, completed activities, the variable bag, the last "
    "checkpoint answered, the open checkpoint, the parent and the child sessions with their statuses.",
    params({"session_index": SESSION_INDEX}, required=("session_index",)),
    get_workflow_status,
)
INSPECT_SESSION = ToolSpec(
    "inspect_session",
    "Read-only projection of a session's stored state (never the raw file; works while a checkpoint is open). "
    "view: summary (default), identity, variables, checkpoints, activities, history, children or usage. "
    "child_index looks one level into a child listed under triggeredWorkflows; variable (with view variables) "
    "reads one value; agent_id filters the history view.",
    params(
        {
            "session_index": SESSION_INDEX,
            "view": string("Projection to return (default summary).", enum=VIEWS),
            "child_index": integer("Slot of a child under triggeredWorkflows.", minimum=0),
            "variable": string("One variable to read (view variables)."),
            "agent_id": AGENT_ID,
        },
        required=("session_index",),
    ),
    inspect_session,
)
RECORD_USAGE = ToolSpec(
    "record_usage",
    "Orchestrator tool: record harness-reported token usage for ONE completed activity, with its basis: delta "
    "(that activity's own spend) or cumulative (the context's running total). Call at every activity boundary; "
    "agent_id attributes the row to a worker context.",
    params(
        {
            "session_index": SESSION_INDEX,
            "activity": string("The activity the usage belongs to.", min_length=1),
            "usage": obj(closed=False, description="Usage counters as the harness reports them, e.g. input_tokens."),
            "basis": string("delta or cumulative.", enum=("delta", "cumulative")),
            "agent_id": AGENT_ID,
        },
        required=("session_index", "activity", "usage", "basis"),
    ),
    record_usage,
)
GET_TRACE = ToolSpec(
    "get_trace",
    "The session's tool-call trace. Without trace_tokens: the live in-memory buffer (source memory). With the "
    "trace_tokens collected from next_activity: the events they carry, verified (source tokens; a bad token is "
    "listed under token_errors). agent_id keeps only that agent's calls.",
    params(
        {
            "session_index": SESSION_INDEX,
            "trace_tokens": arr("Tokens from next_activity _meta.trace_token.", string("A trace token.")),
            "agent_id": AGENT_ID,
        },
        required=("session_index",),
    ),
    get_trace,
)
