"""The Responses-API wire format (pure): request bodies out, streamed events in.

``build_request`` turns a role's conversation into Responses-API input items: each assistant message's
reasoning becomes a ``reasoning`` item placed before that turn's message and ``function_call`` items;
tool results become ``function_call_output`` items. ``TurnAssembler`` folds the streamed events of one
attempt into a ``Turn`` and reports text deltas as they arrive.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal

import msgspec

from orchestrator.runlog.events import FunctionCall, Message, ToolCall, Usage

__all__ = [
    "AttemptFailed",
    "FunctionTool",
    "ResponsesRequest",
    "Turn",
    "TurnAssembler",
    "build_request",
    "input_items",
]


# --- request -----------------------------------------------------------------------------------


class InputText(msgspec.Struct, tag_field="type", tag="reasoning_text"):
    text: str


class MessageItem(msgspec.Struct, tag_field="type", tag="message"):
    role: str
    content: str


class ReasoningItem(msgspec.Struct, tag_field="type", tag="reasoning"):
    content: list[InputText]
    summary: list[Any] = []


class FunctionCallItem(msgspec.Struct, tag_field="type", tag="function_call"):
    call_id: str
    name: str
    arguments: str


class FunctionCallOutputItem(msgspec.Struct, tag_field="type", tag="function_call_output"):
    call_id: str
    output: str


InputItem = MessageItem | ReasoningItem | FunctionCallItem | FunctionCallOutputItem


class FunctionTool(msgspec.Struct, tag_field="type", tag="function"):
    name: str
    description: str
    parameters: dict[str, Any]


class ResponsesRequest(msgspec.Struct, omit_defaults=True):
    model: str
    input: list[InputItem]
    tools: list[FunctionTool]
    stream: bool  # no default: omit_defaults must never drop it
    max_output_tokens: int | None = None
    temperature: float | None = None


def input_items(history: Sequence[Message]) -> list[InputItem]:
    """Map a conversation to input items; call/output pairs stay in conversation order."""
    items: list[InputItem] = []
    for message in history:
        if message.role == "tool":
            items.append(FunctionCallOutputItem(call_id=message.tool_call_id or "", output=message.content))
            continue
        if message.role == "assistant":
            if message.reasoning:
                items.append(ReasoningItem(content=[InputText(message.reasoning)]))
            if message.content:
                items.append(MessageItem(role="assistant", content=message.content))
            for call in message.tool_calls:
                items.append(
                    FunctionCallItem(call_id=call.id, name=call.function.name, arguments=call.function.arguments)
                )
            continue
        items.append(MessageItem(role=message.role, content=message.content))
    return items


def build_request(
    *,
    model: str,
    history: Sequence[Message],
    tools: Sequence[FunctionTool],
    max_output_tokens: int | None,
    temperature: float | None,
) -> ResponsesRequest:
    return ResponsesRequest(
        model=model,
        input=input_items(history),
        tools=list(tools),
        stream=True,
        max_output_tokens=max_output_tokens,
        temperature=temperature if temperature is not None and math.isfinite(temperature) else None,
    )


# --- response ----------------------------------------------------------------------------------


class Turn(msgspec.Struct, kw_only=True):
    """One completed model turn."""

    content: str
    reasoning: str | None
    tool_calls: list[ToolCall]
    usage: Usage
    finish_reason: str | None


class AttemptFailed(Exception):
    """This attempt produced no usable turn; ``retry`` says whether another attempt may help."""

    def __init__(self, message: str, *, retry: bool = True) -> None:
        super().__init__(message)
        self.retry = retry


DeltaField = Literal["content", "reasoning"]
_event_decoder = msgspec.json.Decoder(dict[str, Any])


class TurnAssembler:
    """Fold one attempt's stream events into a ``Turn``.

    ``on_delta(field, text)`` is called for every content/reasoning delta as it arrives. Items are
    finalised from ``output_item.done`` when the server sends it (authoritative), else from the deltas.
    """

    def __init__(self, on_delta: Callable[[DeltaField, str], None] | None = None) -> None:
        self._on_delta = on_delta
        self._content: dict[int, list[str]] = {}
        self._reasoning: dict[int, list[str]] = {}
        self._calls: dict[int, dict[str, Any]] = {}
        self._final_text: dict[int, str] = {}
        self._final_reasoning: dict[int, str] = {}
        self.turn: Turn | None = None

    def feed(self, event_type: str, data: str) -> Turn | None:
        """Handle one SSE event; returns the ``Turn`` at the terminal event.

        Raises ``AttemptFailed`` for ``response.failed``, ``error`` events and unparsable payloads.
        """
        try:
            body = _event_decoder.decode(data) if data else {}
        except (msgspec.DecodeError, RecursionError) as exc:
            raise AttemptFailed(f"unparsable stream event {event_type!r}: {exc}") from exc
        kind = body.get("type") or event_type
        index = int(body.get("output_index") or 0)
        if kind == "response.output_text.delta":
            self._delta(self._content, index, "content", body.get("delta", ""))
        elif kind in ("response.reasoning_text.delta", "response.reasoning_summary_text.delta"):
            self._delta(self._reasoning, index, "reasoning", body.get("delta", ""))
        elif kind == "response.output_item.added":
            self._item(index, body.get("item") or {}, final=False)
        elif kind == "response.function_call_arguments.delta":
            call = self._calls.setdefault(index, {"arguments": []})
            call.setdefault("arguments", []).append(body.get("delta", ""))
        elif kind == "response.function_call_arguments.done":
            call = self._calls.setdefault(index, {"arguments": []})
            call["arguments"] = [body.get("arguments", "")]
        elif kind == "response.output_item.done":
            self._item(index, body.get("item") or {}, final=True)
        elif kind in ("response.completed", "response.incomplete"):
            self.turn = self._finish(body.get("response") or {})
            return self.turn
        elif kind == "response.failed":
            error = (body.get("response") or {}).get("error") or {}
            raise AttemptFailed(f"endpoint reported failure: {error.get('message') or error or 'no detail'}")
        elif kind == "error":
            raise AttemptFailed(f"endpoint stream error: {body.get('message') or body.get('code') or data}")
        return None

    def _delta(self, target: dict[int, list[str]], index: int, field: DeltaField, text: str) -> None:
        if not text:
            return
        target.setdefault(index, []).append(text)
        if self._on_delta is not None:
            self._on_delta(field, text)

    def _item(self, index: int, item: dict[str, Any], *, final: bool) -> None:
        kind = item.get("type")
        if kind == "function_call":
            call = self._calls.setdefault(index, {"arguments": []})
            call["call_id"] = item.get("call_id") or item.get("id") or call.get("call_id")
            call["name"] = item.get("name") or call.get("name")
            if final and isinstance(item.get("arguments"), str):
                call["arguments"] = [item["arguments"]]
        elif final and kind == "message":
            parts = [p.get("text", "") for p in item.get("content") or [] if p.get("type") == "output_text"]
            self._final_text[index] = "".join(parts)
        elif final and kind == "reasoning":
            parts = [p.get("text", "") for p in item.get("content") or [] if isinstance(p, dict)]
            if not any(parts):
                parts = [p.get("text", "") for p in item.get("summary") or [] if isinstance(p, dict)]
            if any(parts):
                self._final_reasoning[index] = "".join(parts)

    def _finish(self, response: dict[str, Any]) -> Turn:
        content = "".join(
            self._final_text.get(i, "".join(self._content.get(i, [])))
            for i in sorted(set(self._content) | set(self._final_text))
        )
        reasoning = "".join(
            self._final_reasoning.get(i, "".join(self._reasoning.get(i, [])))
            for i in sorted(set(self._reasoning) | set(self._final_reasoning))
        )
        calls = [
            ToolCall(
                id=str(call.get("call_id") or f"call_{i}"),
                function=FunctionCall(name=str(call.get("name") or ""), arguments="".join(call["arguments"])),
            )
            for i, call in sorted(self._calls.items())
        ]
        return Turn(
            content=content,
            reasoning=reasoning or None,
            tool_calls=calls,
            usage=_usage(response.get("usage") or {}),
            finish_reason=_finish_reason(response, bool(calls)),
        )


def _usage(raw: dict[str, Any]) -> Usage:
    prompt = int(raw.get("input_tokens") or 0)
    completion = int(raw.get("output_tokens") or 0)
    details = raw.get("input_tokens_details") or {}
    usage = Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=int(raw.get("total_tokens") or prompt + completion),
    )
    if isinstance(details.get("cached_tokens"), int):
        usage.cached_prompt_tokens = details["cached_tokens"]
    return usage


def _finish_reason(response: dict[str, Any], has_calls: bool) -> str | None:
    """Map the Responses API's terminal status onto the chat-completions finish reasons the log uses."""
    status = response.get("status")
    if status == "completed":
        return "tool_calls" if has_calls else "stop"
    if status == "incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason")
        return "content_filter" if reason == "content_filter" else "length"
    if status == "failed":
        return "error"
    return None
