"""How a model turn that did not simply work out is handled: cut-offs, context rejections, pressure.

``TurnLimits`` is the run's policy for three limits: the completion limit (a response cut off at
``maxTokens``), the context window (a rejected request: park it for the context handler or compact in
place with the naive backstop) and the pressure threshold (a one-shot handoff notice). It also judges
an implicit finish (a turn with no tool call): ``success`` unless it answers a cut-off or repeats a
platform notice, which is ``incomplete``.
"""

from __future__ import annotations

import msgspec

from orchestrator import vocabulary as names
from orchestrator.conversation import CardError, Message, ResultCard
from orchestrator.engine import events as ev
from orchestrator.engine.context import compact
from orchestrator.engine.runcontext import RunContext
from orchestrator.engine.state import Rejection, RoleFrame
from orchestrator.llm import ContextRejected

__all__ = [
    "CUT_OFF_NOTICE",
    "MAX_CONSECUTIVE_CUT_OFFS",
    "MAX_CONSECUTIVE_REJECTIONS",
    "PLATFORM_NOTICE_MARK",
    "PRESSURE_NOTICE",
    "TurnLimits",
    "error_card",
]

_ENCODER = msgspec.json.Encoder()

MAX_CONSECUTIVE_REJECTIONS = 3
#: Turns in a row cut off at the completion limit before the role gives up (``llm_unavailable``).
MAX_CONSECUTIVE_CUT_OFFS = 3

#: How every message the platform writes into a conversation starts.
PLATFORM_NOTICE_MARK = "[Platform notice — "

CUT_OFF_NOTICE = (
    "[Platform notice — response cut off] Your last response reached the completion limit "
    "({limit} tokens) before it ended and called no tool, so nothing was done. Answer more briefly: "
    "call a tool, or `finish` with a short summary."
)

PRESSURE_NOTICE = (
    "[Platform notice — context pressure] Your conversation is close to the model's context limit. "
    'Do not start new work. Call `finish` now with status "error" and error.kind "context_handoff", '
    "and write the summary as a handoff brief for a fresh agent that will continue: what is done, what "
    "remains, the key file paths, the decisions made, and the immediate next step."
)


def error_card(kind: str, message: str) -> ResultCard:
    return ResultCard(status="error", summary=message, error=CardError(kind=kind, message=message))


class TurnLimits:
    """The run's handling of cut-off, rejected and oversized turns (the run owns one)."""

    def __init__(self, context: RunContext) -> None:
        self._context = context

    def cut_off(self, frame: RoleFrame, assistant: Message) -> Message | ResultCard | None:
        """A response that ended at the completion limit: never a success card, never replayed broken.

        Its calls go ahead (a call cut mid-arguments gets an ``invalid_tool_call`` result saying so);
        text without calls is kept and followed by a notice asking for a shorter answer. After
        ``MAX_CONSECUTIVE_CUT_OFFS`` such turns in a row the role ends ``llm_unavailable``.
        """
        limit = self._context.settings.deployment.model.generation.max_tokens
        frame.cut_off_turns += 1
        if frame.cut_off_turns >= MAX_CONSECUTIVE_CUT_OFFS:
            message = (
                f"the model's response was cut off at the completion limit ({limit} tokens) "
                f"{frame.cut_off_turns} times in a row; raise model.generation.maxTokens"
            )
            attempts = frame.cut_off_turns
            self._context.log.emit(ev.failure(names.LLM_UNAVAILABLE, frame, message=message, attempts=attempts))
            return error_card("llm_unavailable", message)
        if assistant.tool_calls:
            return assistant
        frame.history.append(assistant)
        frame.history.append(Message(role="user", content=CUT_OFF_NOTICE.format(limit=limit)))
        return None

    def implicit_finish(self, frame: RoleFrame, assistant: Message, after_cut_off: bool) -> ResultCard:
        """A turn with no tool call ends the role (the seed's implicit finish), with its text as the summary.

        It is ``success`` only when it is a real answer: text that follows a cut-off turn (the model was
        told to answer briefly and did not call ``finish``), or that repeats a platform notice, ends the
        role ``error`` with kind ``incomplete``. The assistant message joins the history either way.
        """
        frame.history.append(assistant)
        text = assistant.content
        if not after_cut_off and PLATFORM_NOTICE_MARK not in text:
            self._context.log.emit(ev.failure(names.IMPLICIT_FINISH, frame, message="the response had no tool calls"))
            return ResultCard(status="success", summary=text)
        if after_cut_off:
            why = "the role's previous response was cut off at the completion limit and this one called no tool"
        else:
            why = "the response called no tool and repeats a platform notice instead of answering"
        self._context.log.emit(ev.failure(names.IMPLICIT_FINISH, frame, message=why))
        return ResultCard(
            status="error",
            summary=f"the role did not finish its work: {why}",
            error=CardError(kind="incomplete", message=why, details={"lastResponse": text[:500]}),
        )

    def check_pressure(self, frame: RoleFrame, prompt_tokens: int) -> None:
        threshold = self._context.settings.deployment.executor.context_pressure_threshold
        budget = self._context.budget
        if not frame.pressure_fired and prompt_tokens >= threshold * budget:
            frame.pressure_fired = True
            frame.pressure_notice_due = True
            self._context.log.emit(ev.context_pressure(frame, prompt_tokens, budget))

    def rejected(self, frame: RoleFrame, rejection: ContextRejected) -> ResultCard | None:
        """A context-size rejection: count it, learn the ceiling, then either park it for the context
        handler (at the next safe point) or compact in place with the naive backstop."""
        frame.rejection_count += 1
        reported = rejection.prompt_tokens
        if reported:
            ceiling = self._context.state.learned_ceiling
            self._context.state.learned_ceiling = reported if ceiling is None else min(ceiling, reported)
        self._context.log.emit(
            ev.failure(
                "context_budget_exceeded",
                frame,
                message=rejection.message,
                prompt_tokens=reported,
                rejections=frame.rejection_count,
            )
        )
        if frame.rejection_count >= MAX_CONSECUTIVE_REJECTIONS:
            return error_card(
                "context_budget_exceeded",
                f"the prompt was rejected as too long {frame.rejection_count} times in a row",
            )
        if self._context.settings.deployment.executor.context_handler_role and frame.handler_for is None:
            frame.parked_rejection = Rejection(prompt_tokens=reported, message=rejection.message)
            return None
        return self.backstop(frame, reported)

    def backstop(self, frame: RoleFrame, reported: int | None) -> ResultCard | None:
        """The naive in-place compaction; a card when even the remainder cannot fit."""
        model = self._context.settings.deployment.model
        window = model.context_window or 0
        compaction = compact(
            frame.history,
            preamble=frame.preamble,
            reported_prompt_tokens=reported,
            context_window=window,
            max_tokens=model.generation.max_tokens,
            tools_chars=len(_ENCODER.encode(self._context.role_tools(frame.role))),
        )
        if compaction is None:
            return error_card(
                "context_budget_exceeded", "even the system prompt, the task and the last turn do not fit the window"
            )
        frame.history = compaction.history
        frame.logged_upto = 0
        frame.history_epoch += 1
        self._context.log.emit(ev.context_compacted(frame, compaction, window))
        frame.history.append(
            Message(
                role="user",
                content=(
                    "[Platform notice — context window exceeded] Your last request did not fit the model's "
                    f"context window. To continue, {compaction.dropped_messages} older messages were removed, "
                    f"{compaction.truncated_tool_messages} tool results were shortened and reasoning was removed "
                    f"from {compaction.stripped_reasoning_messages} messages. Re-read anything you still need, "
                    "or finish honestly with what you have."
                ),
            )
        )
        return None
