"""The executor's own tools that act on conversations: ``finish`` validation, ``context_info``,
``edit_context``. (``agent`` lives in the role loop: it is control flow, not a tool body.)

Pure with respect to I/O: each takes the frames it needs and returns a ``ToolOutcome``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from orchestrator.conversation import CardError, ResultCard
from orchestrator.engine.context import CHARS_PER_TOKEN, EditError, apply_edits, message_chars
from orchestrator.engine.state import RoleFrame
from orchestrator.errors import ERROR_KINDS
from orchestrator.tools.base import ToolOutcome, failure, success

__all__ = ["ContextView", "context_info", "edit_context", "validate_finish"]


def validate_finish(arguments: Mapping[str, Any]) -> ResultCard | str:
    """The card ``finish`` describes, or a message saying what is wrong with it."""
    status = arguments.get("status")
    if status not in ("success", "error", "needs_clarification"):
        return "status must be one of success, error, needs_clarification"
    summary = arguments.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        return "summary must be a non-empty string"
    artifacts = arguments.get("artifacts", [])
    if not isinstance(artifacts, list) or not all(isinstance(a, str) for a in artifacts):
        return "artifacts must be an array of strings"
    error = arguments.get("error")
    card_error = None
    if error is not None:
        if not isinstance(error, Mapping) or not isinstance(error.get("kind"), str):
            return "error must be an object with a string kind"
        if error["kind"] not in ERROR_KINDS:
            return f"error.kind {error['kind']!r} is not one of: {', '.join(sorted(ERROR_KINDS))}"
        message = error.get("message")
        if message is not None and not isinstance(message, str):
            return "error.message must be a string"
        card_error = CardError(kind=error["kind"], message=message, details=error.get("details"))
    return ResultCard(status=status, summary=summary, artifacts=list(artifacts), error=card_error)


class ContextView:
    """The numbers ``context_info`` reports, for one frame."""

    def __init__(self, context_window: int, effective_budget: int) -> None:
        self.context_window = context_window
        self.effective_budget = effective_budget

    def describe(self, frame: RoleFrame) -> dict[str, Any]:
        messages = [
            {
                "index": i,
                "role": m.role,
                "chars": message_chars(m),
                "tokens": math.ceil(message_chars(m) / CHARS_PER_TOKEN),
            }
            for i, m in enumerate(frame.history)
        ]
        estimate = sum(m["tokens"] for m in messages)
        reported = frame.last_prompt_tokens
        basis = reported if reported is not None else estimate
        return {
            "roleId": frame.instance_id,
            "contextWindow": self.context_window,
            "effectiveBudget": self.effective_budget,
            "lastReportedPromptTokens": reported,
            "currentPromptTokens": estimate,
            "budgetRemaining": max(0, self.effective_budget - basis),
            "protectedMessages": frame.preamble,
            "messages": messages,
            "recentCompactionSizes": frame.compaction_sizes[-5:],
        }


def _estimate(frame: RoleFrame) -> int:
    return sum(math.ceil(message_chars(m) / CHARS_PER_TOKEN) for m in frame.history)


def context_info(view: ContextView, caller: RoleFrame, target: RoleFrame | str | None) -> ToolOutcome:
    """Describe the caller's conversation, or a suspended instance's (``target``)."""
    if isinstance(target, str):
        return ToolOutcome(failure("invalid_arguments", target))
    return ToolOutcome(success(view.describe(target or caller)))


def edit_context(
    view: ContextView,
    caller: RoleFrame,
    target: RoleFrame | str | None,
    operations: list[Any],
    *,
    max_attempts: int,
) -> ToolOutcome:
    """Apply an edit batch to the caller's (or a suspended ``target``'s) history, all or nothing.

    A successful edit resets the target's ``llm_call`` delta baseline (its next call logs a full
    snapshot). Every call counts toward the caller's compaction progress: ``max_attempts`` consecutive
    calls that do not shrink the conversation end the caller with ``compaction_failed``.
    """
    if isinstance(target, str):
        return ToolOutcome(failure("invalid_arguments", target))
    frame = target or caller
    before = _estimate(frame)
    try:
        edited = apply_edits(frame.history, operations, protected=max(2, frame.preamble))
    except EditError as exc:
        result = failure("invalid_arguments", str(exc))
        after = before
    else:
        frame.history = edited
        frame.logged_upto = 0
        frame.history_epoch += 1
        after = _estimate(frame)
        result = success(view.describe(frame))
    caller.compaction_sizes.append(after)
    caller.stalled_compactions = caller.stalled_compactions + 1 if after >= before else 0
    if caller.stalled_compactions >= max_attempts:
        card = ResultCard(
            status="error",
            summary=f"edit_context made no progress in {max_attempts} consecutive attempts",
            error=CardError(kind="compaction_failed", message=f"no token reduction after {max_attempts} edits"),
        )
        return ToolOutcome(result, terminate=card)
    return ToolOutcome(result)
