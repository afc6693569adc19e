"""Pure request reading for the sim: the request's texts, turn selection, and token estimation.

No I/O and no trio: everything here is a function of a decoded request and the script.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import msgspec

from orchestrator.sim.script import Expect, SimScript, ToolCall, Turn

__all__ = [
    "InputItem",
    "InputPart",
    "ResolvedUsage",
    "SimRequest",
    "decode_request",
    "estimate_completion_tokens",
    "estimate_prompt_tokens",
    "exceeds_context",
    "item_text",
    "last_input_text",
    "matches",
    "resolve_usage",
    "select_turn",
    "tool_arguments",
    "tool_names",
]


class InputPart(msgspec.Struct, kw_only=True):
    """A content part (``input_text``, ``output_text``, ``reasoning_text``, ...); only its text matters."""

    type: str = ""
    text: str = ""


class InputItem(msgspec.Struct, kw_only=True):
    """One Responses-API input item, read leniently (unknown keys ignored)."""

    type: str = "message"
    role: str | None = None
    content: str | list[InputPart] | None = None
    name: str | None = None
    call_id: str | None = None
    arguments: str | None = None
    output: str | list[InputPart] | None = None


class SimRequest(msgspec.Struct, kw_only=True):
    """The parts of a ``POST /v1/responses`` body the sim reads (snake_case, as on the wire)."""

    model: str = ""
    input: str | list[InputItem] = []
    tools: list[dict[str, Any]] = []
    stream: bool = False
    max_output_tokens: int | None = None
    temperature: float | None = None
    instructions: str | None = None

    def items(self) -> list[InputItem]:
        """The input as items; a bare string input is one user message."""
        if isinstance(self.input, str):
            return [InputItem(type="message", role="user", content=self.input)]
        return self.input


class ResolvedUsage(msgspec.Struct, frozen=True, kw_only=True):
    """Usage with every field known."""

    prompt_tokens: int
    completion_tokens: int
    cached_prompt_tokens: int
    reasoning_tokens: int


_REQUEST_DECODER = msgspec.json.Decoder(SimRequest)
_JSON = msgspec.json.Encoder()


def decode_request(body: bytes) -> SimRequest:
    """Decode a request body. Raises ``msgspec.MsgspecError`` (with a ``$.path``) when it is malformed."""
    return _REQUEST_DECODER.decode(body)


def _parts_text(value: str | list[InputPart] | None) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return "".join(part.text for part in value)


def item_text(item: InputItem) -> str:
    """The text an item carries: message/reasoning content, call arguments, or call output."""
    if item.type == "function_call":
        return item.arguments or ""
    if item.type == "function_call_output":
        return _parts_text(item.output)
    return _parts_text(item.content)


def last_input_text(request: SimRequest) -> str:
    """The text of the last input item, or "" when there is none."""
    items = request.items()
    return item_text(items[-1]) if items else ""


def _system_texts(request: SimRequest) -> list[str]:
    texts = [request.instructions] if request.instructions else []
    texts.extend(
        item_text(item) for item in request.items() if item.type == "message" and item.role in ("system", "developer")
    )
    return texts


def tool_names(request: SimRequest) -> list[str]:
    """Names of the request's tools (Responses shape, or Chat shape with a nested ``function``)."""
    names: list[str] = []
    for tool in request.tools:
        name = tool.get("name")
        if name is None and isinstance(tool.get("function"), dict):
            name = tool["function"].get("name")
        if isinstance(name, str):
            names.append(name)
    return names


def matches(expect: Expect | None, request: SimRequest) -> bool:
    """Whether every given condition of ``expect`` holds for ``request`` (``None`` matches anything)."""
    if expect is None:
        return True
    if expect.system_contains is not None and not any(
        expect.system_contains in text for text in _system_texts(request)
    ):
        return False
    if expect.last_input_contains is not None and expect.last_input_contains not in last_input_text(request):
        return False
    if expect.input_contains is not None and not any(
        expect.input_contains in item_text(item) for item in request.items()
    ):
        return False
    if expect.tools_include is not None:
        have = set(tool_names(request))
        if not all(name in have for name in expect.tools_include):
            return False
    return True


def select_turn(turns: Sequence[Turn], consumed: Sequence[bool], request: SimRequest) -> int | None:
    """Index of the first turn, in script order, that is not consumed and whose ``expect`` matches."""
    for index, turn in enumerate(turns):
        if not consumed[index] and matches(turn.expect, request):
            return index
    return None


def _tokens(chars: int, chars_per_token: float) -> int:
    return math.ceil(chars / chars_per_token)


def estimate_prompt_tokens(request: SimRequest, chars_per_token: float) -> int:
    """ceil((input item texts + instructions + compact tools JSON) chars / chars_per_token)."""
    chars = sum(len(item_text(item)) for item in request.items())
    chars += len(request.instructions or "")
    if request.tools:
        chars += len(_JSON.encode(request.tools).decode())
    return _tokens(chars, chars_per_token)


def exceeds_context(prompt_tokens: int, request: SimRequest, context_window: int, *, reserve: bool = True) -> bool:
    """Reject when prompt >= context window - max_output_tokens (missing = 0); without ``reserve``
    (the llama-server flavor, as observed) only when the prompt alone reaches the window."""
    return prompt_tokens >= context_window - ((request.max_output_tokens or 0) if reserve else 0)


def tool_arguments(call: ToolCall) -> str:
    """A scripted call's argument string: compact JSON of ``arguments``, else ``rawArguments`` verbatim."""
    if call.raw_arguments is not None:
        return call.raw_arguments
    return _JSON.encode(call.arguments if call.arguments is not None else {}).decode()


def estimate_completion_tokens(turn: Turn, chars_per_token: float) -> int:
    """ceil((reasoning + content + every call's arguments) chars / chars_per_token)."""
    chars = len(turn.reasoning or "") + len(turn.content or "")
    chars += sum(len(tool_arguments(call)) for call in turn.tool_calls)
    return _tokens(chars, chars_per_token)


def resolve_usage(turn: Turn, prompt_estimate: int, script: SimScript) -> ResolvedUsage:
    """The turn's usage, each missing field filled from the estimates (cached defaults to 0).

    ``reasoning_tokens`` is the reasoning text's estimate, capped at the completion tokens.
    """
    given = turn.usage
    completion_estimate = estimate_completion_tokens(turn, script.chars_per_token)
    prompt = given.prompt_tokens if given and given.prompt_tokens is not None else prompt_estimate
    completion = given.completion_tokens if given and given.completion_tokens is not None else completion_estimate
    cached = given.cached_prompt_tokens if given and given.cached_prompt_tokens is not None else 0
    reasoning = min(_tokens(len(turn.reasoning or ""), script.chars_per_token), completion)
    return ResolvedUsage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_prompt_tokens=cached,
        reasoning_tokens=reasoning,
    )
