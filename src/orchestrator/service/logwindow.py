"""The run log read incrementally: the ``RunAggregate`` fold (pure, no I/O).

``fold(agg, event, index)`` folds one log event (a ``read_events`` dict) into the aggregate a run view
and a scoped log window are finalized from, so a poll only folds the events appended since the last
one. Everything kept is bounded by the run's structure (roles, instances, questions, interrupts),
except each instance's list of its own event indices, which is what makes ``?instance=`` windows cheap.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from orchestrator import vocabulary as names
from orchestrator.runlog.fold import instance_key
from orchestrator.service.logline import Event, as_mapping, render_line

__all__ = [
    "RECENT_ROWS",
    "Instance",
    "RoleStats",
    "RunAggregate",
    "aggregate",
    "fold",
]

#: ``recentLog`` keeps the last this many identity rows.
RECENT_ROWS = 200
#: the interrupt trigger of the periodic loop check, listed in the interrupt history with its verdict
LOOP_CHECK = "loop_check"

#: Turn events an instance owns (matched on roleId, else attributed by role name).
TURN_TYPES = frozenset({names.LLM_CALL_START, names.LLM_CALL, names.LLM_UNAVAILABLE, names.CONTEXT_BUDGET_EXCEEDED})
#: Events whose ``role`` names an instance other than the actor; not counted in ``roles[]``.
_NOT_ACTOR = frozenset({names.OBSERVE, names.TERMINATE})
#: Tools whose successful results tell what a file held (``files``).
_FILE_TOOLS = frozenset({"read_file", "write_file"})


# --- the aggregate -------------------------------------------------------------------------------


@dataclass(slots=True)
class Instance:
    """One role instance as the log shows it; ``own`` = indices of its turns and lifecycle, ascending."""

    role_id: str
    role: str
    depth: int = 0
    parent: str | None = None
    parent_id: str | None = None
    task: str = ""
    start: int | None = None
    finish: int | None = None
    status: str | None = None
    summary: str | None = None
    own: list[int] = field(default_factory=list)
    turn_open: bool = False
    tool_open: str | None = None
    since: str | None = None
    tools: list[int] = field(default_factory=list)  # indices of its tool_call / tool_result events


@dataclass(slots=True)
class RoleStats:
    """``roles[]`` entry accumulator for one role name."""

    role: str
    first_seen: str
    last_seen: str
    event_count: int = 0
    llm_calls: int = 0
    tool_calls: int = 0
    recent_tools: list[str] = field(default_factory=list)
    last_prompt_tokens: int | None = None


class RunAggregate:
    """Everything a run view and an instance-scoped window need, folded event by event."""

    def __init__(self) -> None:
        self.count = 0
        self.first_timestamp: str | None = None
        self.last_timestamp: str | None = None
        self.effort: str | None = None
        self.instances: dict[str, Instance] = {}
        self.roots: list[str] = []
        self.children: dict[str, list[str]] = {}
        self.open: dict[str, None] = {}  # live instances in start order (last = innermost)
        self.roles: dict[str, RoleStats] = {}
        self.turns: dict[str, list[int]] = {}  # fold_request's instance key → llm_call indices
        self.questions: dict[str, dict[str, Any]] = {}
        self.interrupts: list[dict[str, Any]] = []
        self.tool_calls = 0
        self.usage_seen = False
        self.tokens = {"promptTokens": 0, "cachedPromptTokens": 0, "completionTokens": 0, "totalTokens": 0}
        self.recent: deque[dict[str, Any]] = deque(maxlen=RECENT_ROWS)
        #: path → indices of successful read_file / write_file results of it (what a write replaced)
        self.files: dict[str, list[int]] = {}
        self._latest_at: dict[tuple[str | None, int], str] = {}  # (role, depth) / (None, depth) → id

    # -- helpers --

    def _instance(self, role_id: str, role: str) -> Instance:
        inst = self.instances.get(role_id)
        if inst is None:
            inst = self.instances[role_id] = Instance(role_id=role_id, role=role)
        return inst

    def innermost(self, role: str | None = None) -> Instance | None:
        """The innermost live instance (named ``role`` when given): single-flight makes it the actor."""
        for role_id in reversed(self.open):
            inst = self.instances[role_id]
            if role is None or inst.role == role:
                return inst
        return None

    def attribute(self, payload: Mapping[str, Any]) -> Instance | None:
        """The instance an event belongs to: its ``roleId``, else the innermost live same-named one."""
        role_id, role = payload.get("roleId"), str(payload.get("role") or "")
        if isinstance(role_id, str) and role_id:
            return self._instance(role_id, role)
        return self.innermost(role) if role else None

    def resolve_parent(self, payload: Mapping[str, Any], depth: int) -> str | None:
        """``parentRoleId``; old logs: the latest earlier start named ``parent`` at ``depth − 1``."""
        parent_id = payload.get("parentRoleId")
        if isinstance(parent_id, str) and parent_id:
            return parent_id
        if depth <= 0:
            return None
        parent = payload.get("parent")
        return self._latest_at.get((parent if isinstance(parent, str) else None, depth - 1))

    def ancestors(self, inst: Instance) -> list[Instance]:
        """The started ancestors, parent first; an ancestor with no ``role_start`` ends the walk."""
        chain: list[Instance] = []
        seen = {inst.role_id}
        parent_id = inst.parent_id
        while parent_id is not None and parent_id not in seen:
            parent = self.instances.get(parent_id)
            if parent is None or parent.start is None:
                break
            chain.append(parent)
            seen.add(parent_id)
            parent_id = parent.parent_id
        return chain

    # -- the fold --

    def add(self, event: Event, index: int, *, row: bool = True) -> None:
        """Fold ``event`` (log-wide position ``index``). Already-folded indices are ignored.

        ``row=False`` skips its ``recentLog`` row: for a catch-up that knows the row would be pushed out.
        Raises: ValueError when ``index`` skips ahead (an event was never folded).
        """
        if index < self.count:
            return
        if index > self.count:
            raise ValueError(f"event {index} folded before event {self.count}")
        self.count += 1
        kind = str(event.get("type", ""))
        p = as_mapping(event.get("payload"))
        ts = str(event.get("timestamp", ""))
        self.first_timestamp = self.first_timestamp or ts
        self.last_timestamp = ts
        if row:
            self.recent.append({"index": index, "timestamp": ts, "type": kind, "text": render_line(event)})
        self._count_role(kind, p, ts)
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, kind, p, ts, index)

    def _count_role(self, kind: str, p: Mapping[str, Any], ts: str) -> None:
        role = p.get("role")
        if kind in _NOT_ACTOR or not isinstance(role, str) or not role:
            return
        stats = self.roles.get(role)
        if stats is None:
            stats = self.roles[role] = RoleStats(role=role, first_seen=ts, last_seen=ts)
        stats.last_seen = ts
        stats.event_count += 1
        if kind == names.LLM_CALL:
            stats.llm_calls += 1
            prompt = as_mapping(p.get("usage")).get("promptTokens")
            if isinstance(prompt, int):
                stats.last_prompt_tokens = prompt
        elif kind == names.TOOL_CALL:
            stats.tool_calls += 1
            tool = str(p.get("tool"))
            stats.recent_tools = [tool, *(t for t in stats.recent_tools if t != tool)][:3]

    def _role_start(self, kind: str, p: Mapping[str, Any], ts: str, index: int) -> None:
        role, role_id = str(p.get("role") or ""), p.get("roleId")
        if not isinstance(role_id, str) or not role_id:
            role_id = f"{role}@{index}"  # a log predating instance ids: the start's position names it
        inst = self._instance(role_id, role)
        if inst.start is not None:  # a duplicate straddling a resume
            return
        depth = p.get("depth") if isinstance(p.get("depth"), int) else 0
        inst.depth, inst.task, inst.start, inst.since = depth, str(p.get("task") or ""), index, ts
        inst.parent = p.get("parent") if isinstance(p.get("parent"), str) else None
        inst.parent_id = self.resolve_parent(p, depth)
        inst.own.append(index)
        if inst.parent_id is None:
            self.roots.append(role_id)
        else:
            self.children.setdefault(inst.parent_id, []).append(role_id)
        self._latest_at[(role, depth)] = self._latest_at[(None, depth)] = role_id
        if inst.finish is None:
            self.open[role_id] = None

    def _role_finished(self, kind: str, p: Mapping[str, Any], ts: str, index: int) -> None:
        inst = self.attribute(p)
        if inst is None or inst.finish is not None:
            return
        inst.finish, inst.status, inst.since = index, str(p.get("status") or ""), ts
        inst.summary = p.get("summary") if isinstance(p.get("summary"), str) else None
        inst.turn_open, inst.tool_open = False, None
        inst.own.append(index)
        self.open.pop(inst.role_id, None)

    def _turn(self, kind: str, p: Mapping[str, Any], ts: str, index: int) -> None:
        inst = self.attribute(p)
        if inst is not None:
            inst.own.append(index)
            inst.turn_open, inst.since = kind == names.LLM_CALL_START, ts
        if kind == names.LLM_CALL:
            self.turns.setdefault(instance_key(p), []).append(index)
            usage = p.get("usage")
            if type(usage) is dict or isinstance(usage, Mapping):
                self.usage_seen = True
                for key in self.tokens:
                    value = usage.get(key)
                    self.tokens[key] += value if isinstance(value, int) else 0

    def _retry(self, kind: str, p: Mapping[str, Any], ts: str, index: int) -> None:
        """``llm_retry``: the instance's own event; its turn stays open (the next attempt is on its way)."""
        inst = self.attribute(p)
        if inst is not None:
            inst.own.append(index)

    def _tool(self, kind: str, p: Mapping[str, Any], ts: str, index: int) -> None:
        if kind == names.TOOL_CALL:
            self.tool_calls += 1
        inst = self.attribute(p)
        if inst is not None:
            inst.tool_open, inst.since = (str(p.get("tool")) if kind == names.TOOL_CALL else None), ts
            inst.tools.append(index)
        if kind == names.TOOL_RESULT and p.get("kind") == "success" and p.get("tool") in _FILE_TOOLS:
            path = as_mapping(as_mapping(p.get("result")).get("data")).get("path")
            if isinstance(path, str):
                self.files.setdefault(path, []).append(index)

    def _ask_human(self, kind: str, p: Mapping[str, Any], ts: str, index: int) -> None:
        qid = str(p.get("id"))
        self.questions.setdefault(
            qid,
            {
                "id": qid,
                "question": p.get("question"),
                "context": p.get("context"),
                "role": p.get("role"),
                "roleId": p.get("roleId"),
                "askedAt": ts,
                "answer": None,
                "answeredAt": None,
            },
        )

    def _human_answer(self, kind: str, p: Mapping[str, Any], ts: str, index: int) -> None:
        entry = self.questions.get(str(p.get("id")))
        if entry is not None and entry["answeredAt"] is None:
            entry["answer"], entry["answeredAt"] = p.get("answer"), ts

    def _interrupt(self, kind: str, p: Mapping[str, Any], ts: str, index: int) -> None:
        if p.get("trigger") == LOOP_CHECK:
            self.interrupts.append(_loop_check(index, ts, p.get("handler"), p.get("target")))
        if p.get("trigger") != "inquiry":
            return
        self.interrupts.append(_inquiry(index, ts, p.get("message"), p.get("handler"), p.get("target"), "waiting"))

    def _interrupt_resolved(self, kind: str, p: Mapping[str, Any], ts: str, index: int) -> None:
        if p.get("trigger") == LOOP_CHECK:
            self._loop_verdict(p, ts)
        if p.get("trigger") != "inquiry":
            return
        waiting = [e for e in self.interrupts if e["kind"] == "inquiry" and e["state"] == "waiting"]
        matching = [e for e in waiting if e["target"] == p.get("target")] or waiting
        if not matching:
            return
        entry = matching[-1]
        summary = p.get("summary")
        answered = p.get("action") == "answered" and isinstance(summary, str) and bool(summary.strip())
        entry["state"], entry["resolvedAt"] = ("answered" if answered else "ended"), ts
        entry["answer"] = summary if answered else None

    def _loop_verdict(self, p: Mapping[str, Any], ts: str) -> None:
        """A loop check's decision (``continue`` / ``redirect`` / ``abort``) on its open entry."""
        checking = [e for e in self.interrupts if e["kind"] == LOOP_CHECK and e["state"] == "checking"]
        matching = [e for e in checking if e["target"] == p.get("target")] or checking
        if not matching:
            return
        entry = matching[-1]
        reason = p.get("summary")
        entry["state"], entry["resolvedAt"] = "decided", ts
        entry["verdict"] = p.get("action") if isinstance(p.get("action"), str) else None
        entry["reason"] = reason if isinstance(reason, str) and reason.strip() else None

    def _inquiry_dropped(self, kind: str, p: Mapping[str, Any], ts: str, index: int) -> None:
        self.interrupts.append(_inquiry(index, ts, p.get("message"), None, None, "ended"))

    def _plan_modification(self, kind: str, p: Mapping[str, Any], ts: str, index: int) -> None:
        aborted = p.get("aborted")
        self.interrupts.append(
            {
                "kind": "plan_modification",
                "index": index,
                "at": ts,
                "message": p.get("message"),
                "target": p.get("target"),
                "targetRole": p.get("targetRole"),
                "aborted": list(aborted) if isinstance(aborted, list) else [],
            }
        )

    def _effort_set(self, kind: str, p: Mapping[str, Any], ts: str, index: int) -> None:
        if self.effort is None and isinstance(p.get("effort"), str):
            self.effort = p["effort"]

    def _run_resumed(self, kind: str, p: Mapping[str, Any], ts: str, index: int) -> None:
        """In-flight turns and tools do not survive a restart."""
        for role_id in self.open:
            self.instances[role_id].turn_open = False
            self.instances[role_id].tool_open = None


def _loop_check(index: int, ts: str, handler: Any, target: Any) -> dict[str, Any]:
    """A loop check in the interrupt history: ``checking`` until its verdict arrives."""
    entry = {"kind": LOOP_CHECK, "index": index, "at": ts, "handler": handler, "target": target}
    return {**entry, "state": "checking", "verdict": None, "reason": None, "resolvedAt": None}


def _inquiry(index: int, ts: str, message: Any, handler: Any, target: Any, state: str) -> dict[str, Any]:
    return {
        "kind": "inquiry",
        "index": index,
        "askedAt": ts,
        "message": message,
        "handler": handler,
        "target": target,
        "state": state,
        "answer": None,
        "resolvedAt": ts if state != "waiting" else None,
    }


_Handler = Callable[[RunAggregate, str, Mapping[str, Any], str, int], None]
_HANDLERS: dict[str, _Handler] = {
    names.ROLE_START: RunAggregate._role_start,
    names.ROLE_FINISHED: RunAggregate._role_finished,
    **dict.fromkeys(TURN_TYPES, RunAggregate._turn),
    names.LLM_RETRY: RunAggregate._retry,
    names.TOOL_CALL: RunAggregate._tool,
    names.TOOL_RESULT: RunAggregate._tool,
    names.EFFORT_SET: RunAggregate._effort_set,
    names.ASK_HUMAN: RunAggregate._ask_human,
    names.HUMAN_ANSWER: RunAggregate._human_answer,
    names.INTERRUPT: RunAggregate._interrupt,
    names.INTERRUPT_RESOLVED: RunAggregate._interrupt_resolved,
    names.INQUIRY_DROPPED: RunAggregate._inquiry_dropped,
    names.PLAN_MODIFICATION: RunAggregate._plan_modification,
    names.RUN_RESUMED: RunAggregate._run_resumed,
    names.RUN_STOPPED: RunAggregate._run_resumed,  # nothing in flight survives a stop either
}


def fold(agg: RunAggregate, event: Event, index: int) -> RunAggregate:
    """Fold one event into ``agg`` (mutated and returned); see ``RunAggregate.add``."""
    agg.add(event, index)
    return agg


def aggregate(events: Sequence[Event], agg: RunAggregate | None = None) -> RunAggregate:
    """Fold ``events[agg.count:]`` into ``agg`` (a fresh aggregate when none): the catch-up of a poll."""
    agg = agg if agg is not None else RunAggregate()
    end = len(events)
    for index in range(agg.count, end):
        agg.add(events[index], index, row=index >= end - RECENT_ROWS)
    return agg
