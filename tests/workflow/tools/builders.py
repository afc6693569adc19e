"""Builders shared by the delivery tools' unit tests: activities, history events, a looped step tree (helpers only)."""

from __future__ import annotations

from typing import Any

import msgspec

from orchestrator.workflow.corpus import Activity, Step
from orchestrator.workflow.session.sessionfile import HistoryEvent, new_history


def activity(steps: list[dict[str, Any]], *, id: str = "act", max_chars: int | None = None) -> Activity:
    parsed = msgspec.convert(steps, tuple[Step, ...])
    return Activity(
        id=id,
        version="1.0.0",
        name=id,
        description=None,
        required=True,
        rules=(),
        outcome=(),
        techniques=(),
        bundle_max_chars=max_chars,
        steps=parsed,
        decisions=(),
        transitions=(),
        triggers=(),
        artifact_prefix="01",
        source_workflow="wf",
        source_file=f"wf/activities/01-{id}.yaml",
        raw={"id": id},
    )


def event(type: str, activity: str | None = None, **data: Any) -> HistoryEvent:
    return new_history(type, now=1_700_000_000, activity=activity, data=data or None)  # type: ignore[arg-type]


def dispatched(agent: str, act: str, chars: Any = 1000, **extra: Any) -> HistoryEvent:
    return event("activity_dispatched", act, agentId=agent, dispatch="fresh", chars=chars, **extra)


LOOPED = [
    {"kind": "technique", "id": "first", "technique": {"name": "t1", "outputs": {"out": "result"}}},
    {
        "kind": "loop",
        "id": "each",
        "loopType": "forEach",
        "variable": "item",
        "over": "items",
        "when": "go == true",
        "steps": [
            {"kind": "technique", "id": "inner", "technique": "t2"},
            {"kind": "technique", "id": "gated", "technique": "t3", "when": "result == 1"},
        ],
    },
    {"kind": "action", "id": "act", "actions": [{"action": "set", "target": "flag.sub"}]},
    {
        "kind": "checkpoint",
        "id": "cp",
        "message": "m",
        "autoAdvanceMs": 1000,
        "defaultOption": "a",
        "options": [{"id": "a", "label": "A", "effect": {"setVariable": {"picked": 1}, "recordReply": "reply"}}],
    },
]
