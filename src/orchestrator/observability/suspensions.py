"""The fold's handlers for what suspends a role or the run: interludes, plan modifications, context
compactions, restarts, and the events that mark a moment (pure; ``spans.fold_span`` dispatches here)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orchestrator import vocabulary as names
from orchestrator.observability import attributes as a
from orchestrator.observability.tracestate import (
    AttrValue,
    OpenSpan,
    SpanData,
    SpanEvent,
    TraceState,
    as_int,
    fail,
)

__all__ = ["compaction", "interlude", "plan", "point", "resumed"]


def interlude(s: TraceState, kind: str, p: Mapping[str, Any], t: int, out: list[SpanData]) -> None:
    trigger, target = str(p.get("trigger") or "interrupt"), str(p.get("target") or "")
    if kind == names.INTERRUPT:
        parent = f"role:{target}" if f"role:{target}" in s.open else "run"
        attrs: dict[str, AttrValue] = {
            a.INTERLUDE_TRIGGER: trigger,
            a.INTERLUDE_HANDLER: str(p.get("handler") or ""),
            a.INTERLUDE_TARGET: target,
        }
        key = f"interlude:{s.count('interlude')}"
        s.open[key] = OpenSpan(key, f"interlude {trigger}", parent, t, attrs, owner=target or None)
        s.interludes.append(key)
        return
    # the innermost open interlude of this target, the same trigger preferred
    mine = [k for k in reversed(s.interludes) if s.open[k].attributes[a.INTERLUDE_TARGET] == target]
    same = [k for k in mine if s.open[k].attributes[a.INTERLUDE_TRIGGER] == trigger]
    if not mine:
        return
    key = (same or mine)[0]
    span = s.open[key]
    s.interludes.remove(key)
    span.attributes[a.INTERLUDE_ACTION] = str(p.get("action") or "")
    if isinstance(p.get("handlerStatus"), str):
        span.attributes[a.INTERLUDE_HANDLER_STATUS] = p["handlerStatus"]
        if p["handlerStatus"] == "error":
            fail(span, "handler_error")
    out.append(s.finish(span, t))


def plan(s: TraceState, p: Mapping[str, Any], t: int, out: list[SpanData]) -> None:
    target = str(p.get("target") or "")
    aborted = [x for x in p.get("aborted") or [] if isinstance(x, str)]
    attrs: dict[str, AttrValue] = {a.PLAN_ABORTED: aborted, a.INTERLUDE_TARGET: target}
    if s.capture and isinstance(p.get("message"), str):
        attrs[a.PLAN_MESSAGE] = p["message"]
    key = f"plan:{s.count('plan')}"
    parent = f"role:{target}" if f"role:{target}" in s.open else "run"
    span = OpenSpan(key, "plan_modification", parent, t, attrs, owner=target or None)
    s.open[key] = span
    cut = {rid for rid in aborted if f"role:{rid}" in s.open}
    if cut:
        s.plans[key] = cut
    else:
        out.append(s.finish(span, t))


def compaction(s: TraceState, p: Mapping[str, Any], t: int, out: list[SpanData]) -> None:
    role = s.role(p)
    if role is None or role.owner is None:
        return
    attrs: dict[str, AttrValue] = {
        a.COMPACTION_PREFIX + field: value
        for field, wire in (
            ("dropped_messages", "droppedMessages"),
            ("truncated_tool_messages", "truncatedToolMessages"),
            ("stripped_reasoning_messages", "strippedReasoningMessages"),
            ("estimated_prompt_tokens", "estimatedPromptTokens"),
            ("context_window", "contextWindow"),
        )
        if (value := as_int(p.get(wire))) is not None
    }
    key = f"compaction:{role.owner}:{s.count(f'compaction:{role.owner}')}"
    s.open[key] = OpenSpan(key, "context_compaction", role.key, t, attrs, owner=role.owner)
    out.append(s.finish(s.open[key], t))


def resumed(s: TraceState, p: Mapping[str, Any], t: int, out: list[SpanData]) -> None:
    gap_start = s.last_ns if s.last_ns is not None else t
    for key in [k for k in s.open if k.startswith(("chat:", "tool:"))]:
        span = s.open[key]
        fail(span, "interrupted", "the process stopped; the run was resumed")
        out.append(s.finish(span, gap_start))
    s.chat.clear()
    s.tools.clear()
    run = s.open.get("run")
    frames = as_int(p.get("resumedFrames")) or 0
    if run is None:
        return
    run.attributes[a.RUN_RESUMES] = int(run.attributes.get(a.RUN_RESUMES, 0)) + 1
    run.events.append(SpanEvent("orchestrator.run.resumed", t, {a.RESUME_FRAMES: frames}))
    key = f"resume:{s.count('resume')}"
    attrs: dict[str, AttrValue] = {a.RESUME_GAP_MS: (t - gap_start) // 1_000_000, a.RESUME_FRAMES: frames}
    s.open[key] = OpenSpan(key, "resume", "run", gap_start, attrs)
    out.append(s.finish(s.open[key], t))


def point(s: TraceState, kind: str, p: Mapping[str, Any], t: int) -> None:
    """A span event on the role (or the run) for the events that mark a moment."""
    if kind == names.EFFORT_SET:
        run = s.open.get("run")
        if run is not None and isinstance(p.get("effort"), str):
            run.attributes[a.RUN_EFFORT] = p["effort"]
        return
    if kind in (names.DEPTH_EXCEEDED, names.ROLE_NOT_FOUND):
        target = s.anchor({"role": p.get("parent")})
    elif kind == names.INQUIRY_DROPPED:
        target = s.open.get("run")
    else:
        target = s.anchor(p)
    if target is None:
        return
    attrs: dict[str, AttrValue] = {
        f"orchestrator.{k}": v
        for k, v in p.items()
        if k in ("tool", "details", "promptTokens", "effectiveBudget", "child", "depth", "roleName", "reason")
        and isinstance(v, str | int)
    }
    target.events.append(SpanEvent(f"orchestrator.{kind}", t, attrs))
