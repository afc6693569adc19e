"""One run: the depth-first role loop on a trio scope tree.

Each role instance runs in its own ``CancelScope`` nested in its parent's, so the tree of live scopes
*is* the tree of live roles: cancelling an instance's scope unwinds it and everything below it, and it
returns an ``interrupted`` card at its own boundary. A turn's messages join a history only when the
whole turn (model response and every tool output) is complete, so nothing half-done is ever replayed.

All state a resume needs is in ``RunState`` / ``RoleFrame`` (msgspec data), never in coroutine locals:
``run_role`` on a frame decoded from a checkpoint continues where the frame stood.

The layers below see the run only through its ``RunContext`` (``runcontext.py``): ``TurnLimits``,
``ToolCalls`` and ``Interludes`` never hold the ``Run``. Running a role happens here alone — an ``agent``
call comes back from ``ToolCalls.execute`` as a ``Delegate`` instruction that ``_finish_pending``
carries out, and the interludes get ``run_role`` as a callable.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
import trio

from orchestrator import vocabulary as names
from orchestrator.config import Settings
from orchestrator.config.redaction_stream import TurnRedactor
from orchestrator.config.secrets import Redactor
from orchestrator.conversation import Message, ResultCard, ToolCall
from orchestrator.engine import events as ev
from orchestrator.engine.checkpoint import Checkpointer
from orchestrator.engine.human import HumanBackend
from orchestrator.engine.interludes import Interludes
from orchestrator.engine.interrupts import InterruptQueue
from orchestrator.engine.limits import PRESSURE_NOTICE, TurnLimits
from orchestrator.engine.limits import error_card as _error_card
from orchestrator.engine.reconcile import missing_lifecycle_events
from orchestrator.engine.runcontext import LiveRole, RunContext
from orchestrator.engine.state import FinishedRoot, PendingTurn, RoleFrame, RunState
from orchestrator.engine.toolcalls import Delegate, ToolCalls, encode_json, replayable, tool_message
from orchestrator.llm import ContextRejected, LlmClient, RetryNotice, Unavailable, build_request
from orchestrator.runlog.reader import read_events
from orchestrator.runlog.writer import RunLog
from orchestrator.tools.base import NativeTool, failure, success

__all__ = ["DeltaSink", "Run", "StreamDelta"]

#: Encodes the model's messages for the redactor's fast check.
_MESSAGE_ENCODER = msgspec.json.Encoder()


class StreamDelta(msgspec.Struct, kw_only=True):
    """One live token delta of the turn in flight (ephemeral; never the authority on history)."""

    run_id: str
    role_id: str
    role: str
    field: str
    text: str
    reset: bool


DeltaSink = Callable[[StreamDelta], None]


class Run:
    """Owns one run's context (state, log, role registry …), model client and lower layers; ``execute``
    drives it to a card.

    Cancellation: cancelling the caller of ``execute`` (shutdown) propagates without emitting
    ``role_finished`` for the unwound roles — the run is abandoned, not finished, and resumable.
    """

    def __init__(
        self,
        *,
        settings: Settings,
        workspace: Path,
        state: RunState,
        log: RunLog,
        llm: LlmClient,
        native_tools: dict[str, NativeTool] | None = None,
        on_delta: DeltaSink | None = None,
        checkpointer: Checkpointer | None = None,
        interrupts: InterruptQueue | None = None,
        human: HumanBackend | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.context = RunContext(
            settings=settings,
            workspace=workspace,
            state=state,
            log=log,
            redactor=redactor or Redactor(),
            interrupts=interrupts or InterruptQueue(),
            human=human,
            checkpointer=checkpointer,
        )
        self.settings = settings
        self.state = state
        self.log = log
        self.llm = llm
        self.on_delta = on_delta
        self._model_lock = trio.Lock()
        self.limits = TurnLimits(self.context)
        self.interludes = Interludes(self.context, self.limits, self.run_role)
        self.tools = ToolCalls(self.context, native_tools or {})

    @property
    def queue_tracked(self) -> bool:
        """Set by the host for queue-dispatched runs (see ``RunContext.queue_tracked``)."""
        return self.context.queue_tracked

    @queue_tracked.setter
    def queue_tracked(self, value: bool) -> None:
        self.context.queue_tracked = value

    # --- entry ---------------------------------------------------------------------------------

    async def execute(self, task: str) -> ResultCard:
        """Start the entry role on ``task`` and run the tree depth-first to the entry role's card."""
        entry = self.settings.guild.entry_role
        self.log.emit(ev.effort_set(self.state.effort))
        if entry not in self.settings.guild.roles:
            self.log.emit(ev.role_not_found(entry, None))
            return _error_card("invalid_arguments", f"entry role {entry!r} is not declared in the Guild")
        frame = self.context.new_frame(entry, 0, task, None)
        self.context.push_frame(frame)
        return await self.run_role(frame)

    def refuse_start(self, task: str, card: ResultCard) -> None:
        """The run cannot start (its MCP tool servers could not be used): the entry role starts and ends at
        once with ``card``, so the log, the flow and the run's problem list say why. No model call."""
        entry = self.settings.guild.entry_role
        self.log.emit(ev.effort_set(self.state.effort))
        if entry not in self.settings.guild.roles:
            return
        frame = self.context.new_frame(entry, 0, task, None)
        self.log.emit(ev.role_start(frame))
        self.log.emit(ev.role_finished(frame, card))

    async def resume(self) -> ResultCard:
        """Continue a run rebuilt from its checkpoint under its original id.

        Emits one ``run_resumed``; re-registers the suspended chain with its preserved ids and pending
        turns; the leaf re-enters at its loop top; a child that had already finished is not re-run (its
        recorded card is delivered to the waiting parent). Start/finish events the previous process
        did not get to write are written now, so every instance has exactly one of each.
        """
        self.log.emit(ev.run_resumed(self.state.run_id, len(self.state.frames)))
        for event in missing_lifecycle_events(read_events(self.log.path), self.state):
            self.log.emit(event)
        final = self.state.final
        if final is not None:
            return final.card
        if not self.state.frames:
            return _error_card("interrupted", "the checkpoint holds no live role")
        return await self.run_role(self.state.frames[0])

    # --- the role loop -------------------------------------------------------------------------

    async def run_role(self, frame: RoleFrame) -> ResultCard:
        """Run ``frame`` (already on the chain) to its card inside its own cancel scope.

        A frame with ``pending`` set (resumed from a checkpoint) skips the model call and continues
        its tool calls; one without re-enters at its loop top. On the way out the card is recorded
        (on the waiting parent's pending turn, or as the run's final card), checkpointed, and only then
        logged as ``role_finished`` — so a restart never loses or repeats the event.

        Cancellation: if this frame's own scope is cancelled the frame returns an ``interrupted``
        card; a cancellation from further out propagates (the run is being abandoned).
        """
        card: ResultCard | None = None
        context = self.context
        with trio.CancelScope() as frame_scope:
            context.registry[frame.instance_id] = LiveRole(frame, frame_scope)
            if frame.instance_id in context.aborted:
                frame_scope.cancel()
            try:
                if frame.role not in self.settings.guild.roles:
                    card = _error_card("unavailable", f"role {frame.role!r} is no longer declared in the Guild")
                else:
                    card = await self._loop(frame)
            finally:
                del context.registry[frame.instance_id]
        if card is None:
            card = _error_card("interrupted", "the operator interrupted this role's work")
        self._pop(frame)
        parent = self.state.frames[-1] if self.state.frames else None
        if parent is None:
            self.state.final = FinishedRoot(role=frame.role, role_id=frame.instance_id, card=card)
        elif parent.pending is not None and parent.pending.child_id == frame.instance_id:
            parent.pending.child_card = card
        context.checkpoint()
        self.log.emit(ev.role_finished(frame, card))
        return card

    def _pop(self, frame: RoleFrame) -> None:
        frames = self.state.frames
        for i in range(len(frames) - 1, -1, -1):
            if frames[i] is frame:
                del frames[i:]
                return

    async def _loop(self, frame: RoleFrame) -> ResultCard | None:
        """The role loop; ``None`` when the frame's own scope was cancelled (an ``interrupted`` card)."""
        while True:
            if self.context.cancelled(frame):
                return None
            if self.state.park_question is not None:
                return self._park_card()
            card = await self._safe_point(frame)
            if card is not None:
                return card
            if self.context.cancelled(frame):
                return None
            if frame.pending is None:
                outcome = await self._model_turn(frame)
                if isinstance(outcome, ResultCard):
                    return outcome
                if outcome is None:
                    continue
                frame.pending = PendingTurn(assistant=outcome, cut_off=frame.cut_off_turns > 0)
            card = await self._finish_pending(frame)
            if card is not None:
                return card

    async def _safe_point(self, frame: RoleFrame) -> ResultCard | None:
        """Top of the leaf's loop, never during a model call: drain what is due (context handlers, the
        loop-check cadence, one operator request), deliver the frame's inbox and a due pressure notice,
        then checkpoint. A card means the frame ends with it (a loop-check abort, an unfixable context).
        """
        card = await self.interludes.drain(frame)
        if card is not None:
            return card
        if frame.pending is None:
            if frame.inbox:
                frame.history.extend(frame.inbox)
                frame.inbox.clear()
            if frame.pressure_notice_due:
                frame.pressure_notice_due = False
                frame.history.append(Message(role="user", content=PRESSURE_NOTICE))
        self.context.checkpoint()
        return None

    def _park_card(self) -> ResultCard:
        return ResultCard(status="needs_clarification", summary=f"waiting for an answer to: {self.state.park_question}")

    def modify_plan(self, message: str) -> tuple[RoleFrame, list[str]] | None:
        """Apply an operator plan modification now (see ``Interludes.modify_plan``)."""
        return self.interludes.modify_plan(message)

    # --- one model turn ------------------------------------------------------------------------

    async def _model_turn(self, frame: RoleFrame) -> Message | ResultCard | None:
        """One request. Returns the assistant message, a card that ends the role, or ``None`` to retry
        after an in-place compaction."""
        status = self.settings.model_status
        if status is not None and status.tools_problem:  # fix J: the server would drop every tool
            self.log.emit(ev.failure(names.LLM_UNAVAILABLE, frame, message=status.tools_problem, attempts=0))
            return _error_card("llm_unavailable", status.tools_problem)
        model = self.settings.deployment.model
        request = build_request(
            model=model.name or "",
            history=frame.history,
            tools=self.context.role_tools(frame.role),
            max_output_tokens=model.generation.max_tokens,
            temperature=model.generation.temperature,
        )
        self.log.emit(ev.llm_call_start(frame))
        if self._model_lock.locked():
            raise RuntimeError("a second model request while one is in flight: sequential scheduling broken")

        def on_retry(notice: RetryNotice) -> None:
            self.log.emit(
                ev.llm_retry(
                    frame,
                    attempt=notice.attempt,
                    attempts=notice.attempts,
                    cause=notice.cause,
                    message=notice.message,
                    delay_seconds=notice.delay_seconds,
                )
            )

        publish = self._publisher(frame)

        def on_retry_flushed(notice: RetryNotice) -> None:
            if publish is not None:  # the broken attempt's held words, before the pause
                publish.flush()
            on_retry(notice)

        async with self._model_lock:
            try:
                outcome = await self.llm.complete(request, publish, on_retry_flushed)
            finally:
                if publish is not None:
                    publish.flush()
        if isinstance(outcome, Unavailable):
            self.log.emit(ev.failure(names.LLM_UNAVAILABLE, frame, message=outcome.message, attempts=outcome.attempts))
            reason = self.context.redactor.redact(outcome.message)
            return _error_card("llm_unavailable", f"the model endpoint failed: {reason}")
        if isinstance(outcome, ContextRejected):
            return self.limits.rejected(frame, outcome)
        frame.rejection_count = 0
        usage = outcome.usage
        assistant = Message(
            role="assistant", content=outcome.content, reasoning=outcome.reasoning, tool_calls=outcome.tool_calls
        )
        sent_from = min(frame.logged_upto, len(frame.history))
        logged = self._scrubbed(assistant)
        self.log.emit(
            ev.llm_call(
                frame, frame.history[sent_from:], sent_from, logged, usage, outcome.finish_reason, outcome.model
            )
        )
        frame.logged_upto = len(frame.history)
        frame.llm_calls += 1
        frame.last_prompt_tokens = usage.prompt_tokens
        frame.prompt_tokens_total += usage.prompt_tokens
        frame.completion_tokens += usage.completion_tokens
        if isinstance(usage.cached_prompt_tokens, int):
            frame.cached_prompt_tokens_total += usage.cached_prompt_tokens
        self.limits.check_pressure(frame, usage.prompt_tokens)
        if outcome.finish_reason == "length":
            return self.limits.cut_off(frame, assistant)
        after_cut_off, frame.cut_off_turns = frame.cut_off_turns > 0, 0
        if not assistant.tool_calls:
            return self.limits.implicit_finish(frame, logged, after_cut_off)
        return assistant

    def _scrubbed(self, message: Message) -> Message:
        """The model's own message as the log and the history keep it (its calls run as written): a
        secret it wrote, raw or encoded (say a URL carrying a base64 token), becomes ``<redacted>``."""
        redactor = self.context.redactor.encoded()
        if not redactor.found_in(_MESSAGE_ENCODER.encode(message)):
            return message
        return msgspec.convert(redactor.redact_value(message), Message)

    def _publisher(self, frame: RoleFrame) -> TurnRedactor | None:
        """The turn's delta publisher: the deltas redacted as the logged message will be (``_scrubbed``),
        a secret split across deltas included, then sent to ``on_delta`` (the live stream, the terminal)."""
        sink = self.on_delta
        if sink is None:
            return None
        run_id, role_id, role = self.state.run_id, frame.instance_id, frame.role

        def publish(field: str, text: str, reset: bool) -> None:
            sink(StreamDelta(run_id=run_id, role_id=role_id, role=role, field=field, text=text, reset=reset))

        return TurnRedactor(self.context.redactor.encoded(), publish)

    # --- tool calls ----------------------------------------------------------------------------

    async def _finish_pending(self, frame: RoleFrame) -> ResultCard | None:
        """Execute the pending turn's remaining calls in order, then commit the turn to the history."""
        pending = frame.pending
        assert pending is not None
        calls = pending.assistant.tool_calls
        while len(pending.results) < len(calls):
            if self.context.cancelled(frame):
                return None
            if self.state.park_question is not None:
                return self._park_card()
            call = calls[len(pending.results)]
            if pending.finish_card is not None:
                output = failure("unavailable", "not run: the role had already finished")
                pending.results.append(tool_message(call, encode_json(output)))
                continue
            if pending.awaiting == len(pending.results):
                content, card = await self._resume_delegation(frame, pending, call), None
            elif pending.asking is not None:  # resumed while waiting for an answer: ask again
                step = await self.tools.ask_again(frame, pending, call)
                content, card = step.text, step.card
            else:
                step = await self.tools.execute(frame, pending, call)
                if isinstance(step, Delegate):
                    child_card, refused = await self._delegate(frame, pending, step)
                    step = self.tools.delegated(frame, call, child_card, refused)
                content, card = step.text, step.card
            pending.results.append(tool_message(call, content))
            if card is not None:
                pending.finish_card = card
        frame.history.append(self._scrubbed(replayable(pending.assistant)))
        frame.history.extend(pending.results)
        frame.tool_calls += len(calls)
        frame.pending = None
        return pending.finish_card

    async def _delegate(self, frame: RoleFrame, pending: PendingTurn, delegate: Delegate) -> tuple[ResultCard, bool]:
        """Carry out an ``agent`` call's ``Delegate``: refuse it (unknown role, depth, stopped; ``True``)
        or run the child to its card.

        The child is pushed on the chain and checkpointed before its ``role_start`` is logged, so a
        restart never mints its id twice.
        """
        child_role, task = delegate.role, delegate.task
        depth = frame.depth + 1
        self.log.emit(ev.agent_call(frame.role, child_role, depth))
        if child_role not in self.settings.guild.roles:
            self.log.emit(ev.role_not_found(child_role, frame.role))
            declared = ", ".join(self.settings.guild.roles)
            return _error_card("invalid_arguments", f"no role named {child_role!r}; declared roles: {declared}"), True
        limit = self.settings.deployment.executor.max_agent_depth
        if depth > limit:
            message = f"delegating to {child_role!r} would reach depth {depth}; maxAgentDepth is {limit}"
            self.log.emit(ev.depth_exceeded(frame.role, child_role, depth, message))
            return _error_card("tool_budget_exceeded", message), True
        if self.context.cancelled(frame):  # cut by a plan modification while this call was being set up
            return _error_card("interrupted", "the delegation was stopped by the operator"), True
        child = self.context.new_frame(child_role, depth, task, frame)
        pending.awaiting, pending.child_id = len(pending.results), child.instance_id
        self.context.push_frame(child)
        card = await self.run_role(child)
        pending.awaiting = pending.child_id = pending.child_card = None
        return card, False

    async def _resume_delegation(self, frame: RoleFrame, pending: PendingTurn, call: ToolCall) -> str:
        """The ``agent`` call a resumed parent was waiting in: deliver the recorded card, or re-enter
        the child that was mid-flight (it is next in the rebuilt chain)."""
        card = pending.child_card
        if card is None:
            index = next(i for i, f in enumerate(self.state.frames) if f is frame)
            child = self.state.frames[index + 1] if index + 1 < len(self.state.frames) else None
            if child is None or child.parent_id != frame.instance_id:
                card = _error_card("interrupted", "the delegated role's state was lost in a restart")
            else:
                card = await self.run_role(child)
        pending.awaiting = pending.child_id = pending.child_card = None
        self.log.emit(ev.tool_result(frame, call.function.name, success(msgspec.to_builtins(card))))
        return self.tools.for_conversation(encode_json(card))
