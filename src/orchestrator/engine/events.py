"""Constructors for the engine's log events: one place that knows each payload's shape."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from orchestrator import vocabulary as names
from orchestrator.conversation import Message, ResultCard, ToolResult, Usage
from orchestrator.engine.context import Compaction
from orchestrator.engine.state import RoleFrame
from orchestrator.runlog import events as e
from orchestrator.runlog.writer import utc_timestamp

__all__ = [
    "agent_call",
    "ask_human",
    "context_compacted",
    "context_pressure",
    "depth_exceeded",
    "effort_set",
    "failure",
    "human_answer",
    "inquiry_dropped",
    "interrupt",
    "interrupt_resolved",
    "llm_call",
    "llm_call_start",
    "llm_retry",
    "observe",
    "operator_notice",
    "plan_modification",
    "role_finished",
    "role_finished_for",
    "role_not_found",
    "role_start",
    "run_resumed",
    "run_stopped",
    "tool_call",
    "tool_result",
]

_FAILURES: dict[str, type] = {
    names.LLM_UNAVAILABLE: e.LlmUnavailable,
    names.CONTEXT_BUDGET_EXCEEDED: e.ContextBudgetExceeded,
    names.IMPLICIT_FINISH: e.ImplicitFinish,
    names.UNKNOWN_TOOL: e.UnknownTool,
    names.INVALID_TOOL_CALL: e.InvalidToolCall,
}


def effort_set(effort: str) -> e.EffortSet:
    return e.EffortSet(timestamp=utc_timestamp(), payload=e.EffortSetPayload(effort=effort))


def role_start(frame: RoleFrame) -> e.RoleStart:
    return e.RoleStart(
        timestamp=utc_timestamp(),
        payload=e.RoleStartPayload(
            role=frame.role,
            role_id=frame.instance_id,
            depth=frame.depth,
            task=frame.task,
            parent=frame.parent_role,
            parent_role_id=frame.parent_id,
        ),
    )


def role_finished(frame: RoleFrame, card: ResultCard) -> e.RoleFinished:
    return e.RoleFinished(
        timestamp=utc_timestamp(),
        payload=e.RoleFinishedPayload(
            role=frame.role,
            role_id=frame.instance_id,
            depth=frame.depth,
            status=card.status,
            summary=card.summary,
            error=card.error,
            parent=frame.parent_role,
        ),
    )


def agent_call(parent: str, child: str, depth: int) -> e.AgentCall:
    return e.AgentCall(timestamp=utc_timestamp(), payload=e.AgentCallPayload(parent=parent, child=child, depth=depth))


def llm_call_start(frame: RoleFrame) -> e.LlmCallStart:
    return e.LlmCallStart(timestamp=utc_timestamp(), payload=e.RoleRef(role=frame.role, role_id=frame.instance_id))


def llm_retry(
    frame: RoleFrame, *, attempt: int, attempts: int, cause: str, message: str, delay_seconds: float
) -> e.LlmRetry:
    return e.LlmRetry(
        timestamp=utc_timestamp(),
        payload=e.LlmRetryPayload(
            role=frame.role,
            role_id=frame.instance_id,
            attempt=attempt,
            attempts=attempts,
            cause=cause,
            message=message,
            delay_seconds=round(delay_seconds, 3),
        ),
    )


def llm_call(
    frame: RoleFrame,
    sent: Sequence[Message],
    sent_from: int,
    assistant: Message,
    usage: Usage,
    finish_reason: str | None,
    response_model: str | None = None,
) -> e.LlmCall:
    """``sent`` is the delta since the instance's previous ``llm_call``; reasoning is not logged in it."""
    payload = e.LlmCallPayload(
        role=frame.role,
        role_id=frame.instance_id,
        message_count=sent_from + len(sent),
        usage=usage,
        sent_from=sent_from,
        sent=[msgspec.structs.replace(m, reasoning=None) if m.reasoning else m for m in sent],
        received=e.Received(content=assistant.content, reasoning=assistant.reasoning, tool_calls=assistant.tool_calls),
    )
    if finish_reason is not None:
        payload.finish_reason = finish_reason
    if response_model is not None:
        payload.response_model = response_model
    return e.LlmCall(timestamp=utc_timestamp(), payload=payload)


def tool_call(frame: RoleFrame, tool: str, arguments: str) -> e.ToolCallEvent:
    return e.ToolCallEvent(
        timestamp=utc_timestamp(),
        payload=e.ToolCallPayload(role=frame.role, tool=tool, arguments=arguments, role_id=frame.instance_id),
    )


def tool_result(frame: RoleFrame, tool: str, result: ToolResult) -> e.ToolResultEvent:
    return e.ToolResultEvent(
        timestamp=utc_timestamp(),
        payload=e.ToolResultPayload(
            role=frame.role, tool=tool, kind=result.kind, result=result, role_id=frame.instance_id
        ),
    )


def depth_exceeded(parent: str, child: str, depth: int, message: str) -> e.DepthExceeded:
    return e.DepthExceeded(
        timestamp=utc_timestamp(),
        payload=e.DepthExceededPayload(parent=parent, child=child, depth=depth, error=message),
    )


def role_not_found(role_name: str, parent: str | None) -> e.RoleNotFound:
    return e.RoleNotFound(timestamp=utc_timestamp(), payload=e.RoleNotFoundPayload(role_name=role_name, parent=parent))


def context_compacted(frame: RoleFrame, compaction: Compaction, window: int) -> e.ContextCompacted:
    return e.ContextCompacted(
        timestamp=utc_timestamp(),
        payload=e.ContextCompactedPayload(
            role=frame.role,
            role_id=frame.instance_id,
            dropped_messages=compaction.dropped_messages,
            truncated_tool_messages=compaction.truncated_tool_messages,
            stripped_reasoning_messages=compaction.stripped_reasoning_messages,
            estimated_prompt_tokens=compaction.estimated_prompt_tokens,
            context_window=window,
        ),
    )


def context_pressure(frame: RoleFrame, prompt_tokens: int, budget: int) -> e.ContextPressure:
    return e.ContextPressure(
        timestamp=utc_timestamp(),
        payload=e.ContextPressurePayload(
            role=frame.role, role_id=frame.instance_id, prompt_tokens=prompt_tokens, effective_budget=budget
        ),
    )


def failure(event_type: str, frame: RoleFrame, **detail: object) -> e.RunEvent:
    """One of the failure/lifecycle events (``llm_unavailable``, ``unknown_tool`` …) for ``frame``."""
    cls = _FAILURES[event_type]
    payload = e.FailurePayload(role=frame.role, role_id=frame.instance_id, **detail)  # type: ignore[arg-type]
    return cls(timestamp=utc_timestamp(), payload=payload)


def operator_notice(frame: RoleFrame, message: str) -> e.OperatorNotice:
    return e.OperatorNotice(
        timestamp=utc_timestamp(),
        payload=e.OperatorNoticePayload(role=frame.role, role_id=frame.instance_id, message=message),
    )


def role_finished_for(role: str, role_id: str, depth: int, card: ResultCard, parent: str | None) -> e.RoleFinished:
    """``role_finished`` for an instance whose frame is gone (log reconciliation after a restart)."""
    return e.RoleFinished(
        timestamp=utc_timestamp(),
        payload=e.RoleFinishedPayload(
            role=role,
            role_id=role_id,
            depth=depth,
            status=card.status,
            summary=card.summary,
            error=card.error,
            parent=parent,
        ),
    )


def interrupt(trigger: str, handler: str, target: str, message: str | None = None) -> e.Interrupt:
    return e.Interrupt(
        timestamp=utc_timestamp(),
        payload=e.InterruptPayload(trigger=trigger, handler=handler, target=target, message=message),
    )


def interrupt_resolved(
    trigger: str,
    handler: str,
    target: str,
    action: str,
    handler_status: str | None = None,
    summary: str | None = None,
) -> e.InterruptResolved:
    return e.InterruptResolved(
        timestamp=utc_timestamp(),
        payload=e.InterruptResolvedPayload(
            trigger=trigger,
            handler=handler,
            target=target,
            action=action,
            handler_status=handler_status,
            summary=summary,
        ),
    )


def inquiry_dropped(message: str, reason: str) -> e.InquiryDropped:
    return e.InquiryDropped(timestamp=utc_timestamp(), payload=e.InquiryDroppedPayload(message=message, reason=reason))


def plan_modification(owner: RoleFrame, message: str, aborted: list[str]) -> e.PlanModification:
    return e.PlanModification(
        timestamp=utc_timestamp(),
        payload=e.PlanModificationPayload(
            target=owner.instance_id, target_role=owner.role, message=message, aborted=aborted
        ),
    )


def observe(target: RoleFrame, tool: str) -> e.Observe:
    return e.Observe(
        timestamp=utc_timestamp(),
        payload=e.ObservePayload(role=target.role, role_id=target.instance_id, details=tool),
    )


def ask_human(question_id: str, question: str, context: str | None, frame: RoleFrame) -> e.AskHuman:
    return e.AskHuman(
        timestamp=utc_timestamp(),
        payload=e.AskHumanPayload(
            id=question_id, question=question, context=context, role=frame.role, role_id=frame.instance_id
        ),
    )


def human_answer(question_id: str, answer: str) -> e.HumanAnswer:
    return e.HumanAnswer(timestamp=utc_timestamp(), payload=e.HumanAnswerPayload(id=question_id, answer=answer))


def run_resumed(run_id: str, frames: int) -> e.RunResumed:
    return e.RunResumed(timestamp=utc_timestamp(), payload=e.RunResumedPayload(run_id=run_id, resumed_frames=frames))


def run_stopped(run_id: str, by: names.StopOrigin, live_roles: list[str]) -> e.RunStopped:
    return e.RunStopped(
        timestamp=utc_timestamp(), payload=e.RunStoppedPayload(run_id=run_id, by=by, live_roles=live_roles)
    )
