"""Fold a run's log events into OpenTelemetry-shaped spans (pure: no I/O, no clock, no SDK).

One fold serves both faces of the trace export: the live listener feeds it each event as the run log
writes it, and ``orchestrator export-trace`` feeds it ``log.jsonl``. Times come from the events' own
timestamps and every id is derived from the run id (``trace_id_for``, ``span_id_for``), so the two give
the same spans, and a resumed run — whose new process folds the log written so far silently, then goes
on — continues the same trace with the same ids.

The tree (see docs/observability.md for every attribute):

- ``run`` — from the run's start (``meta.json``) to the entry role's ``role_finished``;
- ``invoke_agent <role>`` per role instance, under its delegating parent (``parentRoleId``); a handler
  role under the interlude that runs it; the entry role under the run;
- ``chat <model>`` per model call (``llm_call_start`` → ``llm_call`` / ``llm_unavailable`` /
  ``context_budget_exceeded``), retries as span events;
- ``execute_tool <tool>`` per tool call (``tool_call`` → ``tool_result``), but ``agent`` (the child's own
  span is the delegation) and ``ask_human`` (a question is an event with the time waited);
- ``interlude <trigger>`` (``interrupt`` → ``interrupt_resolved``), ``plan_modification`` (until the
  last role it cut has finished) and ``context_compaction`` under the role they suspend;
- ``resume`` under the run: the gap between the last event before a restart and ``run_resumed``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from orchestrator import vocabulary as names
from orchestrator.flow.outcome import classify_card, classify_tool_result
from orchestrator.observability import attributes as a
from orchestrator.observability import suspensions as sus
from orchestrator.observability.tracestate import (
    AttrValue,
    OpenSpan,
    RunInfo,
    SpanData,
    SpanEvent,
    TraceState,
    as_int,
    as_json,
    fail,
    json_size,
    span_id_for,
    timestamp_ns,
    trace_id_for,
)

__all__ = [
    "RunInfo",
    "SpanData",
    "SpanEvent",
    "TraceState",
    "close_open",
    "first_chunk",
    "fold_span",
    "fold_spans",
    "span_id_for",
    "timestamp_ns",
    "trace_id_for",
]

#: Tools without an ``execute_tool`` span: a delegation is the child's span, a question an event.
_NO_TOOL_SPAN = frozenset({"agent", "ask_human"})
_ROLE_EVENTS = frozenset(
    {
        names.CONTEXT_PRESSURE,
        names.OBSERVE,
        names.OPERATOR_NOTICE,
        names.UNKNOWN_TOOL,
        names.INVALID_TOOL_CALL,
        names.IMPLICIT_FINISH,
    }
)
_CHAT_ENDS = frozenset({names.LLM_CALL, names.LLM_UNAVAILABLE, names.CONTEXT_BUDGET_EXCEEDED})
_POINTS = frozenset({names.EFFORT_SET, names.DEPTH_EXCEEDED, names.ROLE_NOT_FOUND, names.INQUIRY_DROPPED})


# --- roles -------------------------------------------------------------------------------------------


def _role_start(s: TraceState, p: Mapping[str, Any], t: int, out: list[SpanData]) -> None:
    role, rid = p.get("role"), p.get("roleId")
    if not isinstance(role, str) or not isinstance(rid, str) or f"role:{rid}" in s.open:
        return  # unnamed, or a restart-boundary duplicate
    parent_id = p.get("parentRoleId")
    handler_for = None
    if isinstance(parent_id, str) and f"role:{parent_id}" in s.open:
        parent = f"role:{parent_id}"
    elif s.interludes:
        parent = s.interludes[-1]
        target = s.open[parent].attributes.get(a.INTERLUDE_TARGET)
        handler_for = target if isinstance(target, str) else None
    else:
        parent = "run" if "run" in s.open else None
        if s.entry is None:
            s.entry = rid
    attrs: dict[str, AttrValue] = {
        a.OPERATION_NAME: a.OP_INVOKE_AGENT,
        a.AGENT_NAME: role,
        a.AGENT_ID: rid,
        a.CONVERSATION_ID: s.info.run_id,
        a.ROLE_DEPTH: as_int(p.get("depth")) or 0,
    }
    if handler_for:
        attrs[a.ROLE_HANDLER_FOR] = handler_for
    if s.capture and isinstance(p.get("task"), str):
        attrs[a.ROLE_TASK] = p["task"]
    s.open[f"role:{rid}"] = OpenSpan(f"role:{rid}", f"invoke_agent {role}", parent, t, attrs, owner=rid)
    s.roles_by_name.setdefault(role, []).append(rid)


def _role_finished(s: TraceState, p: Mapping[str, Any], t: int, out: list[SpanData]) -> None:
    span = s.role(p)
    if span is None or span.owner is None:
        return
    rid = span.owner
    for key in [k for k, o in s.open.items() if o.owner == rid and k != span.key]:
        leftover = s.open[key]
        fail(leftover, "abandoned", "the role ended first")
        out.append(s.finish(leftover, t))
    s.chat.pop(rid, None)
    s.tools.pop(rid, None)
    for qid, (owner, asked, text) in list(s.questions.items()):
        if owner == rid:
            del s.questions[qid]
            span.events.append(_question_event(s, qid, asked, t, text, None))
    status = p.get("status")
    span.attributes[a.ROLE_STATUS] = status if isinstance(status, str) else "error"
    if s.capture and isinstance(p.get("summary"), str):
        span.attributes[a.ROLE_SUMMARY] = p["summary"]
    verdict = classify_card(status, p.get("error"))
    if not verdict.ok:
        fail(span, verdict.note)
    stack = s.roles_by_name.get(str(span.attributes[a.AGENT_NAME]), [])
    if rid in stack:
        stack.remove(rid)
    out.append(s.finish(span, t))
    for key, cut in list(s.plans.items()):
        cut.discard(rid)
        if not cut and key in s.open:
            del s.plans[key]
            out.append(s.finish(s.open[key], t))
    if rid == s.entry:
        _end_run(s, span, t, out)


def _end_run(s: TraceState, entry: OpenSpan, t: int, out: list[SpanData]) -> None:
    run = s.open.get("run")
    s.run_ended = True
    if run is None:
        return
    for key in [k for k in s.open if k != "run"]:
        leftover = s.open[key]
        fail(leftover, "abandoned", "the run ended first")
        out.append(s.finish(leftover, t))
    status = entry.attributes.get(a.ROLE_STATUS, "error")
    run.attributes[a.RUN_STATUS] = status
    run.attributes[a.USAGE_INPUT_TOKENS] = s.tokens[0]
    run.attributes[a.USAGE_OUTPUT_TOKENS] = s.tokens[1]
    if entry.status == "error":
        fail(run, str(entry.attributes.get(a.ERROR_TYPE, "error")), entry.status_message)
    out.append(s.finish(run, t))


# --- model calls ---------------------------------------------------------------------------------------


def _chat_start(s: TraceState, p: Mapping[str, Any], t: int, out: list[SpanData]) -> None:
    role = s.role(p)
    if role is None or role.owner is None:
        return
    rid = role.owner
    previous = s.chat.pop(rid, None)
    if previous in s.open:
        fail(s.open[previous], "interrupted", "a new call started")
        out.append(s.finish(s.open[previous], t))
    model = s.info.model or "unknown"
    attrs: dict[str, AttrValue] = {
        a.OPERATION_NAME: a.OP_CHAT,
        a.PROVIDER_NAME: a.PROVIDER,
        a.REQUEST_MODEL: model,
        a.CONVERSATION_ID: s.info.run_id,
        a.AGENT_ID: rid,
    }
    if s.info.temperature is not None:
        attrs[a.REQUEST_TEMPERATURE] = s.info.temperature
    if s.info.max_tokens is not None:
        attrs[a.REQUEST_MAX_TOKENS] = s.info.max_tokens
    key = f"chat:{rid}:{s.count(f'chat:{rid}')}"
    s.open[key] = OpenSpan(key, f"chat {model}", role.key, t, attrs, kind="client", owner=rid)
    s.chat[rid] = key


def _chat_retry(s: TraceState, p: Mapping[str, Any], t: int) -> None:
    role = s.role(p)
    span = s.open.get(s.chat.get(role.owner or "", "")) if role is not None else None
    target = span or role
    if target is None:
        return
    attrs: dict[str, AttrValue] = {
        f"orchestrator.retry.{k}": v for k in ("attempt", "attempts", "cause") if isinstance(v := p.get(k), str | int)
    }
    delay = p.get("delaySeconds")
    if isinstance(delay, int | float):
        attrs["orchestrator.retry.delay_seconds"] = float(delay)
    target.events.append(SpanEvent("orchestrator.llm.retry", t, attrs))
    if span is not None:
        span.attributes[a.LLM_RETRIES] = int(span.attributes.get(a.LLM_RETRIES, 0)) + 1


def first_chunk(s: TraceState, role_id: str, t: int) -> None:
    """The role's model call in flight streamed its first chunk at ``t`` (ns): its time to first chunk.

    Live export only (the listener's clock): the log does not record the moment, so ``export-trace``
    cannot give this attribute."""
    key = s.chat.get(role_id)
    span = s.open.get(key) if key is not None else None
    if span is not None and a.RESPONSE_TIME_TO_FIRST_CHUNK not in span.attributes:
        span.attributes[a.RESPONSE_TIME_TO_FIRST_CHUNK] = max(0, t - span.start_ns) / 1e9


def _chat_end(s: TraceState, kind: str, p: Mapping[str, Any], t: int, out: list[SpanData]) -> None:
    role = s.role(p)
    if role is None or role.owner is None:
        return
    key = s.chat.pop(role.owner, None)
    span = s.open.get(key or "")
    if span is None:  # no start seen: a zero-length span still shows the call
        _chat_start(s, p, t, out)
        span = s.open[s.chat.pop(role.owner)]
    if kind != names.LLM_CALL:
        fail(span, kind, str(p.get("message") or kind))
        role.events.append(SpanEvent(f"orchestrator.{kind}", t, {}))
        out.append(s.finish(span, t))
        return
    usage = p.get("usage")
    if isinstance(usage, Mapping):
        prompt, completion = as_int(usage.get("promptTokens")) or 0, as_int(usage.get("completionTokens")) or 0
        span.attributes[a.USAGE_INPUT_TOKENS] = prompt
        span.attributes[a.USAGE_OUTPUT_TOKENS] = completion
        s.tokens[0] += prompt
        s.tokens[1] += completion
        cached = as_int(usage.get("cachedPromptTokens"))
        if cached is not None:
            span.attributes[a.USAGE_CACHE_READ_INPUT_TOKENS] = cached
    if isinstance(p.get("finishReason"), str):
        span.attributes[a.RESPONSE_FINISH_REASONS] = [p["finishReason"]]
    if isinstance(p.get("responseModel"), str):
        span.attributes[a.RESPONSE_MODEL] = p["responseModel"]
    if (count := as_int(p.get("messageCount"))) is not None:
        span.attributes[a.LLM_MESSAGE_COUNT] = count
    if s.capture:
        if isinstance(p.get("sent"), list):
            span.attributes[a.INPUT_MESSAGES] = as_json(p["sent"])
            span.attributes[a.LLM_SENT_FROM] = as_int(p.get("sentFrom")) or 0
        if isinstance(p.get("received"), Mapping):
            span.attributes[a.OUTPUT_MESSAGES] = as_json(p["received"])
    out.append(s.finish(span, t))


# --- tools and questions -------------------------------------------------------------------------------


def _tool_call(s: TraceState, p: Mapping[str, Any], t: int) -> None:
    tool, role = p.get("tool"), s.role(p)
    if not isinstance(tool, str) or tool in _NO_TOOL_SPAN or role is None or role.owner is None:
        return
    rid = role.owner
    arguments = p.get("arguments")
    attrs: dict[str, AttrValue] = {
        a.OPERATION_NAME: a.OP_EXECUTE_TOOL,
        a.TOOL_NAME: tool,
        a.TOOL_TYPE: "function",
        a.AGENT_ID: rid,
        a.TOOL_ARGUMENTS_SIZE: len(arguments.encode()) if isinstance(arguments, str) else 0,
    }
    if s.capture and isinstance(arguments, str):
        attrs[a.TOOL_CALL_ARGUMENTS] = arguments
    key = f"tool:{rid}:{s.count(f'tool:{rid}')}"
    s.open[key] = OpenSpan(key, f"execute_tool {tool}", role.key, t, attrs, owner=rid)
    s.tools.setdefault(rid, []).append((tool, key))


def _exit_code(data: object) -> int | None:
    """``exitCode`` of a shell result, or of the first failing (else last) command of a checker's list."""
    if isinstance(data, Mapping):
        return as_int(data.get("exitCode"))
    if isinstance(data, list):
        codes = [c for item in data if (c := _exit_code(item)) is not None]
        return next((c for c in codes if c != 0), codes[-1] if codes else None)
    return None


def _tool_result(s: TraceState, p: Mapping[str, Any], t: int, out: list[SpanData]) -> None:
    tool, role = p.get("tool"), s.role(p)
    if not isinstance(tool, str) or tool in _NO_TOOL_SPAN or role is None or role.owner is None:
        return
    pending = s.tools.get(role.owner, [])
    index = next((i for i in range(len(pending) - 1, -1, -1) if pending[i][0] == tool), None)
    if index is None:  # no call seen: a zero-length span still shows the result
        _tool_call(s, {**p, "arguments": ""}, t)
        index = len(pending := s.tools[role.owner]) - 1
    span = s.open[pending.pop(index)[1]]
    kind = p.get("kind")
    span.attributes[a.TOOL_OUTCOME] = kind if isinstance(kind, str) else "unknown"
    result = p.get("result")
    if isinstance(result, msgspec.Raw):  # as logged (``foldinput``): its length only, it holds no exit status
        span.attributes[a.TOOL_RESULT_SIZE] = len(result)
    elif isinstance(result, Mapping):
        span.attributes[a.TOOL_RESULT_SIZE] = json_size(result)
        if (code := _exit_code(result.get("data"))) is not None:
            span.attributes[a.TOOL_EXIT_CODE] = code
        if s.capture:
            span.attributes[a.TOOL_CALL_RESULT] = as_json(result)
    verdict = classify_tool_result(p)
    span.attributes[a.TOOL_SEVERITY] = verdict.severity
    if verdict.severity == "fail":
        fail(span, verdict.note)
    out.append(s.finish(span, t))


def _question_event(s: TraceState, qid: str, asked: int, t: int, text: str, answer: str | None) -> SpanEvent:
    attrs: dict[str, AttrValue] = {
        a.QUESTION_ID: qid,
        a.QUESTION_WAIT_MS: (t - asked) // 1_000_000,
        a.QUESTION_ANSWERED: answer is not None,
    }
    if s.capture:
        attrs[a.QUESTION_TEXT] = text
        if answer is not None:
            attrs[a.QUESTION_ANSWER] = answer
    return SpanEvent("orchestrator.question", asked, attrs)


def _question(s: TraceState, kind: str, p: Mapping[str, Any], t: int) -> None:
    qid = p.get("id")
    if not isinstance(qid, str):
        return
    if kind == names.ASK_HUMAN:
        role = s.role(p)
        if role is not None and role.owner is not None:
            s.questions[qid] = (role.owner, t, str(p.get("question") or ""))
        return
    asked = s.questions.pop(qid, None)
    if asked is None:
        return
    owner, at, text = asked
    target = s.open.get(f"role:{owner}") or s.open.get("run")
    if target is not None:
        answer = p.get("answer")
        target.events.append(_question_event(s, qid, at, t, text, answer if isinstance(answer, str) else ""))


# --- the fold ------------------------------------------------------------------------------------------


def fold_span(s: TraceState, event: Mapping[str, Any]) -> list[SpanData]:
    """Fold one log event (a ``foldinput`` or ``read_events`` dict, or a written event as builtins); the spans
    it ends."""
    t = timestamp_ns(event.get("timestamp"))
    p = event.get("payload")
    if t is None or not isinstance(p, Mapping) or s.run_ended:
        return []
    if "run" not in s.open and s.last_ns is None:
        s.open_run(t)  # no start time known: the run starts with its first event
    kind = event.get("type")
    out: list[SpanData] = []
    if kind == names.ROLE_START:
        _role_start(s, p, t, out)
    elif kind == names.ROLE_FINISHED:
        _role_finished(s, p, t, out)
    elif kind == names.LLM_CALL_START:
        _chat_start(s, p, t, out)
    elif kind == names.LLM_RETRY:
        _chat_retry(s, p, t)
    elif kind in _CHAT_ENDS:
        _chat_end(s, str(kind), p, t, out)
    elif kind == names.TOOL_CALL:
        _tool_call(s, p, t)
    elif kind == names.TOOL_RESULT:
        _tool_result(s, p, t, out)
    elif kind in (names.ASK_HUMAN, names.HUMAN_ANSWER):
        _question(s, str(kind), p, t)
    elif kind in (names.INTERRUPT, names.INTERRUPT_RESOLVED):
        sus.interlude(s, str(kind), p, t, out)
    elif kind == names.PLAN_MODIFICATION:
        sus.plan(s, p, t, out)
    elif kind == names.CONTEXT_COMPACTED:
        sus.compaction(s, p, t, out)
    elif kind == names.RUN_RESUMED:
        sus.resumed(s, p, t, out)
    elif kind in _ROLE_EVENTS or kind in _POINTS:
        sus.point(s, str(kind), p, t)
    s.last_ns = t
    return out


def close_open(s: TraceState, reason: str = "never finished", *, error_type: str = "unfinished") -> list[SpanData]:
    """End every span still open at the last event's time (a run that stopped without finishing),
    innermost first, each an error (``error_type``) with ``reason``."""
    end = s.last_ns
    out: list[SpanData] = []
    for key in reversed(list(s.open)):
        span = s.open[key]
        fail(span, error_type, reason)
        out.append(s.finish(span, end if end is not None else span.start_ns))
    s.run_ended = True
    return out


def fold_spans(info: RunInfo, events: Sequence[Mapping[str, Any]], *, capture_content: bool = False) -> list[SpanData]:
    """Every span of a whole log, the unfinished ones ended by ``close_open`` (``export-trace``)."""
    state = TraceState(info, capture_content=capture_content)
    spans = [span for event in events for span in fold_span(state, event)]
    return spans + close_open(state)
