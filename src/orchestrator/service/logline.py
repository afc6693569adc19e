"""One log event as one line of text: ``<role> · <action>``, bounded (pure).

The text export of a run's log and the run view's ``recentLog`` rows are these lines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from orchestrator import vocabulary as names

__all__ = ["LINE_CHARS", "Event", "as_mapping", "render_line"]

Event = Mapping[str, Any]

#: Bound of one rendered line (the text export and ``recentLog`` rows).
LINE_CHARS = 200

_EMPTY: Mapping[str, Any] = {}


def as_mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a mapping (dicts take the fast path), else an empty one."""
    return value if type(value) is dict or isinstance(value, Mapping) else _EMPTY


def _text(value: Any) -> str:
    return " ".join(str(value).split()) if value is not None else ""


def _head(value: Any) -> str:
    """First non-blank line of a text, whitespace collapsed."""
    return next((_text(line) for line in str(value or "").splitlines() if line.strip()), "")


def _tail(label: str, value: Any) -> str:
    text = _text(value)
    return f"{label}: {text}" if text else label


def _llm_call(p: Mapping[str, Any]) -> str:
    usage = as_mapping(p.get("usage"))
    prompt = usage.get("promptTokens")
    tokens = f", {prompt} prompt tokens" if isinstance(prompt, int) else ""
    return f"model turn ({p.get('messageCount', '?')} msgs{tokens})"


def _role_finished(p: Mapping[str, Any]) -> str:
    error = as_mapping(p.get("error"))
    summary = p.get("summary") or error.get("message") or error.get("kind")
    return _tail(f"finished {p.get('status', '?')}", summary)


def _retry_line(p: Mapping[str, Any]) -> str:
    wait = p.get("delaySeconds")
    if p.get("cause") == "loading":
        return f"model server still loading its model, waiting {wait}s"
    return f"model attempt {p.get('attempt')}/{p.get('attempts')} failed ({p.get('cause')}), retrying in {wait}s"


def _plan_line(p: Mapping[str, Any]) -> str:
    aborted = p.get("aborted") or []
    extra = f" (aborted {len(aborted)})" if aborted else ""
    return _tail(f"plan modification for {p.get('targetRole') or p.get('target')}{extra}", p.get("message"))


# (subject, action) per event type; the subject defaults to the payload's role.
_ACTIONS: dict[str, Callable[[Mapping[str, Any]], tuple[str | None, str]]] = {
    names.ROLE_START: lambda p: (None, f"starts: {_head(p.get('task'))}"),
    names.ROLE_FINISHED: lambda p: (None, _role_finished(p)),
    names.EFFORT_SET: lambda p: ("run", f"effort {p.get('effort')}"),
    names.AGENT_CALL: lambda p: (p.get("parent"), f"delegates to {p.get('child')} (depth {p.get('depth')})"),
    names.LLM_CALL_START: lambda p: (None, "model turn sent"),
    names.LLM_RETRY: lambda p: (None, _tail(_retry_line(p), p.get("message"))),
    names.LLM_CALL: lambda p: (None, _llm_call(p)),
    names.TOOL_CALL: lambda p: (None, f"calls {p.get('tool')}"),
    names.TOOL_RESULT: lambda p: (None, f"{p.get('tool')} → {p.get('kind')}"),
    names.DEPTH_EXCEEDED: lambda p: (p.get("parent"), f"cannot delegate to {p.get('child')}: depth {p.get('depth')}"),
    names.ROLE_NOT_FOUND: lambda p: (p.get("parent") or "run", f"unknown role {p.get('roleName')}"),
    names.CONTEXT_COMPACTED: lambda p: (
        None,
        f"context compacted (dropped {p.get('droppedMessages')} msgs, ~{p.get('estimatedPromptTokens')} tokens)",
    ),
    names.CONTEXT_PRESSURE: lambda p: (
        None,
        f"context pressure ({p.get('promptTokens')} of {p.get('effectiveBudget')} tokens)",
    ),
    names.LLM_UNAVAILABLE: lambda p: (None, _tail("model unavailable", p.get("message"))),
    names.CONTEXT_BUDGET_EXCEEDED: lambda p: (None, _tail("context budget exceeded", p.get("message"))),
    names.IMPLICIT_FINISH: lambda p: (None, _tail("implicit finish", p.get("message"))),
    names.UNKNOWN_TOOL: lambda p: (None, _tail(f"unknown tool {p.get('tool')}", p.get("message"))),
    names.INVALID_TOOL_CALL: lambda p: (None, _tail(f"invalid call to {p.get('tool')}", p.get("message"))),
    "role_budget_exceeded": lambda p: (None, _tail("role budget exceeded", p.get("message"))),
    "global_budget_exceeded": lambda p: (p.get("role") or "run", _tail("global budget exceeded", p.get("message"))),
    names.RUN_RESUMED: lambda p: ("run", f"resumed ({p.get('resumedFrames')} frames)"),
    names.RUN_STOPPED: lambda p: ("operator", f"stopped the run ({_text(p.get('by'))})"),
    names.OPERATOR_NOTICE: lambda p: ("operator", _tail(f"notice to {p.get('role')}", p.get("message"))),
    names.INTERRUPT: lambda p: (
        p.get("handler"),
        _tail(f"interrupts {p.get('target')} ({p.get('trigger')})", p.get("message")),
    ),
    names.INTERRUPT_RESOLVED: lambda p: (
        p.get("handler"),
        _tail(f"resolved {p.get('trigger')} of {p.get('target')}: {p.get('action')}", p.get("summary")),
    ),
    names.INQUIRY_DROPPED: lambda p: (
        "operator",
        _tail(f"inquiry dropped ({_text(p.get('reason'))})", p.get("message")),
    ),
    names.PLAN_MODIFICATION: lambda p: ("operator", _plan_line(p)),
    names.OBSERVE: lambda p: (p.get("details") or "observe", f"reads {p.get('role')} ({p.get('roleId')})"),
    names.TERMINATE: lambda p: (None, _tail("terminated", p.get("details"))),
    names.ASK_HUMAN: lambda p: (None, _tail("asks", p.get("question"))),
    names.HUMAN_ANSWER: lambda p: ("human", _tail("answers", p.get("answer"))),
}


def render_line(event: Event) -> str:
    """``<role> · <action>`` for any event (unknown types render their type), at most ``LINE_CHARS``."""
    kind = str(event.get("type", ""))
    p = as_mapping(event.get("payload"))
    action = _ACTIONS.get(kind)
    subject, text = action(p) if action else (None, kind.replace("_", " "))
    line = f"{_text(subject or p.get('role') or 'run')} · {_text(text)}"
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1].rstrip() + "…"
