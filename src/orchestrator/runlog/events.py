"""The run log's event schema: one tagged msgspec Struct per ``log.jsonl`` event type.

Every line of ``log.jsonl`` is ``{"timestamp": ISO-8601, "type": <tag>, "payload": {...}}``. Writers
build these Structs; readers decode lines as plain dicts (``runlog.reader``), so a log written by a newer
version, with event types this one does not know, still reads. The tags are the event-type names of
``orchestrator.vocabulary``; the conversation shapes the payloads embed live in ``orchestrator.conversation``.

Payload fields are camelCase on the wire (``Base`` policy); optional fields are omitted, never null.
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

from orchestrator import vocabulary as names
from orchestrator.conversation import CardError, CardStatus, Message, ToolCall, ToolResult, Usage
from orchestrator.schema import Base

__all__ = [
    "EVENT_TYPES",
    "AgentCall",
    "AskHuman",
    "ContextBudgetExceeded",
    "ContextCompacted",
    "ContextPressure",
    "DepthExceeded",
    "EffortSet",
    "Event",
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
    "Observe",
    "OperatorNotice",
    "PlanModification",
    "Received",
    "RoleFinished",
    "RoleNotFound",
    "RoleStart",
    "RunEvent",
    "RunResumed",
    "RunStopped",
    "ToolCallEvent",
    "ToolResultEvent",
    "UnknownTool",
]


class Received(Base):
    """What the model sent back in one call, as ``llm_call`` records it at the ``full`` level."""

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


class RoleStart(Event, tag=names.ROLE_START):
    payload: RoleStartPayload


class EffortSetPayload(Base):
    effort: str


class EffortSet(Event, tag=names.EFFORT_SET):
    payload: EffortSetPayload


class RoleFinishedPayload(Base):
    role: str
    role_id: str
    depth: int
    status: CardStatus
    summary: str | None = None
    error: CardError | None = None
    parent: str | None = None


class RoleFinished(Event, tag=names.ROLE_FINISHED):
    payload: RoleFinishedPayload


class AgentCallPayload(Base):
    parent: str
    child: str
    depth: int


class AgentCall(Event, tag=names.AGENT_CALL):
    payload: AgentCallPayload


class RoleRef(Base):
    role: str
    role_id: str


class LlmCallStart(Event, tag=names.LLM_CALL_START):
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


class LlmRetry(Event, tag=names.LLM_RETRY):
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
    #: the model the endpoint says answered, when it says (the trace's ``gen_ai.response.model``)
    response_model: str | UnsetType = UNSET


class LlmCall(Event, tag=names.LLM_CALL):
    payload: LlmCallPayload


class ToolCallPayload(Base):
    role: str
    tool: str
    arguments: str
    role_id: str | None = None


class ToolCallEvent(Event, tag=names.TOOL_CALL):
    payload: ToolCallPayload


class ToolResultPayload(Base):
    role: str
    tool: str
    kind: str
    result: ToolResult | UnsetType = UNSET
    role_id: str | None = None


class ToolResultEvent(Event, tag=names.TOOL_RESULT):
    payload: ToolResultPayload


class DepthExceededPayload(Base):
    parent: str
    child: str
    depth: int
    error: str


class DepthExceeded(Event, tag=names.DEPTH_EXCEEDED):
    payload: DepthExceededPayload


class RoleNotFoundPayload(Base):
    role_name: str
    parent: str | None = None


class RoleNotFound(Event, tag=names.ROLE_NOT_FOUND):
    payload: RoleNotFoundPayload


class ContextCompactedPayload(Base):
    role: str
    dropped_messages: int
    truncated_tool_messages: int
    stripped_reasoning_messages: int
    estimated_prompt_tokens: int
    context_window: int
    role_id: str | None = None


class ContextCompacted(Event, tag=names.CONTEXT_COMPACTED):
    payload: ContextCompactedPayload


class ContextPressurePayload(Base):
    role: str
    prompt_tokens: int
    effective_budget: int
    role_id: str | None = None


class ContextPressure(Event, tag=names.CONTEXT_PRESSURE):
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


class LlmUnavailable(Event, tag=names.LLM_UNAVAILABLE):
    payload: FailurePayload


class ContextBudgetExceeded(Event, tag=names.CONTEXT_BUDGET_EXCEEDED):
    payload: FailurePayload


class ImplicitFinish(Event, tag=names.IMPLICIT_FINISH):
    payload: FailurePayload


class UnknownTool(Event, tag=names.UNKNOWN_TOOL):
    payload: FailurePayload


class InvalidToolCall(Event, tag=names.INVALID_TOOL_CALL):
    payload: FailurePayload


class InterruptPayload(Base):
    trigger: str
    handler: str
    target: str
    message: str | None = None


class Interrupt(Event, tag=names.INTERRUPT):
    payload: InterruptPayload


class InterruptResolvedPayload(Base):
    trigger: str
    handler: str
    target: str
    action: str
    handler_status: str | None = None
    summary: str | None = None


class InterruptResolved(Event, tag=names.INTERRUPT_RESOLVED):
    payload: InterruptResolvedPayload


class InquiryDroppedPayload(Base):
    message: str
    reason: str


class InquiryDropped(Event, tag=names.INQUIRY_DROPPED):
    payload: InquiryDroppedPayload


class PlanModificationPayload(Base):
    target: str
    target_role: str
    message: str
    aborted: list[str] = []


class PlanModification(Event, tag=names.PLAN_MODIFICATION):
    payload: PlanModificationPayload


class ObservePayload(Base):
    role: str
    role_id: str
    details: str


class Observe(Event, tag=names.OBSERVE):
    payload: ObservePayload


class AskHumanPayload(Base):
    id: str
    question: str
    context: str | None = None
    role: str | None = None
    role_id: str | None = None


class AskHuman(Event, tag=names.ASK_HUMAN):
    payload: AskHumanPayload


class HumanAnswerPayload(Base):
    id: str
    answer: str


class HumanAnswer(Event, tag=names.HUMAN_ANSWER):
    payload: HumanAnswerPayload


class OperatorNoticePayload(Base):
    role: str
    role_id: str
    message: str


class OperatorNotice(Event, tag=names.OPERATOR_NOTICE):
    payload: OperatorNoticePayload


class RunResumedPayload(Base):
    run_id: str
    resumed_frames: int


class RunResumed(Event, tag=names.RUN_RESUMED):
    payload: RunResumedPayload


class RunStoppedPayload(Base):
    """Who stopped the run (``api`` / ``mcp`` / ``ui``) and the role chain that was live, root first."""

    run_id: str
    by: names.StopOrigin
    live_roles: list[str]


class RunStopped(Event, tag=names.RUN_STOPPED):
    payload: RunStoppedPayload


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
    | RunStopped
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
