"""The conversation's shapes: messages, the model's tool calls, tool results and result cards.

A leaf module: the model client (``llm/``), the tools (``tools/``), the engine and the run log all
speak these types, and none of them owns it. The run log embeds them in its event payloads; the
checkpoint stores ``Message`` lists; the wire codec translates ``Message`` to and from the endpoint's
JSON. Fields are camelCase on the wire (``Base`` policy); optional fields are omitted, never null.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from orchestrator.schema import Base

__all__ = ["CardError", "CardStatus", "FunctionCall", "Message", "ResultCard", "ToolCall", "ToolResult", "Usage"]

#: How a role ended, as its result card says.
CardStatus = Literal["success", "error", "needs_clarification"]


class FunctionCall(Base):
    name: str
    arguments: str


class ToolCall(Base):
    """One tool call as the model made it: ``arguments`` is the raw JSON string."""

    id: str
    function: FunctionCall
    type: str = "function"


class Message(Base):
    """One conversation message. ``reasoning`` rides on assistant messages and is replayed every turn."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    reasoning: str | None = None
    tool_calls: list[ToolCall] = []
    tool_call_id: str | None = None


class Usage(msgspec.Struct, kw_only=True, rename="camel"):
    """Endpoint-reported token usage of one call; ``cachedPromptTokens`` only when reported."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_prompt_tokens: int | UnsetType = UNSET


class CardError(Base):
    kind: str
    message: str | None = None
    details: Any = None


class ResultCard(Base):
    """What a role returns to its caller (the ``finish`` tool's arguments, validated)."""

    status: CardStatus
    summary: str
    artifacts: list[str] = []
    error: CardError | None = None


class ToolResult(Base):
    """A tool's outcome: ``{kind: "success", data}`` or ``{kind, message, details}``."""

    kind: str
    data: Any = UNSET
    message: str | UnsetType = UNSET
    details: Any = UNSET

    @property
    def ok(self) -> bool:
        return self.kind == "success"
