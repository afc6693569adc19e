"""The pure derivations behind the HTTP run endpoints: run list, run view, log window, detail, export.

Every function takes data (metas, log events as ``read_events`` dicts, a ``RunAggregate``) and returns
JSON-ready values; the only file reads are ``load_run`` / ``list_runs`` / ``latest_run_id`` /
``read_text``, which read a run folder. A caller keeping an incremental per-run index passes its
``RunAggregate`` (caught up with ``aggregate(events, agg)``) wherever a function accepts one, so a poll
costs the new events plus the size of the answer, never a rescan of the log.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from heapq import merge
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from orchestrator import vocabulary as names
from orchestrator.engine.runfolder import TERMINAL_STATUSES, RunMeta, read_meta, runs_root
from orchestrator.flow.outcome import classify_tool_message
from orchestrator.runlog import fold_request, read_events
from orchestrator.runlog.fold import instance_key
from orchestrator.service.logline import Event, as_mapping, render_line
from orchestrator.service.logwindow import Instance, RunAggregate, aggregate, fold
from orchestrator.service.runthreads import continued_by
from orchestrator.service.toolresults import turn_results_builtins

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "RunAggregate",
    "RunRecord",
    "WindowParams",
    "aggregate",
    "event_detail",
    "fold",
    "latest_run_id",
    "list_runs",
    "load_run",
    "log_text",
    "log_window",
    "parse_window_params",
    "read_text",
    "render_line",
    "run_list_entry",
    "run_view",
]

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
_DIGITS = re.compile(r"[0-9]+")
#: Longer digit strings are not parsed (Python refuses int() past 4,300 digits; no log is that long).
_MAX_DIGITS = 18


# --- run folders (the only I/O) ----------------------------------------------------------------------


class RunRecord(msgspec.Struct, kw_only=True):
    """What a run folder holds for the views: meta, parsed log, plan document, one-line summary."""

    meta: RunMeta | None
    events: list[dict[str, Any]]
    plan: str | None
    summary: str | None


def read_text(path: Path, *, strip: bool = False) -> str | None:
    """A small text file's content, or ``None`` when missing or unreadable (``strip``: blank → ``None``)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if strip:
        text = text.strip()
        return text or None
    return text


def load_run(run_dir: Path) -> RunRecord | None:
    """The run folder's record; ``None`` when neither ``meta.json`` nor ``log.jsonl`` exists (unknown run)."""
    meta = read_meta(run_dir)
    log = run_dir / "log.jsonl"
    if meta is None and not log.is_file():
        return None
    return RunRecord(
        meta=meta,
        events=read_events(log),
        plan=read_text(run_dir / "plan.md"),
        summary=read_text(run_dir / "summary.txt", strip=True),
    )


def _run_ids(workspace: Path) -> list[str]:
    try:
        entries = list(runs_root(workspace).iterdir())
    except OSError:
        return []
    return sorted((p.name for p in entries if p.is_dir() and not p.name.startswith(".")), reverse=True)


def latest_run_id(workspace: Path) -> str | None:
    """The most recent run's id (``GET /api/run``), or ``None`` when no run has ever started."""
    ids = _run_ids(workspace)
    return ids[0] if ids else None


def list_runs(workspace: Path) -> list[dict[str, Any]]:
    """``GET /api/runs``: every run folder's entry, newest first (run ids sort lexically), each with the
    runs that continue it (``continuedBy``, from the same metas)."""
    root = runs_root(workspace)
    metas = [(run_id, read_meta(root / run_id)) for run_id in _run_ids(workspace)]
    threads = continued_by((run_id, meta.continues_from if meta else None) for run_id, meta in metas)
    return [
        run_list_entry(
            run_id, meta, read_text(root / run_id / "summary.txt", strip=True), continued=threads.get(run_id, [])
        )
        for run_id, meta in metas
    ]


# --- run list and run view ---------------------------------------------------------------------------


def _copy(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A snapshot of an aggregate entry, so a later fold never mutates a view already handed out."""
    return {k: list(v) if isinstance(v, list) else v for k, v in entry.items()}


def _builtins(value: Any) -> Any:
    return msgspec.to_builtins(value) if value is not None else None


def run_list_entry(
    run_id: str, meta: RunMeta | None, summary: str | None, *, continued: Sequence[str] = ()
) -> dict[str, Any]:
    """One ``GET /api/runs`` entry; a missing meta reads as nulls and ``status: unknown``. ``continued``:
    the ids of the runs continuing this one (``continuedBy``)."""
    return {
        "runId": run_id,
        "status": meta.status if meta else "unknown",
        "task": meta.task if meta else None,
        "effort": meta.effort if meta else None,
        "startTime": meta.start_time if meta else None,
        "endTime": meta.end_time if meta else None,
        "result": _builtins(meta.result) if meta else None,
        "error": _builtins(meta.error) if meta else None,
        "summary": summary,
        "continuesFrom": meta.continues_from if meta else None,
        "continuedBy": list(continued),
    }


def _parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _elapsed(meta: RunMeta | None, agg: RunAggregate, live: bool, now: datetime) -> float:
    """Start (meta, else first event) to end (meta; else now while live; else the last event)."""
    start = _parse_time(meta.start_time if meta else None) or _parse_time(agg.first_timestamp)
    end = _parse_time(meta.end_time if meta else None)
    if end is None:
        end = now if live else _parse_time(agg.last_timestamp)
    if start is None or end is None:
        return 0.0
    try:
        return round(max(0.0, (end - start).total_seconds()), 3)
    except TypeError:  # naive vs aware
        return 0.0


def _role_tree(agg: RunAggregate, live: bool) -> dict[str, Any] | None:
    """The entry role's tree (the first root); interrupt handlers' own roots are not part of it."""
    if not agg.roots:
        return None

    def node(inst: Instance) -> dict[str, Any]:
        kids = [agg.instances[c] for c in agg.children.get(inst.role_id, ())]
        return {
            "role": inst.role,
            "roleId": inst.role_id,
            "depth": inst.depth,
            "parent": inst.parent,
            "status": inst.status or "running",
            "summary": inst.summary,
            "active": live and inst.finish is None,
            "children": [node(k) for k in kids if k.start is not None],
        }

    return node(agg.instances[agg.roots[0]])


def _current_activity(agg: RunAggregate, live: bool) -> dict[str, Any] | None:
    inst = agg.innermost() if live else None
    if inst is None:
        return None
    activity: dict[str, Any] = {"roleId": inst.role_id, "role": inst.role, "since": inst.since}
    if inst.tool_open is not None:
        activity["doing"] = "waiting" if inst.tool_open == "ask_human" else "tool"
        activity["tool"] = inst.tool_open
    else:
        activity["doing"] = "model" if inst.turn_open else "waiting"
    return activity


def _budgets(agg: RunAggregate, meta: RunMeta | None, live: bool, now: datetime) -> dict[str, Any]:
    tokens = agg.tokens
    used = tokens["totalTokens"] or tokens["promptTokens"] + tokens["completionTokens"]
    breakdown = {k: tokens[k] for k in ("promptTokens", "cachedPromptTokens", "completionTokens")}
    return {
        "elapsedSeconds": _elapsed(meta, agg, live, now),
        "toolCalls": agg.tool_calls,
        "tokensUsed": used if agg.usage_seen else None,
        "tokenBreakdown": breakdown if agg.usage_seen else None,
    }


def run_view(
    run_id: str,
    meta: RunMeta | None,
    events: Sequence[Event] | RunAggregate,
    *,
    plan: str | None,
    interrupt_pending: bool,
    now: datetime,
) -> dict[str, Any]:
    """``GET /api/runs/:id``: finalize the view from a ``RunAggregate`` (or fold ``events`` into one).

    The run is live iff its meta exists with a non-terminal status: only then do roles read as active
    and ``currentActivity`` is set. Without a meta, ``task``/``effort``/``startTime`` come from the log.
    """
    agg = events if isinstance(events, RunAggregate) else aggregate(events)
    live = meta is not None and meta.status not in TERMINAL_STATUSES
    entry = agg.instances[agg.roots[0]] if agg.roots else None
    return {
        "status": meta.status if meta else "unknown",
        "runId": run_id,
        "task": meta.task if meta else (entry.task if entry else None),
        "effort": meta.effort if meta else agg.effort,
        "startTime": meta.start_time if meta else agg.first_timestamp,
        "endTime": meta.end_time if meta else None,
        "result": _builtins(meta.result) if meta else None,
        "error": _builtins(meta.error) if meta else None,
        "continuesFrom": meta.continues_from if meta else None,
        "plan": plan,
        "roles": [
            {
                "role": s.role,
                "firstSeen": s.first_seen,
                "lastSeen": s.last_seen,
                "eventCount": s.event_count,
                "llmCalls": s.llm_calls,
                "toolCalls": s.tool_calls,
                "recentTools": list(s.recent_tools),
                "lastPromptTokens": s.last_prompt_tokens,
            }
            for s in agg.roles.values()
        ],
        "roleTree": _role_tree(agg, live),
        "recentLog": [dict(row) for row in agg.recent],
        "currentActivity": _current_activity(agg, live),
        "questionHistory": [_copy(q) for q in agg.questions.values()],
        "interrupts": [_copy(item) for item in agg.interrupts],
        "budgets": _budgets(agg, meta, live, now),
        "interruptPending": interrupt_pending,
    }


# --- the log window --------------------------------------------------------------------------------


class WindowParams(NamedTuple):
    """``GET /api/runs/:id/log`` query, defaults applied. ``detail`` is the raw value (``event_detail``
    answers ``None`` — 404 — for a malformed one); ``format`` is ``"text"`` or ``"json"``."""

    offset: int
    limit: int
    instance: str | None
    detail: str | None
    format: str


def _non_negative(value: str | None, default: int) -> int:
    if value is None or not _DIGITS.fullmatch(value):
        return default
    return int(value) if len(value) <= _MAX_DIGITS else 10**_MAX_DIGITS  # huge: past any end


def parse_window_params(query: Mapping[str, str]) -> WindowParams:
    """offset (default 0) and limit (default 50, capped at 500): a non-integer or negative → the default."""
    return WindowParams(
        offset=_non_negative(query.get("offset"), 0),
        limit=min(_non_negative(query.get("limit"), DEFAULT_LIMIT), MAX_LIMIT),
        instance=query.get("instance") or None,
        detail=query.get("detail"),
        format="text" if query.get("format") == "text" else "json",
    )


def _row(events: Sequence[Event], index: int, agg: RunAggregate | None = None) -> dict[str, Any]:
    event = events[index]
    row = {
        "index": index,
        "timestamp": event.get("timestamp"),
        "type": event.get("type"),
        "payload": event.get("payload", {}),
    }
    if row["type"] == names.LLM_CALL:
        verdicts = tool_verdicts(row["payload"])
        if verdicts:
            row["verdicts"] = verdicts
        if agg is not None:  # an instance's window: each call of the turn with its result, by type
            row["toolResults"] = turn_results_builtins(events, agg, index)
    return row


def tool_verdicts(payload: Any) -> dict[str, dict[str, str]]:
    """``{toolCallId: {severity, note}}`` for the problem results among an ``llm_call``'s sent tool
    messages (``flow/outcome.py``), so the inspector badges them without a rule of its own."""
    out: dict[str, dict[str, str]] = {}
    sent = payload.get("sent") if isinstance(payload, dict) else None
    for message in sent if isinstance(sent, list) else ():
        if isinstance(message, dict) and message.get("role") == "tool":
            verdict = classify_tool_message(message.get("content"))
            call_id = message.get("toolCallId")
            if verdict is not None and not verdict.ok and isinstance(call_id, str):
                out[call_id] = {"severity": verdict.severity, "note": verdict.note}
    return out


def _scoped(inst: Instance, agg: RunAggregate, offset: int, limit: int) -> tuple[int, list[int]]:
    """``(total, indices)`` of the instance's window: its own events merged with its ancestors' lifecycle.

    The ancestor list is tiny, so this costs ``O(depth · log n + limit)``, not a pass over ``own``.
    """
    own = inst.own
    lineage = sorted(i for a in agg.ancestors(inst) for i in (a.start, a.finish) if i is not None)
    total = len(own) + len(lineage)
    before = sum(1 for k, i in enumerate(lineage) if bisect_left(own, i) + k < offset)
    start = offset - before
    picked = islice(merge(islice(own, start, start + limit), lineage[before:]), limit)
    return total, list(picked) if offset < total else []


def log_window(
    events: Sequence[Event],
    *,
    offset: int,
    limit: int,
    instance: str | None = None,
    agg: RunAggregate | None = None,
) -> dict[str, Any]:
    """``{total, offset, limit, events: [{index, timestamp, type, payload}]}`` over the log.

    ``instance`` scopes before windowing: the instance's own turns, turn failures and lifecycle plus
    its ancestors' lifecycle; ``total`` is then the scoped count and each event keeps its log-wide
    index. An unknown instance yields an empty page with total 0. ``agg`` (caught up with
    ``events``) spares the fold a scoped window would otherwise need.
    """
    if instance:
        agg = aggregate(events, agg)  # catches a stale aggregate up; folds from scratch when None
        inst = agg.instances.get(instance)
        total, indices = _scoped(inst, agg, offset, limit) if inst is not None else (0, [])
    else:
        total = len(events)
        indices = list(range(offset, min(total, offset + limit)))
    scoped = agg if instance else None
    return {"total": total, "offset": offset, "limit": limit, "events": [_row(events, i, scoped) for i in indices]}


class _Picked(Sequence[Event]):
    """``events`` restricted to ascending ``indices[:stop]`` (one instance's ``llm_call`` events)."""

    def __init__(self, events: Sequence[Event], indices: list[int], stop: int) -> None:
        self._events, self._indices, self._stop = events, indices, stop

    def __len__(self) -> int:
        return self._stop

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._stop))]
        if not -self._stop <= i < self._stop:
            raise IndexError(i)
        return self._events[self._indices[i % self._stop]]


def _pretty(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return text


def event_detail(
    events: Sequence[Event], index: int | str, *, agg: RunAggregate | None = None
) -> dict[str, Any] | None:
    """``?detail=``: ``{index, detailSections}``, or ``None`` (404) for an out-of-range or malformed index.

    Sections by machine label: ``llm_call`` → ``sent`` (the full conversation folded from the deltas),
    ``received``, ``finishReason``, ``usage``; ``tool_call`` → ``arguments`` (pretty JSON when it
    parses); ``tool_result`` → ``result``; ``role_finished`` → ``summary``, ``error``. Absent bodies are
    left out; ``detailSections`` is null when none is present.
    """
    if isinstance(index, str):
        if not _DIGITS.fullmatch(index) or len(index) > _MAX_DIGITS:
            return None
        index = int(index)
    if not 0 <= index < len(events):
        return None
    event = events[index]
    kind, p = event.get("type"), as_mapping(event.get("payload"))
    sections: dict[str, Any] = {}
    if kind == names.LLM_CALL:
        sent = _folded(events, index, agg)
        if sent is not None:
            sections["sent"] = sent
        sections.update({k: p[k] for k in ("received", "finishReason", "usage") if k in p})
    elif kind == names.TOOL_CALL and "arguments" in p:
        sections["arguments"] = _pretty(p["arguments"])
    elif kind == names.TOOL_RESULT and "result" in p:
        sections["result"] = p["result"]
    elif kind == names.ROLE_FINISHED:
        sections.update({k: p[k] for k in ("summary", "error") if p.get(k) is not None})
    return {"index": index, "detailSections": sections or None}


def _folded(events: Sequence[Event], index: int, agg: RunAggregate | None) -> list[Any] | None:
    payload = as_mapping(events[index].get("payload"))
    turns = agg.turns.get(instance_key(payload)) if agg is not None and agg.count > index else None
    if turns:
        pos = bisect_left(turns, index)
        if pos < len(turns) and turns[pos] == index:
            return fold_request(_Picked(events, turns, pos + 1), pos)
    return fold_request(events, index)


def log_text(run_id: str, window_events: Iterable[Mapping[str, Any]]) -> tuple[str, str]:
    """``?format=text``: one ``timestamp<TAB>type<TAB>rendering`` line per event, and ``<run_id>.log``."""
    lines = [f"{e.get('timestamp', '')}\t{e.get('type', '')}\t{render_line(e)}\n" for e in window_events]
    return "".join(lines), f"{re.sub(r'[^A-Za-z0-9._-]', '_', run_id)}.log"
