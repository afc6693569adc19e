"""A run's log condensed per role, for the reflection model: what each role was asked and did.

For every role that ran: its task, then one line per tool call (tool and arguments), per result (its
kind and a cut excerpt), per failure event (unknown tool, invalid call, model unavailable, context
budget, implicit finish), per cut-off model turn (``length``), and how the role finished. Pure over
the decoded events of ``log.jsonl``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from orchestrator import vocabulary as names

__all__ = ["RoleTrace", "condense"]

#: characters kept of one argument list / result / summary
EXCERPT = 300
#: lines kept per role (the first ones and the last ones)
MAX_LINES = 40

_FAILURES = {
    names.UNKNOWN_TOOL: "unknown tool",
    names.INVALID_TOOL_CALL: "invalid tool call",
    names.LLM_UNAVAILABLE: "model unavailable",
    names.CONTEXT_BUDGET_EXCEEDED: "context budget exceeded",
    names.IMPLICIT_FINISH: "ended without calling finish",
}


class RoleTrace(msgspec.Struct, kw_only=True):
    """One role's condensed turns (every instance of the role, in log order)."""

    role: str
    task: str = ""
    lines: list[str] = []


def _cut(text: str, limit: int = EXCERPT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _result_text(payload: Mapping[str, Any]) -> str:
    result = payload.get("result")
    if not isinstance(result, Mapping):
        return ""
    if "message" in result:
        return str(result["message"])
    return msgspec.json.encode(result.get("data")).decode()


def _line(kind: str, payload: Mapping[str, Any]) -> str | None:
    if kind == names.TOOL_CALL:
        return f"call {payload.get('tool')}({_cut(str(payload.get('arguments', '')))})"
    if kind == names.TOOL_RESULT:
        return f"result {payload.get('tool')} [{payload.get('kind')}]: {_cut(_result_text(payload))}"
    if kind in _FAILURES:
        detail = payload.get("message") or payload.get("tool") or ""
        return f"error: {_FAILURES[kind]}" + (f": {_cut(str(detail))}" if detail else "")
    if kind == names.LLM_CALL and payload.get("finishReason") == "length":
        return "cut off: the model's turn hit the output limit"
    if kind == names.ROLE_FINISHED:
        summary = payload.get("summary") or ""
        return f"finished {payload.get('status')}" + (f": {_cut(str(summary))}" if summary else "")
    return None


def _trim(lines: list[str]) -> list[str]:
    if len(lines) <= MAX_LINES:
        return lines
    head, tail = MAX_LINES // 2, MAX_LINES - MAX_LINES // 2 - 1
    return [*lines[:head], f"… {len(lines) - head - tail} lines left out …", *lines[-tail:]]


def condense(events: Iterable[Mapping[str, Any]]) -> list[RoleTrace]:
    """The roles that ran, in the order they first started, each with its condensed lines."""
    traces: dict[str, RoleTrace] = {}
    for event in events:
        kind = str(event.get("type", ""))
        payload = event.get("payload")
        if not isinstance(payload, Mapping):
            continue
        role = payload.get("role")
        if not isinstance(role, str):
            continue
        if kind == names.ROLE_START:
            trace = traces.setdefault(role, RoleTrace(role=role, task=_cut(str(payload.get("task", "")), 600)))
            continue
        trace = traces.setdefault(role, RoleTrace(role=role))
        line = _line(kind, payload)
        if line is not None:
            trace.lines.append(line)
    for trace in traces.values():
        trace.lines = _trim(trace.lines)
    return list(traces.values())
