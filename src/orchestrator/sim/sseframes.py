"""Pure builder of the Responses-API SSE event sequence for one scripted turn.

No I/O and no trio: :func:`build_stream` returns every wire frame up front (the server only paces them)
plus the terminal ``response`` object, which also serves as the non-streaming reply.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import msgspec

from orchestrator.sim.matching import ResolvedUsage, tool_arguments
from orchestrator.sim.script import Turn

__all__ = [
    "SIM_EPOCH",
    "ResponseMeta",
    "SseEvent",
    "StreamPlan",
    "build_stream",
    "chunks",
    "response_object",
    "sse_frame",
    "usage_payload",
]

#: Base of the deterministic ``created_at`` timestamps (2026-01-01T00:00:00Z) plus the response number.
SIM_EPOCH = 1_767_225_600

_ENCODER = msgspec.json.Encoder()


class ResponseMeta(msgspec.Struct, frozen=True, kw_only=True):
    """Request-derived fields the ``response`` object echoes, and the response's number (for ids)."""

    number: int
    model: str
    instructions: str | None = None
    tools: list[dict[str, Any]] = []
    max_output_tokens: int | None = None
    temperature: float | None = None

    @property
    def response_id(self) -> str:
        return f"resp_{self.number}"


class SseEvent(msgspec.Struct, frozen=True):
    """One encoded SSE frame; ``delta`` marks the chunked text events the server paces."""

    type: str
    frame: bytes
    delta: bool = False


class StreamPlan(msgspec.Struct, frozen=True):
    """Every frame in order, the terminal response object, and the number of call ids used."""

    events: list[SseEvent]
    response: dict[str, Any]
    calls_used: int


def sse_frame(event_type: str, payload: dict[str, Any]) -> bytes:
    """``event: <type>\\ndata: <compact json>\\n\\n``."""
    return b"event: " + event_type.encode() + b"\ndata: " + _ENCODER.encode(payload) + b"\n\n"


def chunks(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of ``size`` characters (the last may be shorter); none for ""."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def _echo_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request's function tools in the ``FunctionTool`` shape a ``response`` object carries."""
    echoed: list[dict[str, Any]] = []
    for tool in tools:
        spec = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        if tool.get("type") != "function" or not isinstance(spec.get("name"), str):
            continue
        echoed.append(
            {
                "type": "function",
                "name": spec["name"],
                "description": spec.get("description"),
                "parameters": spec.get("parameters"),
                "strict": bool(spec.get("strict", False)),
            }
        )
    return echoed


def usage_payload(usage: ResolvedUsage) -> dict[str, Any]:
    """The Responses ``usage`` object."""
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_prompt_tokens, "cache_write_tokens": 0},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    }


def response_object(
    meta: ResponseMeta,
    status: Literal["in_progress", "completed", "incomplete", "failed"],
    output: list[dict[str, Any]],
    usage: ResolvedUsage | None = None,
) -> dict[str, Any]:
    """A ``response`` object; terminal statuses also carry usage, error and incomplete details."""
    created = SIM_EPOCH + meta.number
    return {
        "id": meta.response_id,
        "object": "response",
        "created_at": created,
        "status": status,
        "completed_at": created if status == "completed" else None,
        "error": (
            {"code": "server_error", "message": "the simulated model failed (scripted finishReason error)"}
            if status == "failed"
            else None
        ),
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": meta.instructions,
        "max_output_tokens": meta.max_output_tokens,
        "metadata": {},
        "model": meta.model,
        "output": output,
        "parallel_tool_calls": True,
        "temperature": meta.temperature,
        "tool_choice": "auto",
        "tools": _echo_tools(meta.tools),
        "top_p": None,
        "truncation": "disabled",
        "usage": usage_payload(usage) if usage is not None else None,
    }


class _Builder:
    def __init__(self) -> None:
        self.events: list[SseEvent] = []
        self.output: list[dict[str, Any]] = []

    def _append(self, event_type: str, fields: dict[str, Any], paced: bool) -> None:
        payload = {"type": event_type, "sequence_number": len(self.events), **fields}
        self.events.append(SseEvent(event_type, sse_frame(event_type, payload), paced))

    def emit(self, event_type: str, **fields: Any) -> None:
        self._append(event_type, fields, False)

    def emit_delta(self, event_type: str, **fields: Any) -> None:
        self._append(event_type, fields, True)

    def item(self, added: dict[str, Any], done: dict[str, Any], body: Callable[[int], None]) -> None:
        index = len(self.output)
        self.emit("response.output_item.added", output_index=index, item=added)
        body(index)
        self.emit("response.output_item.done", output_index=index, item=done)
        self.output.append(done)


def build_stream(
    turn: Turn,
    meta: ResponseMeta,
    usage: ResolvedUsage,
    *,
    first_call: int = 1,
) -> StreamPlan:
    """Every SSE frame for ``turn``: created, in_progress, reasoning, message, calls, terminal event.

    Call ids are ``call_<first_call>``, ``call_<first_call + 1>``, ...; item ids derive from
    ``meta.number``. ``finish_reason`` picks the terminal event (completed / incomplete / failed).
    """
    b = _Builder()
    n = meta.number
    b.emit("response.created", response=response_object(meta, "in_progress", []))
    b.emit("response.in_progress", response=response_object(meta, "in_progress", []))

    if turn.reasoning:
        text = turn.reasoning
        item_id = f"rs_{n}_{len(b.output)}"

        def reasoning_body(index: int) -> None:
            for piece in chunks(text, turn.chunk_chars):
                b.emit_delta(
                    "response.reasoning_text.delta",
                    item_id=item_id,
                    output_index=index,
                    content_index=0,
                    delta=piece,
                )
            b.emit("response.reasoning_text.done", item_id=item_id, output_index=index, content_index=0, text=text)

        b.item(
            {"id": item_id, "type": "reasoning", "summary": [], "content": [], "status": "in_progress"},
            {
                "id": item_id,
                "type": "reasoning",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": text}],
                "status": "completed",
            },
            reasoning_body,
        )

    if turn.content:
        content = turn.content
        msg_id = f"msg_{n}_{len(b.output)}"
        done_part = {"type": "output_text", "text": content, "annotations": [], "logprobs": []}

        def message_body(index: int) -> None:
            common = {"item_id": msg_id, "output_index": index, "content_index": 0}
            b.emit(
                "response.content_part.added",
                **common,
                part={"type": "output_text", "text": "", "annotations": [], "logprobs": []},
            )
            for piece in chunks(content, turn.chunk_chars):
                b.emit_delta("response.output_text.delta", **common, delta=piece, logprobs=[])
            b.emit("response.output_text.done", **common, text=content, logprobs=[])
            b.emit("response.content_part.done", **common, part=done_part)

        message = {"id": msg_id, "type": "message", "role": "assistant"}
        b.item(
            {**message, "status": "in_progress", "content": []},
            {**message, "status": "completed", "content": [done_part]},
            message_body,
        )

    call_number = first_call
    for call in turn.tool_calls:
        arguments = tool_arguments(call)
        fc_id = f"fc_{n}_{len(b.output)}"
        base = {"id": fc_id, "type": "function_call", "call_id": f"call_{call_number}", "name": call.name}
        call_number += 1

        def call_body(index: int, fc_id: str = fc_id, arguments: str = arguments, name: str = call.name) -> None:
            for piece in chunks(arguments, turn.chunk_chars):
                b.emit_delta("response.function_call_arguments.delta", item_id=fc_id, output_index=index, delta=piece)
            b.emit(
                "response.function_call_arguments.done",
                item_id=fc_id,
                output_index=index,
                name=name,
                arguments=arguments,
            )

        b.item(
            {**base, "arguments": "", "status": "in_progress"},
            {**base, "arguments": arguments, "status": "completed"},
            call_body,
        )

    terminal: dict[str, tuple[str, Literal["completed", "incomplete", "failed"]]] = {
        "stop": ("response.completed", "completed"),
        "length": ("response.incomplete", "incomplete"),
        "error": ("response.failed", "failed"),
    }
    event_type, status = terminal[turn.finish_reason]
    final = response_object(meta, status, b.output, usage)
    b.emit(event_type, response=final)
    return StreamPlan(b.events, final, call_number - first_call)
