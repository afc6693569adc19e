"""Helpers for the sim-model tests: request bodies, strict SSE parsing, and the strict event validator."""

from __future__ import annotations

import json
from typing import Annotated, Any, Union, get_args

import httpx
from openai.types.responses import ResponseStreamEvent
from pydantic import Field, TypeAdapter

Event = tuple[str, dict[str, Any]]

#: Discriminated on ``type``: one precise error per bad event, and strict (no coercion).
STREAM_EVENT = TypeAdapter(
    Annotated[Union[get_args(get_args(ResponseStreamEvent)[0])], Field(discriminator="type")]  # noqa: UP007
)


def validate_event(data: str) -> Any:
    """Validate one raw ``data:`` payload strictly; raises ``pydantic.ValidationError``."""
    return STREAM_EVENT.validate_json(data, strict=True)


def tool(name: str, description: str = "a tool") -> dict[str, Any]:
    return {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": {}},
    }


def body(
    user: str = "hello",
    *,
    system: str | None = None,
    tools: tuple[str, ...] = (),
    stream: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    """A Responses-API request body: an optional system message, then one user message."""
    items: list[dict[str, Any]] = []
    if system is not None:
        items.append({"type": "message", "role": "system", "content": system})
    items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": user}]})
    return {"model": "sim", "input": items, "tools": [tool(t) for t in tools], "stream": stream, **extra}


def parse_sse(text: str) -> list[tuple[str, str]]:
    """Split an SSE body into (event, raw data), asserting the exact ``event:``/``data:`` framing."""
    assert text.endswith("\n\n"), "stream must end with a blank line"
    assert "[DONE]" not in text
    frames: list[tuple[str, str]] = []
    for block in text[:-2].split("\n\n"):
        lines = block.split("\n")
        assert len(lines) == 2, block
        assert lines[0].startswith("event: ") and lines[1].startswith("data: "), block
        frames.append((lines[0].removeprefix("event: "), lines[1].removeprefix("data: ")))
    return frames


def events_of(response: httpx.Response) -> list[Event]:
    """The decoded events of a successful streamed response, checking type and sequence numbers."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/event-stream"
    events: list[Event] = []
    for index, (name, data) in enumerate(parse_sse(response.text)):
        payload = json.loads(data)
        assert payload["type"] == name
        assert payload["sequence_number"] == index
        assert data == json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
        events.append((name, payload))
    return events


def types_of(events: list[Event]) -> list[str]:
    return [name for name, _ in events]


def terminal(events: list[Event]) -> dict[str, Any]:
    """The ``response`` object of the last event."""
    return events[-1][1]["response"]


def deltas(events: list[Event], kind: str) -> list[str]:
    return [payload["delta"] for name, payload in events if name == f"response.{kind}.delta"]
