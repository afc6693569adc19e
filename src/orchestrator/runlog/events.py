"""The run log's event schema: one tagged msgspec Struct per ``log.jsonl`` event type.

Every line of ``log.jsonl`` is ``{"timestamp": ISO-8601, "type": <tag>, "payload": {...}}``. Writers
build these Structs; readers decode lines into the generic ``LogRecord`` (so a log written by a newer
version, with event types this one does not know, still reads).

Payload fields are camelCase on the wire (``Base`` policy); optional fields are omitted, never null.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from orchestrator.schema import Base

__all__ = [
    "EVENT_TYPES",
    "AgentCall",
    "AskHuman",
    "CardError",
    "ContextBudgetExceeded",
    "ContextCompacted",
    "ContextPressure",
    "DepthExceeded",
    "EffortSet",
    "Event",
    "FunctionCall",
    "HumanAnswer",
    "ImplicitFinish",
    "InquiryDropped",
    "Interrupt",
    "InterruptResolved",
    "InvalidToolCall",
    "LlmCall",
    "LlmCallStart",
    "LlmRetry",
    "LlmRetryPayload",
    "LlmUnavailable",
    "LogRecord",
    "Message",
    "Observe",
    "OperatorNotice",
    "PlanModification",
    "Received",
    "ResultCard",
    "RoleFinished",
    "RoleNotFound",
    "RoleStart",
    "RunEvent",
    "RunResumed",
    "ToolCall",
    "ToolCallEvent",
    "ToolResult",
    "ToolResultEvent",
    "UnknownTool",
    "Usage",
]

Status = Literal["success", "error", "needs_clarification"]


# --- shapes shared by the conversation, the log and the checkpoint -------------------------------


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

    status: Status
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


class Received(Base):
    content: str = ""
    reasoning: str | None = None
    tool_calls: list[ToolCall] = []


# --- events ----------------------------------------------------------------------------------------


class Event(msgspec.Struct, kw_only=True, omit_defaults=True, tag_field="type"):
    """Envelope of every log line; subclasses set the ``type`` tag and a typed ``payload``."""

    timestamp: str


class RoleStartPayload(Base):
    role: str
    role_id: str
    depth: int
    task: str
    parent: str | None = None
    parent_role_id: str | None = None


class RoleStart(Event, tag="role_start"):
    payload: RoleStartPayload


class EffortSetPayload(Base):
    effort: str


class EffortSet(Event, tag="effort_set"):
    payload: EffortSetPayload


class RoleFinishedPayload(Base):
    role: str
    role_id: str
    depth: int
    status: Status
    summary: str | None = None
    error: CardError | None = None
    parent: str | None = None


class RoleFinished(Event, tag="role_finished"):
    payload: RoleFinishedPayload


class AgentCallPayload(Base):
    parent: str
    child: str
    depth: int


class AgentCall(Event, tag="agent_call"):
    payload: AgentCallPayload


class RoleRef(Base):
    role: str
    role_id: str


class LlmCallStart(Event, tag="llm_call_start"):
    payload: RoleRef


class LlmRetryPayload(Base):
    """A model attempt failed and will be retried after ``delay_seconds`` (``cause``: stall, network,
    http, loading, stream or empty)."""

    role: str
    role_id: str
    attempt: int
    attempts: int
    cause: str
    message: str
    delay_seconds: float


class LlmRetry(Event, tag="llm_retry"):
    payload: LlmRetryPayload


class LlmCallPayload(Base):
    role: str
    role_id: str
    message_count: int
    usage: Usage
    sent_from: int | UnsetType = UNSET
    sent: list[Message] | UnsetType = UNSET
    received: Received | UnsetType = UNSET
    finish_reason: str | UnsetType = UNSET


class LlmCall(Event, tag="llm_call"):
    payload: LlmCallPayload


class ToolCallPayload(Base):
    role: str
    tool: str
    arguments: str
    role_id: str | None = None


class ToolCallEvent(Event, tag="tool_call"):
    payload: ToolCallPayload


class ToolResultPayload(Base):
    role: str
    tool: str
    kind: str
    result: ToolResult | UnsetType = UNSET
    role_id: str | None = None


class ToolResultEvent(Event, tag="tool_result"):
    payload: ToolResultPayload


class DepthExceededPayload(Base):
    parent: str
    child: str
    depth: int
    error: str


class DepthExceeded(Event, tag="depth_exceeded"):
    payload: DepthExceededPayload


class RoleNotFoundPayload(Base):
    role_name: str
    parent: str | None = None


class RoleNotFound(Event, tag="role_not_found"):
    payload: RoleNotFoundPayload


class ContextCompactedPayload(Base):
    role: str
    dropped_messages: int
    truncated_tool_messages: int
    stripped_reasoning_messages: int
    estimated_prompt_tokens: int
    context_window: int
    role_id: str | None = None


class ContextCompacted(Event, tag="context_compacted"):
    payload: ContextCompactedPayload


class ContextPressurePayload(Base):
    role: str
    prompt_tokens: int
    effective_budget: int
    role_id: str | None = None


class ContextPressure(Event, tag="context_pressure"):
    payload: ContextPressurePayload


class FailurePayload(Base):
    """Shared payload of the failure and lifecycle events: the role and what went wrong."""

    role: str
    role_id: str | None = None
    message: str | None = None
    tool: str | None = None
    prompt_tokens: int | None = None
    attempts: int | None = None
    rejections: int | None = None


class LlmUnavailable(Event, tag="llm_unavailable"):
    payload: FailurePayload


class ContextBudgetExceeded(Event, tag="context_budget_exceeded"):
    payload: FailurePayload


class ImplicitFinish(Event, tag="implicit_finish"):
    payload: FailurePayload


class UnknownTool(Event, tag="unknown_tool"):
    payload: FailurePayload


class InvalidToolCall(Event, tag="invalid_tool_call"):
    payload: FailurePayload


class InterruptPayload(Base):
    trigger: str
    handler: str
    target: str
    message: str | None = None


class Interrupt(Event, tag="interrupt"):
    payload: InterruptPayload


class InterruptResolvedPayload(Base):
    trigger: str
    handler: str
    target: str
    action: str
    handler_status: str | None = None
    summary: str | None = None


class InterruptResolved(Event, tag="interrupt_resolved"):
    payload: InterruptResolvedPayload


class InquiryDroppedPayload(Base):
    message: str
    reason: str


class InquiryDropped(Event, tag="inquiry_dropped"):
    payload: InquiryDroppedPayload


class PlanModificationPayload(Base):
    target: str
    target_role: str
    message: str
    aborted: list[str] = []


class PlanModification(Event, tag="plan_modification"):
    payload: PlanModificationPayload


class ObservePayload(Base):
    role: str
    role_id: str
    details: str


class Observe(Event, tag="observe"):
    payload: ObservePayload


class AskHumanPayload(Base):
    id: str
    question: str
    context: str | None = None
    role: str | None = None
    role_id: str | None = None


class AskHuman(Event, tag="ask_human"):
    payload: AskHumanPayload


class HumanAnswerPayload(Base):
    id: str
    answer: str


class HumanAnswer(Event, tag="human_answer"):
    payload: HumanAnswerPayload


class OperatorNoticePayload(Base):
    role: str
    role_id: str
    message: str


class OperatorNotice(Event, tag="operator_notice"):
    payload: OperatorNoticePayload


class RunResumedPayload(Base):
    run_id: str
    resumed_frames: int


class RunResumed(Event, tag="run_resumed"):
    payload: RunResumedPayload


RunEvent = (
    RoleStart
    | EffortSet
    | RoleFinished
    | AgentCall
    | LlmCallStart
    | LlmRetry
    | LlmCall
    | ToolCallEvent
    | ToolResultEvent
    | DepthExceeded
    | RoleNotFound
    | ContextCompacted
    | ContextPressure
    | LlmUnavailable
    | ContextBudgetExceeded
    | ImplicitFinish
    | UnknownTool
    | InvalidToolCall
    | RunResumed
    | OperatorNotice
    | Interrupt
    | InterruptResolved
    | InquiryDropped
    | PlanModification
    | Observe
    | AskHuman
    | HumanAnswer
)

EVENT_TYPES: frozenset[str] = frozenset(
    cls.__struct_config__.tag
    for cls in RunEvent.__args__  # type: ignore[attr-defined]
)


class LogRecord(msgspec.Struct, kw_only=True):
    """Any log line, read generically: the envelope with an untyped payload."""

    timestamp: str
    type: str
    payload: dict[str, Any] = {}
