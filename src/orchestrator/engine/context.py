"""Context-window arithmetic and history surgery (pure): budgets, the backstop, edit_context ops.

Nothing here does I/O or reads the clock. The invariants every function keeps:
- the preamble (system prompt, the entry role's effort directive, the task) is never touched;
- an assistant message with tool calls and its tool-result messages stay together or go together.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import msgspec

from orchestrator.conversation import Message

__all__ = [
    "CHARS_PER_TOKEN",
    "COMPACTION_TARGET",
    "Compaction",
    "EditError",
    "EditOp",
    "PromptEstimate",
    "apply_edits",
    "compact",
    "effective_budget",
    "message_chars",
    "truncate_text",
    "turn_groups",
]

CHARS_PER_TOKEN = 4.0
COMPACTION_TARGET = 0.7
#: The chat template's fixed text (a tool-calling preamble such as Qwen2.5's is ~90 tokens).
TEMPLATE_TOKENS = 100
#: Per message: the template's role markers and separators.
MESSAGE_TOKENS = 6
#: Tool schemas are JSON, which tokenizes denser than prose.
TOOL_CHARS_PER_TOKEN = 3.0
_TRUNCATED_TOOL_CHARS = (2000, 500, 120)


def effective_budget(context_window: int, max_tokens: int, learned_ceiling: int | None) -> int:
    """``min(contextWindow − maxTokens, learnedCeiling)``: the prompt size a request may reach."""
    static = max(1, context_window - max_tokens)
    return static if learned_ceiling is None else max(1, min(static, learned_ceiling))


def message_chars(message: Message) -> int:
    """Characters a message puts on the wire: content, reasoning and tool-call arguments."""
    size = len(message.content) + len(message.reasoning or "")
    for call in message.tool_calls:
        size += len(call.function.name) + len(call.function.arguments)
    return size


def history_chars(history: Sequence[Message]) -> int:
    return sum(message_chars(m) for m in history)


def truncate_text(text: str, limit: int) -> str:
    """Keep the head of ``text`` and say how much was cut, on its own line.

    Never makes a text longer: one that would not shrink past its marker is returned whole.
    """
    removed = len(text) - limit
    marker = f"\n[truncated: {removed} chars removed]"
    if removed <= len(marker):
        return text
    return text[:limit] + marker


def turn_groups(history: Sequence[Message], start: int) -> list[range]:
    """Split ``history[start:]`` into indivisible groups: a message plus the tool results that answer it."""
    groups: list[range] = []
    i = start
    while i < len(history):
        j = i + 1
        if history[i].role == "assistant" and history[i].tool_calls:
            ids = {call.id for call in history[i].tool_calls}
            while j < len(history) and history[j].role == "tool" and history[j].tool_call_id in ids:
                j += 1
        elif history[i].role == "tool":
            while j < len(history) and history[j].role == "tool":
                j += 1
        groups.append(range(i, j))
        i = j
    return groups


class PromptEstimate(msgspec.Struct, frozen=True, kw_only=True):
    """A request's prompt size from its characters: ``fixed`` + ``per_message`` × messages + chars × rate.

    ``fixed`` is the template overhead plus the tool schemas (which ride along on every request);
    ``tokens_per_char`` is calibrated from a size the endpoint reported, when there is one.
    """

    fixed: int
    per_message: int
    tokens_per_char: float

    def tokens(self, messages: Sequence[Message]) -> int:
        return self.fixed + self.per_message * len(messages) + math.ceil(history_chars(messages) * self.tokens_per_char)

    @classmethod
    def calibrated(cls, history: Sequence[Message], tools_chars: int, reported: int | None) -> PromptEstimate:
        """The estimate for ``history`` sent with ``tools_chars`` of tool schemas (pure).

        Without a report: ~4 chars/token for the messages, ~3 for the schemas, plus the template.
        With one, the message rate is whatever makes the estimate of ``history`` equal the report;
        when the report is below the assumed overhead (a leaner template), the overhead is dropped and
        the whole report is spread over the characters, as before.
        """
        fixed = TEMPLATE_TOKENS + math.ceil(tools_chars / TOOL_CHARS_PER_TOKEN)
        chars = max(1, history_chars(history))
        if not reported or reported <= 0:
            return cls(fixed=fixed, per_message=MESSAGE_TOKENS, tokens_per_char=1.0 / CHARS_PER_TOKEN)
        variable = reported - fixed - MESSAGE_TOKENS * len(history)
        if variable * 16 >= chars:  # at least 1 token per 16 chars left for the text itself
            return cls(fixed=fixed, per_message=MESSAGE_TOKENS, tokens_per_char=variable / chars)
        return cls(fixed=0, per_message=0, tokens_per_char=reported / chars)


class Compaction(msgspec.Struct, kw_only=True):
    history: list[Message]
    dropped_messages: int
    truncated_tool_messages: int
    stripped_reasoning_messages: int
    estimated_prompt_tokens: int


def compact(
    history: Sequence[Message],
    *,
    preamble: int,
    reported_prompt_tokens: int | None,
    context_window: int,
    max_tokens: int,
    tools_chars: int = 0,
) -> Compaction | None:
    """The naive backstop after a context rejection: drop oldest turns, truncate, strip reasoning last.

    Tokens are estimated by ``PromptEstimate``: the template overhead and the role's tool schemas
    (``tools_chars`` of JSON) count on top of the messages, whose rate is calibrated by the endpoint's
    reported prompt size for the rejected request (else 4 chars/token). The goal is 70 % of the context
    window; the result is accepted if it at least fits the window minus the completion reservation.
    Returns ``None`` when even the undeletable remainder (preamble + the most recent turn) cannot fit.
    """
    rate = PromptEstimate.calibrated(history, tools_chars, reported_prompt_tokens)
    limit = context_window - max_tokens
    target = min(COMPACTION_TARGET * context_window, limit)
    estimate = rate.tokens

    head = list(history[:preamble])
    groups = turn_groups(history, preamble)
    kept = groups
    while len(kept) > 1 and estimate(head + [history[k] for g in kept for k in g]) > target:
        kept = kept[1:]
    body = [history[k] for g in kept for k in g]
    dropped = len(history) - preamble - len(body)

    truncated: set[int] = set()
    originals = list(body)
    for cap in _TRUNCATED_TOOL_CHARS:
        if estimate(head + body) <= target:
            break
        for i, original in enumerate(originals):
            if original.role == "tool":
                shortened = truncate_text(original.content, cap)
                if len(shortened) < len(body[i].content):
                    body[i] = msgspec.structs.replace(original, content=shortened)
                    truncated.add(i)

    stripped = 0
    last_assistant = max((i for i, m in enumerate(body) if m.role == "assistant"), default=-1)
    for i, message in enumerate(body):
        if estimate(head + body) <= target:
            break
        if message.reasoning and i != last_assistant:
            body[i] = msgspec.structs.replace(message, reasoning=None)
            stripped += 1

    result = head + body
    estimated = estimate(result)
    if estimated > limit:
        return None
    return Compaction(
        history=result,
        dropped_messages=dropped,
        truncated_tool_messages=len(truncated),
        stripped_reasoning_messages=stripped,
        estimated_prompt_tokens=estimated,
    )


# --- edit_context ------------------------------------------------------------------------------


class EditOp(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    op: str
    range: list[float] | None = None
    index: int | None = None
    content: str | None = None


class EditError(ValueError):
    """An edit batch was rejected; nothing was applied."""


def _bounds(op: EditOp, size: int) -> tuple[int, int]:
    if op.range is None or len(op.range) != 2:
        raise EditError(f"{op.op}: `range` must be [start, end)")
    start, end = op.range
    if not all(math.isfinite(x) and x >= 0 and float(x).is_integer() for x in (start, end)) or start > end:
        raise EditError(f"{op.op}: range {op.range} must be two non-negative whole numbers with start <= end")
    if end > size:
        raise EditError(f"{op.op}: range [{int(start)}, {int(end)}) runs past the conversation's {size} messages")
    return int(start), int(end)


def apply_edits(history: Sequence[Message], operations: Sequence[Any], *, protected: int) -> list[Message]:
    """Apply ``drop`` / ``strip_reasoning`` / ``replace`` ops in order on a copy; all or nothing.

    Ranges are half-open ``[start, end)``. Any op touching an index below ``protected`` rejects the
    whole batch. A drop that would orphan a tool result from its call (or a call from its results) is
    rejected too: the next request would be malformed.
    """
    result = list(history)
    for raw in operations:
        try:
            op = msgspec.convert(raw, EditOp)
        except msgspec.ValidationError as exc:
            raise EditError(f"invalid operation {raw!r}: {exc}") from None
        if op.op in ("drop", "strip_reasoning"):
            start, end = _bounds(op, len(result))
            if start < protected and end > start:
                raise EditError(f"{op.op}: messages 0..{protected - 1} are protected (system prompt and task)")
            if op.op == "drop":
                del result[start:end]
            else:
                for i in range(start, end):
                    if result[i].reasoning:
                        result[i] = msgspec.structs.replace(result[i], reasoning=None)
        elif op.op == "replace":
            if op.index is None or op.content is None:
                raise EditError("replace: needs `index` and `content`")
            if not 0 <= op.index < len(result):
                raise EditError(f"replace: index {op.index} is outside the conversation (0..{len(result) - 1})")
            if op.index < protected:
                raise EditError(f"replace: messages 0..{protected - 1} are protected (system prompt and task)")
            result[op.index] = msgspec.structs.replace(result[op.index], content=op.content)
        else:
            raise EditError(f"unknown op {op.op!r}: use drop, strip_reasoning or replace")
    _check_pairs(result, protected)
    return result


def _check_pairs(history: Sequence[Message], start: int) -> None:
    answered: set[str] = set()
    open_calls: set[str] = set()
    for i in range(start, len(history)):
        message = history[i]
        if message.role == "assistant":
            if open_calls:
                raise EditError("the edit would separate a tool call from its result")
            open_calls = {call.id for call in message.tool_calls}
        elif message.role == "tool":
            if message.tool_call_id not in open_calls:
                raise EditError(f"the edit would leave the tool result at index {i} without its call")
            open_calls.discard(message.tool_call_id or "")
            answered.add(message.tool_call_id or "")
        elif open_calls:
            raise EditError("the edit would separate a tool call from its result")
    if open_calls:
        raise EditError("the edit would leave a tool call without its result")
