"""On-demand detail bodies: the Markdown an operation's inspector card shows.

The model never carries these (they can be large); each operation remembers the log index of the one
event holding its material, and this module renders that event:

- role call → the delegation task (for an inquiry handler: the operator's question);
- tool call → the arguments, pretty-printed; tool return → the full result (absent at ``standard``);
- ask_human call → the question and its context; answer return → the answer;
- role return → the finish summary (plus the card's error, when it carried one);
- observe / terminate → the event's ``details``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from orchestrator import vocabulary as names
from orchestrator.flow.foldstate import FlowState

__all__ = ["EventSource", "operation_details", "operation_log_index", "render_details"]


class EventSource(Protocol):
    """Anything that can fetch one log event by index (the service's ``RunIndex`` reads it from disk)."""

    def event_at(self, index: int) -> Mapping[str, Any] | None: ...


def _fenced(text: str, language: str = "") -> str:
    """``text`` in a code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def _json_block(value: Any) -> str:
    return _fenced(json.dumps(value, indent=2, ensure_ascii=False, default=str), "json")


def _arguments(raw: Any) -> str | None:
    if isinstance(raw, str):
        try:
            return _json_block(json.loads(raw))
        except (ValueError, RecursionError):
            return _fenced(raw)
    return None if raw is None else _json_block(raw)


def _summary(payload: Mapping[str, Any]) -> str | None:
    parts: list[str] = []
    summary = payload.get("summary")
    if isinstance(summary, str):
        parts.append(summary)
    error = payload.get("error")
    if isinstance(error, Mapping) and isinstance(error.get("kind"), str):
        line = f"**Error:** `{error['kind']}`"
        if isinstance(error.get("message"), str) and error["message"]:
            line += f" — {error['message']}"
        parts.append(line)
    return "\n\n".join(parts) or None


def _text(payload: Mapping[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) else None


def render_details(event: Mapping[str, Any] | None) -> str | None:
    """The Markdown detail body one event contributes, ``None`` when it carries none."""
    if not isinstance(event, Mapping) or not isinstance(event.get("payload"), Mapping):
        return None
    payload: Mapping[str, Any] = event["payload"]
    kind = event.get("type")
    if kind == names.ROLE_START:
        return _text(payload, "task")
    if kind == names.INTERRUPT:
        return _text(payload, "message")
    if kind == names.TOOL_CALL:
        return _arguments(payload.get("arguments"))
    if kind == names.TOOL_RESULT:
        result = payload.get("result")
        return None if result is None else _json_block(result)
    if kind == names.ASK_HUMAN:
        question, context = _text(payload, "question"), _text(payload, "context")
        if question is None:
            return None
        return f"{question}\n\n**Context:** {context}" if context else question
    if kind == names.HUMAN_ANSWER:
        return _text(payload, "answer")
    if kind == names.ROLE_FINISHED:
        return _summary(payload)
    if kind in (names.OBSERVE, names.TERMINATE):
        return _text(payload, "details")
    return None


def operation_log_index(state: FlowState, operation_id: str) -> int | None:
    """The log index of the event an operation was folded from (its detail event: a tool call's
    ``tool_call``, a return's ``tool_result`` / ``role_finished`` …); ``None`` when it has none.
    Raises ``KeyError`` when the id names no operation of this state."""
    match = re.fullmatch(r"op-([1-9][0-9]*)", operation_id)
    position = int(match.group(1)) - 1 if match else -1
    if not 0 <= position < len(state.details):
        raise KeyError(operation_id)
    index = state.details[position]
    return index if index >= 0 else None


def operation_details(
    source: Sequence[Mapping[str, Any]] | EventSource, state: FlowState, operation_id: str
) -> str | None:
    """The detail body of ``operation_id`` in the model ``state`` was folded into.

    ``source`` is the event list the state was folded from (or a ``RunIndex``). Raises ``KeyError``
    when the id names no operation of this state (e.g. a stale id from a later frame).
    """
    match = re.fullmatch(r"op-([1-9][0-9]*)", operation_id)
    position = int(match.group(1)) - 1 if match else -1
    if not 0 <= position < len(state.details):
        raise KeyError(operation_id)
    index = state.details[position]
    if index < 0:
        return None
    if not isinstance(source, Sequence):
        return render_details(source.event_at(index))
    return render_details(source[index] if index < len(source) else None)
