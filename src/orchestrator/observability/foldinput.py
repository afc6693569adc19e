"""The trace fold's view of a log line: only the keys ``spans.fold_span`` reads, decoded in one pass.

Both faces of the export decode with it — the live listener each written line on the sink's thread,
``export-trace`` the file — so they fold the same events by construction. A log line is mostly content
(an ``llm_call`` carries the messages sent, a ``tool_result`` the tool's output), which the fold reads only
when it captures content (``capture_content``): then the whole line is decoded (``decode_line``). Without,
the payload is decoded into a ``msgspec.Struct`` listing the keys the fold reads, so msgspec skips the rest
at C speed, and a ``tool_result``'s ``result`` is kept as logged (a ``msgspec.Raw``: the fold reads its
length, ``orchestrator.tool.result_size``) unless it may hold an exit status (an ``exitCode``) or is not
an object — then it is decoded whole.

The event is handed to the fold as ``read_events`` gives it (``type``, ``timestamp``, ``payload``), the
payload holding only those of the keys present in the line; ``None`` for a line the fold would ignore
anyway (blank, corrupt, no string ``type``, a payload that is not an object).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from msgspec import UNSET

from orchestrator.runlog.reader import decode_line

__all__ = ["EventDecoder", "event_decoder", "read_fold_events"]

#: One log line as the fold reads it (``decode_line``'s shape), ``None`` when it has nothing to fold.
EventDecoder = Callable[[bytes], dict[str, Any] | None]
_ABSENT = msgspec.Raw(b"")


class _Payload(msgspec.Struct):
    """Every payload key the fold reads without content (spans.py, suspensions.py, ``TraceState.role``)."""

    role: Any = UNSET
    roleId: Any = UNSET
    parentRoleId: Any = UNSET
    depth: Any = UNSET
    status: Any = UNSET
    error: Any = UNSET
    attempt: Any = UNSET
    attempts: Any = UNSET
    cause: Any = UNSET
    delaySeconds: Any = UNSET
    message: Any = UNSET
    usage: Any = UNSET
    finishReason: Any = UNSET
    responseModel: Any = UNSET
    messageCount: Any = UNSET
    tool: Any = UNSET
    arguments: Any = UNSET
    kind: Any = UNSET
    result: msgspec.Raw = _ABSENT
    id: Any = UNSET
    trigger: Any = UNSET
    target: Any = UNSET
    handler: Any = UNSET
    action: Any = UNSET
    handlerStatus: Any = UNSET
    aborted: Any = UNSET
    droppedMessages: Any = UNSET
    truncatedToolMessages: Any = UNSET
    strippedReasoningMessages: Any = UNSET
    estimatedPromptTokens: Any = UNSET
    contextWindow: Any = UNSET
    resumedFrames: Any = UNSET
    effort: Any = UNSET
    parent: Any = UNSET
    # ``suspensions.point``'s span-event attributes
    details: Any = UNSET
    promptTokens: Any = UNSET
    effectiveBudget: Any = UNSET
    child: Any = UNSET
    roleName: Any = UNSET
    reason: Any = UNSET


class _Line(msgspec.Struct):
    type: str
    payload: _Payload | None = None
    timestamp: Any = None


_lines = msgspec.json.Decoder(_Line)
_any = msgspec.json.Decoder()


def _result(raw: msgspec.Raw) -> object:
    """``result`` as the fold needs it: as logged when only its length is read (an object holding no
    ``exitCode``, not even spelled with ``\\u`` escapes), else decoded."""
    text = bytes(raw)  # a copy (a Raw has no search), cheap next to decoding it
    if text[:1] != b"{" or b"exitCode" in text or (b"\\" in text and b"\\u" in text):
        return _any.decode(text)
    return raw


def _decode(line: bytes) -> dict[str, Any] | None:
    try:
        record = _lines.decode(line)
    except (msgspec.DecodeError, RecursionError):  # blank, corrupt, or no string ``type``
        return None
    payload = record.payload
    if payload is None:
        return None
    raw, payload.result = payload.result, UNSET  # to_builtins skips an UNSET field (and cannot take a Raw)
    fields: dict[str, Any] = msgspec.to_builtins(payload)
    if raw:
        fields["result"] = _result(raw)
    return {"type": record.type, "timestamp": record.timestamp, "payload": fields}


def event_decoder(*, capture_content: bool) -> EventDecoder:
    """The decoder of log lines for a fold that does (not) capture content: with content, the whole line
    (``runlog.reader.decode_line``)."""
    return decode_line if capture_content else _decode


def read_fold_events(path: Path, *, capture_content: bool, limit: int | None = None) -> list[dict[str, Any]]:
    """Every foldable event of a log (``read_events`` for the fold), or of its first ``limit`` bytes (what
    was written when a listener started); ``[]`` when absent."""
    try:
        with path.open("rb") as log:
            data = log.read() if limit is None else log.read(limit)
    except FileNotFoundError:
        return []
    decode = event_decoder(capture_content=capture_content)
    return [event for line in data.split(b"\n") if (event := decode(line)) is not None]
