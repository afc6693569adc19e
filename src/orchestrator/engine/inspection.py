"""Bounded, read-only views of another role instance's conversation and of the run log (pure).

Handlers (loop check, context, inquiry) never see a whole conversation: each tool returns an index,
a capped window, capped matches, or a compact trace. Every function takes the data it reads and
returns a ``ToolResult``; none does I/O except the run-log readers, which read the log file.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from orchestrator.conversation import Message, ToolResult
from orchestrator.engine.state import RoleFrame
from orchestrator.tools.base import failure, success

__all__ = [
    "LOG_PAGE_CAP",
    "READ_WINDOW_CAP",
    "SEARCH_MATCH_CAP",
    "list_role_messages",
    "read_message_window",
    "read_run_log",
    "recent_role_tool_calls",
    "search_role_blocks",
    "search_run_log",
]

READ_WINDOW_CAP = 2000
SEARCH_CONTEXT = 80
SEARCH_MATCH_CAP = 50
TRACE_CAP = 100
LOG_PAGE_CAP = 100
LOG_SEARCH_CAP = 50
LOG_EXCERPT = 240

_json = msgspec.json.Decoder()


def list_role_messages(frame: RoleFrame) -> ToolResult:
    """Per message: index, role, content and reasoning sizes, tool-call count."""
    return success(
        {
            "roleId": frame.instance_id,
            "messages": [
                {
                    "index": i,
                    "role": m.role,
                    "contentChars": len(m.content),
                    "reasoningChars": len(m.reasoning or ""),
                    "toolCallCount": len(m.tool_calls),
                }
                for i, m in enumerate(frame.history)
            ],
        }
    )


def read_message_window(frame: RoleFrame, index: int, field: str, start: int, end: int) -> ToolResult:
    """Characters ``[start, end)`` of one message's content or reasoning, at most ``READ_WINDOW_CAP``."""
    if not 0 <= index < len(frame.history):
        return failure("invalid_arguments", f"index {index} is outside 0..{len(frame.history) - 1}")
    if field not in ("content", "reasoning"):
        return failure("invalid_arguments", "field must be content or reasoning")
    if start < 0 or end < start:
        return failure("invalid_arguments", "need 0 <= start <= end")
    message = frame.history[index]
    text = message.content if field == "content" else (message.reasoning or "")
    capped_end = min(end, start + READ_WINDOW_CAP, len(text))
    return success(
        {
            "index": index,
            "field": field,
            "start": start,
            "end": max(start, capped_end),
            "totalChars": len(text),
            "text": text[start:capped_end],
            "capped": end > start + READ_WINDOW_CAP,
        }
    )


def search_role_blocks(
    frame: RoleFrame, pattern: str, *, kind: str = "substring", field: str | None = None, max_matches: int = 10
) -> ToolResult:
    """Matches of ``pattern`` in content and/or reasoning, each with a short window around it."""
    limit = max(1, min(max_matches, SEARCH_MATCH_CAP))
    if kind == "regex":
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            return failure("invalid_arguments", f"pattern is not a valid regex: {exc}")
    elif kind == "substring":
        compiled = re.compile(re.escape(pattern))
    else:
        return failure("invalid_arguments", "kind must be substring or regex")
    if not pattern:
        return failure("invalid_arguments", "pattern must not be empty")
    fields = ("content", "reasoning") if field is None else (field,)
    matches: list[dict[str, Any]] = []
    total = 0
    for i, message in enumerate(frame.history):
        for name in fields:
            text = message.content if name == "content" else (message.reasoning or "")
            for found in compiled.finditer(text):
                total += 1
                if len(matches) < limit:
                    lo, hi = max(0, found.start() - SEARCH_CONTEXT), min(len(text), found.end() + SEARCH_CONTEXT)
                    matches.append({"index": i, "field": name, "start": found.start(), "window": text[lo:hi]})
    return success({"matches": matches, "totalMatches": total, "capped": total > limit})


def _result_kind(message: Message | None) -> str:
    if message is None:
        return "pending"
    try:
        body = _json.decode(message.content)
    except (msgspec.DecodeError, RecursionError):
        return "unknown"
    if isinstance(body, dict):
        if isinstance(body.get("kind"), str):
            return body["kind"]
        if isinstance(body.get("status"), str):  # an agent call's card
            return "success" if body["status"] == "success" else f"card_{body['status']}"
    return "unknown"


def recent_role_tool_calls(frame: RoleFrame, limit: int = 20) -> ToolResult:
    """The last ``limit`` calls: tool, a short hash of the arguments, the result kind.

    Consecutive identical ``(tool, argumentHash, resultKind)`` entries are the loop signature.
    """
    results: dict[str, Message] = {m.tool_call_id or "": m for m in frame.history if m.role == "tool"}
    trace: list[dict[str, Any]] = []
    for message in frame.history:
        for call in message.tool_calls:
            digest = hashlib.sha256(call.function.arguments.encode()).hexdigest()[:12]
            trace.append(
                {"tool": call.function.name, "argumentHash": digest, "resultKind": _result_kind(results.get(call.id))}
            )
    n = max(1, min(limit, TRACE_CAP))
    return success({"roleId": frame.instance_id, "totalCalls": len(trace), "calls": trace[-n:]})


# --- the run log ----------------------------------------------------------------------------------


def _lines(log_path: Path) -> list[bytes] | None:
    try:
        data = log_path.read_bytes()
    except FileNotFoundError:
        return None
    return [line for line in data.split(b"\n") if line.strip()]


def read_run_log(log_path: Path, offset: int = 0, limit: int = 50) -> ToolResult:
    """A page of parsed events with their log-wide index; ``unavailable`` before the log exists."""
    lines = _lines(log_path)
    if lines is None:
        return failure("unavailable", "this run has no log yet")
    offset, limit = max(0, offset), max(1, min(limit, LOG_PAGE_CAP))
    events: list[dict[str, Any]] = []
    for index in range(offset, min(len(lines), offset + limit)):
        try:
            record = _json.decode(lines[index])
        except (msgspec.DecodeError, RecursionError):
            continue
        if isinstance(record, Mapping):
            events.append(
                {
                    "index": index,
                    "timestamp": record.get("timestamp"),
                    "type": record.get("type"),
                    "payload": record.get("payload"),
                }
            )
    return success({"totalEvents": len(lines), "offset": offset, "events": events, "more": offset + limit < len(lines)})


def search_run_log(log_path: Path, query: str, event_type: str | None = None, limit: int = 20) -> ToolResult:
    """Case-insensitive substring search over each event's raw line, with a bounded excerpt."""
    if not query:
        return failure("invalid_arguments", "query must not be empty")
    lines = _lines(log_path)
    if lines is None:
        return failure("unavailable", "this run has no log yet")
    needle = query.lower()
    limit = max(1, min(limit, LOG_SEARCH_CAP))
    matches: list[dict[str, Any]] = []
    total = 0
    for index, raw in enumerate(lines):
        text = raw.decode("utf-8", "replace")
        at = text.lower().find(needle)
        if at < 0:
            continue
        try:
            record = _json.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            record = {}
        if not isinstance(record, Mapping):
            record = {}
        if event_type is not None and record.get("type") != event_type:
            continue
        total += 1
        if len(matches) >= limit:
            continue
        lo = max(0, at - LOG_EXCERPT // 2)
        matches.append(
            {
                "index": index,
                "timestamp": record.get("timestamp"),
                "type": record.get("type"),
                "excerpt": text[lo : lo + LOG_EXCERPT],
            }
        )
    return success({"matches": matches, "totalMatches": total})
