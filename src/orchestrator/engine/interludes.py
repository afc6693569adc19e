"""Handler interludes: suspend the leaf at its safe point, run a fresh handler role, resume the leaf.

One mechanism serves four triggers, each logged as an ``interrupt`` / ``interrupt_resolved`` pair:

- ``context_budget_exceeded``: a context rejection parked on the frame → ``contextHandlerRole``;
  ``compacted`` (+ a notice) or ``failed`` → the naive backstop.
- ``context_pressure``: the entry role crossed the pressure threshold → ``contextHandlerRole``;
  ``compacted`` (+ a notice) or ``failed`` → the handoff notice.

  A context interlude is ``compacted`` only when the handler ended ``success`` *and* the target's
  history got smaller (fewer characters); a handler that claims success without shrinking it is
  ``failed`` (``handlerStatus: success``, a summary saying so), so the fallback runs.
- ``loop_check``: every N tool calls / N generated tokens (× the effort factor) →
  ``interruptTriggers.handlerRole``; its ``trigger_interrupt`` decision: ``continue``, ``redirect``,
  ``abort`` (``continue`` when it decided nothing).
- ``inquiry``: a queued operator question → ``inquiryHandlerRole``; ``answered`` with its finish
  summary, or ``failed``.

The handler runs inside the leaf's cancel scope (cancelling the leaf cancels its handler) with
checkpoint writes suppressed: a restart sees either the interlude's applied effects or re-runs the
drain. Handlers are exempt from the cadence and never consume operator requests.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from orchestrator.conversation import CardError, Message, ResultCard
from orchestrator.engine import events as ev
from orchestrator.engine.context import history_chars
from orchestrator.engine.effort import CADENCE_FACTOR
from orchestrator.engine.interrupts import notice_text, plan_modification_text
from orchestrator.engine.limits import TurnLimits
from orchestrator.engine.runcontext import RunContext
from orchestrator.engine.state import RoleFrame

__all__ = ["COMPACTED_NOTICE", "Interludes", "RunRole"]

#: Runs a frame already on the chain to its card (``Run.run_role``): how an interlude starts its handler.
RunRole = Callable[[RoleFrame], Awaitable[ResultCard]]

COMPACTED_NOTICE = "[Platform notice — context compacted] Your conversation was compacted to make room. {summary}"


class Interludes:
    """The safe-point drain of one run: context handlers, the loop-check cadence, operator requests.

    Works through the run's ``RunContext``; runs a handler with ``run_role`` (the role loop's entry,
    handed down as a callable) and falls back to ``limits``' backstop when a context handler fails.
    """

    def __init__(self, context: RunContext, limits: TurnLimits, run_role: RunRole) -> None:
        self._context = context
        self._limits = limits
        self._run_role = run_role

    async def drain(self, frame: RoleFrame) -> ResultCard | None:
        """Apply what is due at ``frame``'s safe point; a card means the frame must end with it."""
        if frame.handler_for is not None:
            return None
        context = self._context
        while (early := context.interrupts.take_early_plan_modification()) is not None:
            self.modify_plan(early)
        executor = context.settings.deployment.executor
        if frame.parked_rejection is not None:
            return await self._context_rejection(frame)
        if frame.depth == 0 and frame.pressure_notice_due and executor.context_handler_role:
            frame.pressure_notice_due = False
            await self._context_pressure(frame)
        card = await self._loop_check(frame)
        if card is not None:
            return card
        request = context.interrupts.take()
        if request is not None:
            await self._operator_request(frame, request.kind, request.message)
        return None

    def modify_plan(self, message: str) -> tuple[RoleFrame, list[str]] | None:
        """Apply an operator plan modification now: every live chain member below the plan owner ends
        with an ``interrupted`` card at its own boundary (the deepest one's scope is cancelled, so an
        in-flight model call or tool stops at once and no partial turn reaches a history), and the owner
        gets the marked message at its next safe point. The owner is the rootmost live instance of
        ``planOwnerRole``, else the chain root. Returns ``(owner, aborted ids)``, or ``None`` when no role
        is live. Synchronous: the service calls it from its own task while the run awaits.
        """
        context = self._context
        chain = [f for f in context.state.frames if f.handler_for is None]
        if not chain:
            return None
        triggers = context.settings.deployment.executor.interrupt_triggers
        owner_role = triggers.plan_owner_role if triggers is not None else None
        owner = next((f for f in chain if owner_role and f.role == owner_role), chain[0])
        below = context.state.frames[next(i for i, f in enumerate(context.state.frames) if f is owner) + 1 :]
        aborted = [f.instance_id for f in below]
        owner.inbox.append(Message(role="user", content=plan_modification_text(message)))
        context.log.emit(ev.plan_modification(owner, message, aborted))
        # Only the deepest live frame is doing anything (its ancestors wait on it): cancelling its scope
        # stops the in-flight work at once. Trio hands a cancellation to the outermost cancelled scope,
        # so cancelling every scope would skip the inner frames' boundaries; instead each marked
        # ancestor sees the mark when its child's card comes back, and ends at its own boundary.
        context.aborted.update(aborted)
        for frame in reversed(below):
            registered = context.registry.get(frame.instance_id)
            if registered is not None:
                registered.scope.cancel()
                break
        return owner, aborted

    # --- the interlude itself --------------------------------------------------------------------

    async def _interlude(
        self, trigger: str, handler_role: str, target: RoleFrame, task: str, message: str | None = None
    ) -> tuple[ResultCard, str]:
        """Run a fresh ``handler_role`` instance against the suspended ``target``; its card and id."""
        context = self._context
        context.log.emit(ev.interrupt(trigger, handler_role, target.instance_id, message))
        if handler_role not in context.settings.guild.roles:
            missing = f"handler role {handler_role!r} is not declared in the Guild"
            return ResultCard(status="error", summary=missing, error=CardError(kind="unavailable")), ""
        if context.cancelled(target):  # a plan modification cut the target while this was being set up
            stopped = "the suspended role was stopped before its handler could start"
            return ResultCard(status="error", summary=stopped, error=CardError(kind="interrupted")), ""
        context.checkpoint_suppressed += 1
        try:
            handler = context.new_frame(handler_role, 0, task, None, entry=False)
            handler.handler_for = target.instance_id
            context.push_frame(handler)  # its checkpoint write is suppressed
            return await self._run_role(handler), handler.instance_id
        finally:
            context.checkpoint_suppressed -= 1

    # --- context ---------------------------------------------------------------------------------

    def _context_task(self, frame: RoleFrame, why: str) -> str:
        target = frame.instance_id
        return (
            f"Role instance {target} (role {frame.role}, depth {frame.depth}) is suspended because {why}. "
            "Make its conversation smaller. Inspect it with context_info and the inspection tools using "
            f'targetRole "{target}", then edit it with edit_context using the same targetRole: drop turns that '
            "no longer matter, replace long tool outputs with short summaries, and strip reasoning only if "
            f"nothing else is left. Messages 0 to {frame.preamble - 1} are protected. Keep every tool call "
            "together with its result. When done, finish with status success and a summary, addressed to that "
            "role, of what you removed and what it should re-read if it needs it."
        )

    async def _context_rejection(self, frame: RoleFrame) -> ResultCard | None:
        context = self._context
        rejection = frame.parked_rejection
        assert rejection is not None
        frame.parked_rejection = None
        handler = context.settings.deployment.executor.context_handler_role or ""
        reported = f"{rejection.prompt_tokens} tokens" if rejection.prompt_tokens else "more tokens than it holds"
        task = self._context_task(frame, f"the model endpoint rejected its last request as too long ({reported})")
        if await self._context_interlude("context_budget_exceeded", handler, frame, task):
            return None
        return self._limits.backstop(frame, rejection.prompt_tokens)

    async def _context_pressure(self, frame: RoleFrame) -> None:
        context = self._context
        handler = context.settings.deployment.executor.context_handler_role or ""
        tokens = frame.last_prompt_tokens or 0
        task = self._context_task(frame, f"its prompt reached {tokens} tokens of a {context.budget}-token budget")
        if not await self._context_interlude("context_pressure", handler, frame, task):
            frame.pressure_notice_due = True  # fall back to the handoff notice

    async def _context_interlude(self, trigger: str, handler: str, frame: RoleFrame, task: str) -> bool:
        """Run the context handler on ``frame``; ``True`` when it compacted (the notice is queued).

        The handler's word is not enough: it compacted only if it ended ``success`` and the target's
        history is now smaller. Otherwise the interlude is ``failed`` and the caller falls back.
        """
        before = history_chars(frame.history)
        card, _ = await self._interlude(trigger, handler, frame, task)
        after = history_chars(frame.history)
        if card.status == "success" and after < before:
            self._context.log.emit(ev.interrupt_resolved(trigger, handler, frame.instance_id, "compacted"))
            frame.inbox.append(Message(role="user", content=COMPACTED_NOTICE.format(summary=card.summary)))
            return True
        summary = None
        if card.status == "success":
            summary = f"the handler reported success but the conversation did not shrink ({before} → {after} chars)"
        resolved = ev.interrupt_resolved(
            trigger, handler, frame.instance_id, "failed", handler_status=card.status, summary=summary
        )
        self._context.log.emit(resolved)
        return False

    # --- loop check -------------------------------------------------------------------------------

    async def _loop_check(self, frame: RoleFrame) -> ResultCard | None:
        context = self._context
        triggers = context.settings.deployment.executor.interrupt_triggers
        if triggers is None or frame.role == triggers.handler_role:
            return None
        factor = CADENCE_FACTOR.get(context.state.effort, 4)
        calls = frame.tool_calls - frame.loop_check_tool_calls
        tokens = frame.completion_tokens - frame.loop_check_tokens
        if calls < triggers.every_tool_calls * factor and tokens < triggers.every_tokens * factor:
            return None
        frame.loop_check_tool_calls, frame.loop_check_tokens = frame.tool_calls, frame.completion_tokens
        task = (
            f"Check whether role instance {frame.instance_id} (role {frame.role}) is stuck: since the last check it "
            f"made {calls} tool calls and generated {tokens} tokens. Its task was: {frame.task[:300]!r}. Look at it "
            f'with the inspection tools (targetRole "{frame.instance_id}"): repeated identical tool calls with the '
            "same result are a loop. Then call trigger_interrupt once with that targetRole and action continue "
            "(it is making progress), redirect (with a reason telling it what to do differently) or abort (it "
            "cannot recover), and finish."
        )
        handler = triggers.handler_role
        card, handler_id = await self._interlude("loop_check", handler, frame, task)
        action, reason = context.decisions.pop(handler_id, ("continue", ""))
        context.log.emit(
            ev.interrupt_resolved(
                "loop_check",
                handler,
                frame.instance_id,
                action,
                handler_status=None if card.status == "success" else card.status,
                summary=reason or None,
            )
        )
        if action == "abort":
            return ResultCard(
                status="error",
                summary=f"stopped by the loop check: {reason or 'no progress'}",
                error=CardError(kind="loop_detected", message=reason or None),
            )
        return None

    # --- operator requests ------------------------------------------------------------------------

    async def _operator_request(self, frame: RoleFrame, kind: str, message: str) -> None:
        context = self._context
        if kind == "notice":
            root = context.state.frames[0]
            root.inbox.append(Message(role="user", content=notice_text(message)))
            context.log.emit(ev.operator_notice(root, message))
            return
        handler = context.settings.deployment.executor.inquiry_handler_role
        if not handler:
            context.log.emit(ev.inquiry_dropped(message, "executor.inquiryHandlerRole is not configured"))
            return
        live = "\n".join(
            f"- {f.instance_id}: role {f.role}, depth {f.depth}, parent {f.parent_id or '(none)'}"
            for f in context.state.frames
            if f.handler_for is None
        )
        task = (
            "The operator asks, word for word:\n\n"
            f"{message}\n\n"
            "Answer it from what the run has done so far. The run is paused; these role instances are live, root "
            f"first:\n{live}\n\nInvestigate read-only (the inspection tools with a targetRole, context_info, the "
            "run-log readers for roles that already finished, the read-only file tools), then finish with status "
            "success and the answer as the summary."
        )
        card, _ = await self._interlude("inquiry", handler, frame, task, message=message)
        if card.status == "success":
            resolved = ev.interrupt_resolved("inquiry", handler, frame.instance_id, "answered", summary=card.summary)
            context.log.emit(resolved)
        else:
            context.log.emit(
                ev.interrupt_resolved(
                    "inquiry", handler, frame.instance_id, "failed", handler_status=card.status, summary=card.summary
                )
            )
