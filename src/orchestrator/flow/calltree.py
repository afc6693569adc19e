"""Whole-run derivations folded from ``log.jsonl``: the call tree, the waterfall and the run's totals.

``TreeState`` is a fold (``fold_tree(state, event)``) kept beside the flow state by the run index, so a
poll folds only the new events; ``call_tree``, ``waterfall`` and ``totals`` finalize it into wire Structs
without touching it. Unlike the flow model these describe the *whole* run whatever the flow window.

Per role instance (keyed by ``roleId``; events without one go to the newest open instance of that role):

- *model time*: from each ``llm_call_start`` to its ``llm_call`` (or ``llm_unavailable`` /
  ``context_budget_exceeded``);
- *tool time*: from each ``tool_call`` to its ``tool_result`` — tools other than ``agent``, ``ask_human``
  and ``finish`` (a delegation's time is the child's; a question's is human time);
- *human time*: from an ``ask_human`` to the ``human_answer`` with the same id.

An interval still open is counted up to ``now`` while the run is active and dropped otherwise. Pure: no
I/O; timestamps are parsed once, when folded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from orchestrator import vocabulary as names
from orchestrator.flow.foldstate import epoch
from orchestrator.flow.model import TypeTotal
from orchestrator.flow.outcome import Verdict, classify_card, classify_tool_result

__all__ = [
    "CallTree",
    "TreeNode",
    "TreeState",
    "TypeTotal",
    "Waterfall",
    "WaterfallRow",
    "call_tree",
    "fold_tree",
    "totals",
    "waterfall",
]

_NOT_TOOL_TIME = frozenset({"agent", "ask_human", "finish"})
_TURN_ENDS = frozenset({names.LLM_CALL, names.LLM_UNAVAILABLE, names.CONTEXT_BUDGET_EXCEEDED})
_ACTIVE = frozenset({"running", "needs_clarification", "unknown", None})


def _ms(start: float | None, end: float | None) -> int:
    if start is None or end is None:
        return 0
    return max(0, round((end - start) * 1000))


class _Instance:
    """What the fold keeps per role instance (mutable while the instance is open)."""

    __slots__ = (
        "cached",
        "children",
        "depth",
        "ended",
        "ended_at",
        "fails",
        "human_ms",
        "instance_id",
        "model_ms",
        "open_human",
        "open_tools",
        "open_turn",
        "parent",
        "role",
        "started",
        "started_at",
        "status",
        "tokens",
        "tool_calls",
        "tool_ms",
        "turns",
        "verdict",
        "warns",
    )

    def __init__(self, instance_id: str, role: str, parent: str | None, depth: int, at: str, t: float | None) -> None:
        self.instance_id = instance_id
        self.role = role
        self.parent = parent
        self.depth = depth
        self.started_at = at
        self.started = t
        self.ended_at: str | None = None
        self.ended: float | None = None
        self.status = "running"
        self.verdict: Verdict | None = None
        self.tokens = 0
        self.cached = 0
        self.turns = 0
        self.model_ms = 0
        self.tool_ms = 0
        self.human_ms = 0
        self.tool_calls = 0
        self.warns = 0
        self.fails = 0
        self.open_turn: float | None = None
        self.open_tools: list[tuple[str, float | None]] = []
        self.open_human: dict[str, float | None] = {}
        self.children: list[str] = []


class _Type:
    __slots__ = ("cached", "count", "errors", "kind", "ms", "name", "tokens")

    def __init__(self, kind: str, name: str) -> None:
        self.kind = kind
        self.name = name
        self.count = 0
        self.tokens = 0
        self.cached = 0
        self.ms = 0
        self.errors = 0


class TreeState:
    """The fold's state: every instance in start order, the open ones, per-type totals."""

    def __init__(self) -> None:
        self.instances: dict[str, _Instance] = {}
        self.roots: list[str] = []
        self.open_by_role: dict[str, list[str]] = {}
        self.types: dict[str, _Type] = {}
        self.asked: dict[str, str] = {}  # question id → instance id
        self.events = 0
        self.first: float | None = None
        self.last: float | None = None

    def type(self, kind: str, name: str) -> _Type:
        key = f"{kind}:{name}"
        found = self.types.get(key)
        if found is None:
            found = self.types[key] = _Type(kind, name)
        return found

    def owner(self, p: Mapping[str, Any]) -> _Instance | None:
        rid = p.get("roleId")
        if isinstance(rid, str) and rid in self.instances:
            return self.instances[rid]
        stack = self.open_by_role.get(str(p.get("role")))
        return self.instances[stack[-1]] if stack else None


def _role_start(s: TreeState, p: Mapping[str, Any], at: str, t: float | None) -> None:
    role = p.get("role")
    rid = p.get("roleId")
    if not isinstance(role, str):
        return
    if not isinstance(rid, str):
        rid = f"{role}#{len(s.instances) + 1}"
    if rid in s.instances:
        return  # a restart-boundary duplicate
    parent = p.get("parentRoleId")
    parent = parent if isinstance(parent, str) and parent in s.instances else None
    depth = p.get("depth")
    node = _Instance(rid, role, parent, depth if isinstance(depth, int) else 0, at, t)
    s.instances[rid] = node
    (s.instances[parent].children if parent else s.roots).append(rid)
    s.open_by_role.setdefault(role, []).append(rid)
    s.type("role", role).count += 1


def _role_finished(s: TreeState, p: Mapping[str, Any], at: str, t: float | None) -> None:
    node = s.owner(p)
    if node is None or node.ended_at is not None:
        return
    node.ended_at, node.ended = at, t
    status = p.get("status")
    node.status = status if isinstance(status, str) else "error"
    node.verdict = classify_card(status, p.get("error"))
    stack = s.open_by_role.get(node.role, [])
    if node.instance_id in stack:
        stack.remove(node.instance_id)
    kind = s.type("role", node.role)
    kind.ms += _ms(node.started, t)
    if not node.verdict.ok:
        kind.errors += 1


def _llm_call(s: TreeState, p: Mapping[str, Any], kind: str, t: float | None) -> None:
    node = s.owner(p)
    if node is None:
        return
    if kind == names.LLM_CALL_START:
        node.open_turn = t
        return
    if node.open_turn is not None:
        node.model_ms += _ms(node.open_turn, t)
        node.open_turn = None
    if kind != names.LLM_CALL:
        return
    node.turns += 1
    usage = p.get("usage")
    if isinstance(usage, Mapping):
        total = usage.get("totalTokens")
        if not isinstance(total, int):
            total = int(usage.get("promptTokens") or 0) + int(usage.get("completionTokens") or 0)
        cached = usage.get("cachedPromptTokens")
        node.tokens += total
        node.cached += cached if isinstance(cached, int) else 0
        role = s.type("role", node.role)
        role.tokens += total
        role.cached += cached if isinstance(cached, int) else 0


def _tool(s: TreeState, p: Mapping[str, Any], kind: str, t: float | None) -> None:
    tool = p.get("tool")
    node = s.owner(p)
    if node is None or not isinstance(tool, str) or tool in _NOT_TOOL_TIME:
        return
    if kind == names.TOOL_CALL:
        node.open_tools.append((tool, t))
        node.tool_calls += 1
        s.type("tool", tool).count += 1
        return
    for k in range(len(node.open_tools) - 1, -1, -1):
        if node.open_tools[k][0] == tool:
            ms = _ms(node.open_tools.pop(k)[1], t)
            node.tool_ms += ms
            s.type("tool", tool).ms += ms
            break
    verdict = classify_tool_result(p)
    if not verdict.ok:
        s.type("tool", tool).errors += 1
        if verdict.severity == "warn":
            node.warns += 1
        else:
            node.fails += 1


def _human(s: TreeState, p: Mapping[str, Any], kind: str, t: float | None) -> None:
    qid = p.get("id")
    if not isinstance(qid, str):
        return
    if kind == names.ASK_HUMAN:
        node = s.owner(p)
        if node is not None:
            node.open_human[qid] = t
            s.asked[qid] = node.instance_id
        return
    owner = s.instances.get(s.asked.pop(qid, ""))
    if owner is not None and qid in owner.open_human:
        owner.human_ms += _ms(owner.open_human.pop(qid), t)


def fold_tree(s: TreeState, event: Mapping[str, Any]) -> None:
    """Fold one ``read_events`` dict; events without a timestamp or an object payload still count."""
    s.events += 1
    at = event.get("timestamp")
    p = event.get("payload")
    if not isinstance(at, str) or not isinstance(p, Mapping):
        return
    t = epoch(at)
    if t is not None:
        s.first = t if s.first is None else s.first
        s.last = t
    kind = event.get("type")
    if kind == names.ROLE_START:
        _role_start(s, p, at, t)
    elif kind == names.ROLE_FINISHED:
        _role_finished(s, p, at, t)
    elif kind == names.LLM_CALL_START or kind in _TURN_ENDS:
        _llm_call(s, p, str(kind), t)
    elif kind in (names.TOOL_CALL, names.TOOL_RESULT):
        _tool(s, p, str(kind), t)
    elif kind in (names.ASK_HUMAN, names.HUMAN_ANSWER):
        _human(s, p, str(kind), t)


# --- wire forms ----------------------------------------------------------------------------------


class _Wire(msgspec.Struct, kw_only=True, rename="camel", frozen=True):
    pass


class TreeNode(_Wire):
    instance_id: str
    role: str
    parent: str | None
    depth: int
    children: list[str]
    #: ``running`` while open in an active run, ``stopped`` when open in a run the operator stopped,
    #: ``abandoned`` when open in another finished one, else the card status
    status: str
    #: ``ok`` / ``warn`` / ``fail`` of the card (``fail`` for abandoned, ``warn`` for stopped, ``ok`` while running)
    severity: str
    note: str | None
    #: true when this instance or any instance below it failed (a failed branch)
    failed_branch: bool
    started_at: str
    ended_at: str | None
    duration_ms: int
    tokens: int
    cached_prompt_tokens: int
    turns: int
    tool_calls: int
    tool_warnings: int
    tool_failures: int


class CallTree(_Wire):
    roots: list[str]
    nodes: list[TreeNode]
    events: int


class WaterfallRow(_Wire):
    instance_id: str
    role: str
    depth: int
    #: from the run's first event to this instance's start
    offset_ms: int
    duration_ms: int
    model_ms: int
    tool_ms: int
    human_ms: int
    #: the rest: delegations, the engine's own work, waiting on locks
    other_ms: int
    status: str
    on_slowest_path: bool


class Waterfall(_Wire):
    started_at_ms: int
    duration_ms: int
    rows: list[WaterfallRow]
    #: root to leaf, at each level the child that took longest
    slowest_path: list[str]


def _end(node: _Instance, active: bool, now: float | None) -> float | None:
    if node.ended is not None:
        return node.ended
    return now if active else None


def _open_ms(started: float | None, active: bool, now: float | None) -> int:
    return _ms(started, now) if active and started is not None else 0


def _times(node: _Instance, active: bool, now: float | None) -> tuple[int, int, int]:
    model = node.model_ms + _open_ms(node.open_turn, active, now)
    tool = node.tool_ms + sum(_open_ms(t, active, now) for _, t in node.open_tools)
    human = node.human_ms + sum(_open_ms(t, active, now) for t in node.open_human.values())
    return model, tool, human


def _durations(s: TreeState, active: bool, now: float | None) -> dict[str, int]:
    out = {}
    for rid, node in s.instances.items():
        end = _end(node, active, now)
        out[rid] = _ms(node.started, end if end is not None else s.last)
    return out


def call_tree(s: TreeState, meta_status: str | None, now: str) -> CallTree:
    active = meta_status in _ACTIVE
    durations = _durations(s, active, epoch(now))
    failed: dict[str, bool] = {}
    nodes: dict[str, TreeNode] = {}
    for rid in reversed(list(s.instances)):  # children start after their parent: leaves first
        node = s.instances[rid]
        if node.ended_at is not None and node.verdict is not None:
            status, severity, note = node.status, node.verdict.severity, node.verdict.note or None
        elif active:
            status, severity, note = "running", "ok", None
        elif meta_status == "cancelled":
            status, severity, note = "stopped", "warn", "the operator stopped the run"
        else:
            status, severity, note = "abandoned", "fail", "never finished"
        failed[rid] = severity == "fail" or any(failed[c] for c in node.children)
        nodes[rid] = TreeNode(
            instance_id=rid,
            role=node.role,
            parent=node.parent,
            depth=node.depth,
            children=list(node.children),
            status=status,
            severity=severity,
            note=note,
            failed_branch=failed[rid],
            started_at=node.started_at,
            ended_at=node.ended_at,
            duration_ms=durations[rid],
            tokens=node.tokens,
            cached_prompt_tokens=node.cached,
            turns=node.turns,
            tool_calls=node.tool_calls,
            tool_warnings=node.warns,
            tool_failures=node.fails,
        )
    return CallTree(roots=list(s.roots), nodes=[nodes[rid] for rid in s.instances], events=s.events)


def slowest_path(s: TreeState, durations: Mapping[str, int]) -> list[str]:
    path: list[str] = []
    level = s.roots
    while level:
        best = max(level, key=lambda rid: durations[rid])
        path.append(best)
        level = s.instances[best].children
    return path


def _open_status(active: bool, meta_status: str | None) -> str:
    """The status of an instance with no finish: running, stopped (by the operator) or abandoned."""
    return "running" if active else "stopped" if meta_status == "cancelled" else "abandoned"


def waterfall(s: TreeState, meta_status: str | None, now: str) -> Waterfall:
    active = meta_status in _ACTIVE
    moment = epoch(now)
    durations = _durations(s, active, moment)
    path = slowest_path(s, durations)
    on_path = set(path)
    rows = []
    for rid, node in s.instances.items():
        model, tool, human = _times(node, active, moment)
        rows.append(
            WaterfallRow(
                instance_id=rid,
                role=node.role,
                depth=node.depth,
                offset_ms=_ms(s.first, node.started),
                duration_ms=durations[rid],
                model_ms=model,
                tool_ms=tool,
                human_ms=human,
                other_ms=max(0, durations[rid] - model - tool - human),
                status=node.status if node.ended_at is not None else _open_status(active, meta_status),
                on_slowest_path=rid in on_path,
            )
        )
    end = moment if active else s.last
    return Waterfall(
        started_at_ms=round(s.first * 1000) if s.first is not None else 0,
        duration_ms=_ms(s.first, end),
        rows=rows,
        slowest_path=path,
    )


def totals(s: TreeState) -> list[TypeTotal]:
    """Every role and tool type of the whole run, in first-seen order (the flow strip's chips)."""
    return [
        TypeTotal(
            key=key,
            kind=t.kind,
            name=t.name,
            count=t.count,
            tokens=t.tokens,
            cached_prompt_tokens=t.cached,
            ms=t.ms,
            errors=t.errors,
        )
        for key, t in s.types.items()
    ]
