"""The projections ``inspect_session`` returns, pure functions of one ``SessionFile``.

``render_view(state, view)`` returns ``{<view>: payload}`` for one view, or every summary view
(identity, activities, variables, checkpoints, history, children) for ``summary``; ``usage`` is separate.
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import datetime
from typing import Any

from orchestrator.workflow.session.sessionfile import HistoryEvent, SessionFile

__all__ = ["SUMMARY_VIEWS", "VIEWS", "render_view", "usage_view"]

SUMMARY_VIEWS = ("identity", "activities", "variables", "checkpoints", "history", "children")
VIEWS = ("summary", *SUMMARY_VIEWS, "usage")
MILESTONES = frozenset(
    {
        "activity_entered",
        "activity_exited",
        "checkpoint_reached",
        "checkpoint_response",
        "workflow_triggered",
        "workflow_completed",
    }
)
TOTAL_KEYS = ("input_tokens", "output_tokens", "total_tokens", "subagent_tokens")


def _identity(state: SessionFile) -> dict[str, Any]:
    out: dict[str, Any] = {
        "workflowId": state.workflow_id,
        "workflowVersion": state.workflow_version,
        "sessionIndex": state.session_index,
        "agentId": state.agent_id,
        "status": state.status,
        "currentActivity": state.current_activity,
        "currentTechnique": state.current_technique,
        "startedAt": state.started_at,
        "seq": state.seq,
    }
    if state.repo:
        out["repo"] = state.repo
    if state.planning_folder_path:
        out["planningFolderPath"] = state.planning_folder_path
    return out


def _variables(state: SessionFile, variable: str | None) -> Any:
    if variable is None:
        return dict(state.variables)
    if variable in state.variables:
        return state.variables[variable]
    return {"variable": variable, "present": False}


def _checkpoints(state: SessionFile) -> dict[str, Any]:
    return {
        key: {
            "optionId": response.option_id,
            "respondedAt": response.responded_at,
            "variablesSet": dict(response.effects.variables_set or {}) if response.effects is not None else {},
        }
        for key, response in state.checkpoint_responses.items()
    }


def _activities(state: SessionFile) -> dict[str, Any]:
    outcomes: list[dict[str, Any]] = []
    published: dict[str, bool] = {}
    for event in state.history:
        data = event.data or {}
        if event.type == "activity_outcome":
            row: dict[str, Any] = {"activity": event.activity, "outcome": data.get("outcome", "")}
            if data.get("transitionCondition") is not None:
                row["transitionCondition"] = data["transitionCondition"]
            outcomes.append(row)
        elif event.type == "progress_published" and event.activity:
            published[event.activity] = bool(data.get("published"))
    return {
        "completed": list(state.completed_activities),
        "skipped": list(state.skipped_activities),
        "current": state.current_activity,
        "outcomes": outcomes,
        "progress_mark_unpublished": [a for a in state.completed_activities if published.get(a) is False],
        "progress_mark_unreported": [a for a in state.completed_activities if a not in published],
    }


def _milestone(event: HistoryEvent) -> dict[str, Any]:
    row: dict[str, Any] = {"timestamp": event.timestamp, "type": event.type}
    if event.activity:
        row["activity"] = event.activity
    if event.checkpoint:
        row["checkpoint"] = event.checkpoint
    data = event.data or {}
    for key in ("optionId", "workflowId", "sessionIndex", "agentId"):
        if key in data:
            row[key] = data[key]
    return row


def _history(state: SessionFile, agent_id: str | None) -> dict[str, Any]:
    events = [e for e in state.history if agent_id is None or (e.data or {}).get("agentId") == agent_id]
    return {
        "count": len(events),
        "byType": dict(Counter(e.type for e in events)),
        "milestones": [_milestone(e) for e in events if e.type in MILESTONES],
    }


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) else None


def _usage_rows(state: SessionFile) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for event in state.history:
        if event.type != "activity_usage":
            continue
        data = event.data or {}
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        row: dict[str, Any] = {
            "activity": event.activity,
            "timestamp": event.timestamp,
            "usage": usage,
            "basis": data.get("basis") or "unstated",
        }
        if data.get("agentId"):
            row["agentId"] = data["agentId"]
        wall = _number(usage.get("wall_clock_ms")) if usage else None
        if wall is not None:
            row["wall_clock_ms"] = wall
        rows.append(row)
    return rows


def _totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    totals: dict[str, Any] = {}
    for row in rows:
        if row["basis"] != "delta":
            continue
        for key in TOTAL_KEYS:
            value = _number(row["usage"].get(key))
            if value is not None:
                totals[key] = totals.get(key, 0) + value
    return totals


def _ms_between(start: str, end: str) -> int | None:
    try:
        return int((datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds() * 1000)
    except ValueError:
        return None


def usage_view(state: SessionFile) -> dict[str, Any]:
    """Usage rows, delta totals, latest cumulative per agent and what is missing."""
    rows = _usage_rows(state)
    latest: dict[str, Any] = {}
    for row in rows:
        if row["basis"] == "cumulative":
            latest[row.get("agentId") or state.agent_id] = row["usage"]
    covered = {row["activity"] for row in rows}
    out: dict[str, Any] = {
        "rows": rows,
        "totals": _totals(rows),
        "cumulative_latest_by_agent": latest,
        "unstated_basis": sum(1 for row in rows if row["basis"] == "unstated"),
    }
    if state.history:
        elapsed = _ms_between(state.started_at, state.history[-1].timestamp)
        if elapsed is not None:
            out["elapsed_ms"] = elapsed
    out["wall_clock_ms_not_additive"] = True
    out["activities_without_usage"] = [a for a in state.completed_activities if a not in covered]
    out["children_outside_totals"] = [
        entry.session_index
        for entry in state.triggered_workflows
        if entry.state is not None and any(e.type == "activity_usage" for e in entry.state.history)
    ]
    return out


def _children(state: SessionFile) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for slot, entry in enumerate(state.triggered_workflows):
        child = entry.state
        rows = _usage_rows(child) if child is not None else []
        out.append(
            {
                "index": slot,
                "sessionIndex": entry.session_index,
                "workflowId": entry.workflow_id,
                "status": entry.status,
                "currentActivity": child.current_activity if child is not None else "",
                "completed": list(child.completed_activities) if child is not None else [],
                "cost_known": bool(rows),
                "rows": len(rows),
                "totals": _totals(rows),
            }
        )
    return out


def render_view(state: SessionFile, view: str, *, variable: str | None = None, agent_id: str | None = None) -> Any:
    """One view's own projection, or ``{view name: projection}`` of the summary views for ``summary``.

    ``variables`` with ``variable`` is that variable's bare value; an unset one is
    ``{"variable": <name>, "present": false}``."""
    builders = {
        "identity": lambda: _identity(state),
        "activities": lambda: _activities(state),
        "variables": lambda: _variables(state, variable),
        "checkpoints": lambda: _checkpoints(state),
        "history": lambda: _history(state, agent_id),
        "children": lambda: _children(state),
        "usage": lambda: usage_view(state),
    }
    if view == "summary":
        return {name: builders[name]() for name in SUMMARY_VIEWS}
    return builders[view]()
