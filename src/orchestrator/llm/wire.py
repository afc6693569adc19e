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

from orchestrator.conversation import FunctionCall, Message, ToolCall, Usage

__all__ = [
    "AttemptFailed",
    "FailureCause",
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
    #: the model the endpoint says answered (``response.model``), when it says
    model: str | None = None


#: Why an attempt failed: no headers / an idle stream, a network error, an HTTP error status, the server
#: still loading its model (``503 Loading model``), a broken or failed stream, an empty completion.
FailureCause = Literal["stall", "network", "http", "loading", "stream", "empty"]


class AttemptFailed(Exception):
    """This attempt produced no usable turn; ``retry`` says whether another attempt may help."""

    def __init__(self, message: str, *, retry: bool = True, cause: FailureCause = "stream") -> None:
        super().__init__(message)
        self.retry = retry
        self.cause: FailureCause = cause


DeltaField = Literal["content", "reasoning"]
_event_decoder = msgspec.json.Decoder(dict[str, Any])


class _Item:
    """One output item being assembled: its kind, streamed pieces, and what ``output_item.done`` said."""

    __slots__ = ("arguments", "call_id", "closed", "final", "kind", "name", "pieces")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.pieces: list[str] = []
        self.final: str | None = None
        self.call_id: str | None = None
        self.name: str | None = None
        self.arguments: str | None = None
        #: ``output_item.done`` arrived for it.
        self.closed = False

    def text(self) -> str:
        return self.final if self.final is not None else "".join(self.pieces)


_DELTA_KINDS = {
    "response.output_text.delta": "message",
    "response.reasoning_text.delta": "reasoning",
    "response.reasoning_summary_text.delta": "reasoning",
    "response.function_call_arguments.delta": "function_call",
}


class TurnAssembler:
    """Fold one attempt's stream events into a ``Turn``.

    Items are keyed by ``item_id`` (an ``output_item``'s ``id``) and kept in the order their
    ``output_item.added`` arrived; ``output_index`` is only a fallback key, because llama-server sends
    none (and several parallel calls would otherwise collapse into one). An event with neither belongs
    to the latest item of its kind. ``on_delta(field, text)`` is called for every content/reasoning
    delta as it arrives. Items are finalised from ``output_item.done`` when the server sends it
    (authoritative), else from the deltas. A bare ``data: {"error": ...}`` frame (no ``event:`` line,
    as llama-server sends mid-stream) fails the attempt with that error's message.
    """

    def __init__(self, on_delta: Callable[[DeltaField, str], None] | None = None) -> None:
        self._on_delta = on_delta
        self._items: dict[str, _Item] = {}
        self._by_index: dict[int, str] = {}
        self.turn: Turn | None = None

    def feed(self, event_type: str, data: str) -> Turn | None:
        """Handle one SSE event; returns the ``Turn`` at the terminal event.

        Raises ``AttemptFailed`` for ``response.failed``, ``error`` events and frames, and unparsable payloads.
        """
        try:
            body = _event_decoder.decode(data) if data else {}
        except (msgspec.DecodeError, RecursionError) as exc:
            raise AttemptFailed(f"unparsable stream event {event_type!r}: {exc}") from exc
        kind = body.get("type") or event_type
        if kind in _DELTA_KINDS:
            item = self._find(body, _DELTA_KINDS[kind])
            text = body.get("delta", "")
            if isinstance(text, str) and text:
                item.pieces.append(text)
                if self._on_delta is not None and item.kind != "function_call":
                    self._on_delta("reasoning" if item.kind == "reasoning" else "content", text)
        elif kind == "response.output_item.added":
            self._added(body)
        elif kind == "response.function_call_arguments.done":
            arguments = body.get("arguments")
            if isinstance(arguments, str):
                self._find(body, "function_call").arguments = arguments
        elif kind == "response.output_item.done":
            self._done(body)
        elif kind in ("response.completed", "response.incomplete"):
            self.turn = self._finish(body.get("response") or {})
            return self.turn
        elif kind == "response.failed":
            error = (body.get("response") or {}).get("error") or {}
            raise AttemptFailed(f"endpoint reported failure: {_error_text(error) or 'no detail'}")
        elif kind == "error":
            raise AttemptFailed(f"endpoint stream error: {_error_text(body) or data}")
        elif "error" in body and "type" not in body:
            raise AttemptFailed(f"endpoint stream error: {_error_text(body['error']) or data}")
        return None

    def _key(self, body: dict[str, Any], item_id: object) -> str | None:
        if isinstance(item_id, str) and item_id:
            return item_id
        index = body.get("output_index")
        if isinstance(index, int) and index in self._by_index:
            return self._by_index[index]
        return None

    def _new(self, key: str | None, kind: str, body: dict[str, Any]) -> _Item:
        key = key or f"#{len(self._items)}"
        item = self._items.setdefault(key, _Item(kind))
        index = body.get("output_index")
        if isinstance(index, int):
            self._by_index.setdefault(index, key)
        return item

    def _find(self, body: dict[str, Any], kind: str) -> _Item:
        """The item an event without its own ``item`` belongs to (created if the server skipped ``added``)."""
        key = self._key(body, body.get("item_id"))
        if key is not None and key in self._items:
            return self._items[key]
        if key is None:
            latest = next((i for i in reversed(self._items.values()) if i.kind == kind), None)
            if latest is not None:
                return latest
        return self._new(key, kind, body)

    def _added(self, body: dict[str, Any]) -> None:
        raw = body.get("item")
        item = raw if isinstance(raw, dict) else {}
        key = self._key(body, item.get("id"))
        entry = self._new(key, str(item.get("type") or ""), body)
        self._describe(entry, item)

    def _done(self, body: dict[str, Any]) -> None:
        raw = body.get("item")
        item = raw if isinstance(raw, dict) else {}
        kind = str(item.get("type") or "")
        key = self._key(body, item.get("id"))
        if key is not None and key in self._items:
            entry = self._items[key]
        elif key is None and (found := self._unclosed(kind, item.get("call_id"))) is not None:
            entry = found
        else:
            entry = self._new(key, kind, body)
        entry.closed = True
        self._describe(entry, item)
        if kind == "function_call" and isinstance(item.get("arguments"), str):
            entry.arguments = item["arguments"]
        elif kind == "message":
            parts = [p.get("text", "") for p in item.get("content") or [] if isinstance(p, dict)]
            entry.final = "".join(p for p in parts if isinstance(p, str))
        elif kind == "reasoning":
            parts = [p.get("text", "") for p in item.get("content") or [] if isinstance(p, dict)]
            if not any(parts):
                parts = [p.get("text", "") for p in item.get("summary") or [] if isinstance(p, dict)]
            if any(parts):
                entry.final = "".join(p for p in parts if isinstance(p, str))

    def _unclosed(self, kind: str, call_id: object) -> _Item | None:
        """For a ``done`` without an id: the call with that ``call_id``, else the oldest item of the
        kind not closed yet (closing events come in the order the items were added)."""
        items = [i for i in self._items.values() if i.kind == kind]
        if call_id:
            match = next((i for i in items if i.call_id == call_id), None)
            if match is not None:
                return match
        return next((i for i in items if not i.closed), None)

    @staticmethod
    def _describe(entry: _Item, item: dict[str, Any]) -> None:
        if item.get("type"):
            entry.kind = str(item["type"])
        if entry.kind == "function_call":
            entry.call_id = item.get("call_id") or entry.call_id or item.get("id")
            entry.name = item.get("name") or entry.name

    def _finish(self, response: dict[str, Any]) -> Turn:
        items = list(self._items.values())
        content = "".join(i.text() for i in items if i.kind == "message")
        reasoning = "".join(i.text() for i in items if i.kind == "reasoning")
        calls = [
            ToolCall(
                id=str(item.call_id or f"call_{n}"),
                function=FunctionCall(
                    name=str(item.name or ""),
                    arguments=item.arguments if item.arguments is not None else "".join(item.pieces),
                ),
            )
            for n, item in enumerate(items)
            if item.kind == "function_call"
        ]
        return Turn(
            content=content,
            reasoning=reasoning or None,
            tool_calls=calls,
            usage=_usage(response.get("usage") or {}),
            finish_reason=_finish_reason(response, bool(calls)),
            model=model if isinstance(model := response.get("model"), str) and model else None,
        )


def _error_text(error: object) -> str:
    """The message of an error object (``{"message": ..., "code": ...}``), or its text."""
    if isinstance(error, dict):
        return str(error.get("message") or error.get("code") or "")
    return str(error or "")


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
