"""Tool results by type for the log window and ``GET /api/runs/<id>/toolresult`` (no I/O of its own).

Joins a model turn's tool calls to their ``tool_call`` / ``tool_result`` events through the run
aggregate (each instance's tool-event indices), and renders each pair with ``flow/toolview.py``. The
events come from any ``Sequence`` (the service's ``RunIndex`` reads them from disk on demand).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from orchestrator import vocabulary as names
from orchestrator.flow.toolview import (
    FULL_CHARS,
    TEXT_CHARS,
    DiffView,
    ToolView,
    WriteView,
    diff_view,
    pair_calls,
    previous_content,
    tool_view,
)
from orchestrator.service.logline import as_mapping
from orchestrator.service.logwindow import RunAggregate

__all__ = ["event_result", "turn_results", "turn_results_builtins"]

Event = Mapping[str, Any]


def _calls(payload: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    received = as_mapping(payload.get("received"))
    calls = received.get("toolCalls")
    out: list[tuple[str, str, Any]] = []
    for call in calls if isinstance(calls, list) else ():
        fn = as_mapping(as_mapping(call).get("function"))
        call_id, name = as_mapping(call).get("id"), fn.get("name")
        if isinstance(call_id, str) and isinstance(name, str):
            out.append((call_id, name, fn.get("arguments")))
    return out


def turn_results(
    events: Sequence[Event], agg: RunAggregate, turn: int, *, limit: int = TEXT_CHARS
) -> list[ToolView] | None:
    """The views of the calls model turn ``turn`` (an ``llm_call`` index) made, in call order; ``None``
    when ``turn`` is not an ``llm_call``. ``agg`` must be caught up with ``events``."""
    if not 0 <= turn < len(events) or events[turn].get("type") != names.LLM_CALL:
        return None
    payload = as_mapping(events[turn].get("payload"))
    calls = _calls(payload)
    if not calls:
        return []
    inst = agg.instances.get(str(payload.get("roleId")))
    pairs: dict[str, tuple[int | None, int | None]] = {}
    if inst is not None:
        after = bisect_right(inst.own, turn)
        end = inst.own[after] if after < len(inst.own) else len(events)
        lo, hi = bisect_right(inst.tools, turn), bisect_left(inst.tools, end)
        tool_events = []
        for i in inst.tools[lo:hi]:
            p = as_mapping(events[i].get("payload"))
            tool_events.append((i, str(events[i].get("type")), str(p.get("tool"))))
        pairs = pair_calls([(c[0], c[1]) for c in calls], tool_events)
    views = []
    for call_id, name, arguments in calls:
        call_index, result_index = pairs.get(call_id, (None, None))
        result, kind = None, None
        if result_index is not None:
            p = as_mapping(events[result_index].get("payload"))
            kind = p.get("kind") if isinstance(p.get("kind"), str) else None
            result = p.get("result") if isinstance(p.get("result"), Mapping) else None
        views.append(
            tool_view(
                name,
                arguments,
                result,
                kind=kind,
                call_id=call_id,
                index=result_index,
                call_index=call_index,
                limit=limit,
            )
        )
    return views


def turn_results_builtins(events: Sequence[Event], agg: RunAggregate, turn: int) -> list[Any]:
    """``turn_results`` as JSON-ready values (the log window's ``toolResults`` of an ``llm_call`` row)."""
    return msgspec.to_builtins(turn_results(events, agg, turn) or [])


def _turn_of(agg: RunAggregate, events: Sequence[Event], index: int) -> int | None:
    """The ``llm_call`` of the instance owning tool event ``index`` that made the call."""
    p = as_mapping(events[index].get("payload"))
    inst = agg.instances.get(str(p.get("roleId")))
    if inst is None:
        return None
    for k in range(bisect_left(inst.own, index) - 1, -1, -1):
        if events[inst.own[k]].get("type") == names.LLM_CALL:
            return inst.own[k]
    return None


def event_result(
    events: Sequence[Event], agg: RunAggregate, index: int, *, full: bool = False
) -> tuple[ToolView, DiffView | None] | None:
    """The view of the call a ``tool_call`` or ``tool_result`` event at ``index`` belongs to (bounded
    at ``TEXT_CHARS``, or ``FULL_CHARS`` when ``full``), and for a write its diff against what the path
    held before (``previous_content``). ``None`` when ``index`` is neither kind of event."""
    if not 0 <= index < len(events) or events[index].get("type") not in (names.TOOL_CALL, names.TOOL_RESULT):
        return None
    limit = FULL_CHARS if full else TEXT_CHARS
    turn = _turn_of(agg, events, index)
    views = turn_results(events, agg, turn, limit=limit) if turn is not None else None
    view = next((v for v in views or () if index in (v.index, v.call_index)), None)
    if view is None:  # not matched to a turn's call (an old log): the event pair on its own
        p = as_mapping(events[index].get("payload"))
        result = p.get("result") if events[index].get("type") == names.TOOL_RESULT else None
        view = tool_view(
            str(p.get("tool")),
            p.get("arguments"),
            result if isinstance(result, Mapping) else None,
            kind=p.get("kind") if isinstance(p.get("kind"), str) else None,
            index=index,
            limit=limit,
        )
    return view, _diff(events, agg, view)


def _diff(events: Sequence[Event], agg: RunAggregate, view: ToolView) -> DiffView | None:
    body = view.body
    if not isinstance(body, WriteView) or view.kind != "success":
        return None
    before = view.call_index if view.call_index is not None else view.index
    if before is None:
        return None
    content = body.content
    if view.call_index is not None:  # the full text, not the bounded one
        args = as_mapping(events[view.call_index].get("payload")).get("arguments")
        full = tool_view(view.tool, args, None, kind="success", limit=FULL_CHARS).body
        content = full.content if isinstance(full, WriteView) else content
    previous = previous_content(events, before, body.path, agg.files.get(body.path, []))
    return diff_view(body.path, previous, content)
