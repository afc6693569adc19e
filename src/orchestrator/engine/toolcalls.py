"""Executing one tool call of a model turn: checks, dispatch, timeout, truncation, log events.

Order of checks, each stopping the call before anything runs: the role's allow-list
(``unknown_tool``), JSON parsing of the arguments (``invalid_tool_call``), the manifest's JSON Schema
(``invalid_arguments``). Then the call goes to ``agent`` (control flow: a ``Delegate`` instruction the
role loop in ``run.py`` carries out, handing the child's card back to ``ToolCalls.delegated``), the
executor's conversation tools, or a native tool under the tool timeout. Failures are results, never
exceptions. This layer works through the run's ``RunContext`` and never runs a role itself.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import msgspec
import trio
from msgspec import UnsetType

from orchestrator import vocabulary as names
from orchestrator.conversation import Message, ResultCard, ToolCall, ToolResult
from orchestrator.engine import events as ev
from orchestrator.engine.builtins import ContextView, context_info, edit_context, validate_finish
from orchestrator.engine.context import truncate_text
from orchestrator.engine.human import HumanBackend
from orchestrator.engine.inspection import (
    list_role_messages,
    read_message_window,
    read_run_log,
    recent_role_tool_calls,
    search_role_blocks,
    search_run_log,
)
from orchestrator.engine.runcontext import RunContext
from orchestrator.engine.state import AskedQuestion, PendingTurn, RoleFrame
from orchestrator.runlog.writer import utc_timestamp
from orchestrator.tools.base import NativeTool, ToolContext, ToolOutcome, failure, success
from orchestrator.tools.validate import SchemaCache, parse_arguments

__all__ = [
    "REPLAYED_INVALID_ARGUMENTS",
    "CallDone",
    "Delegate",
    "ToolCalls",
    "encode_json",
    "replayable",
    "tool_context",
    "tool_message",
]

_encoder = msgspec.json.Encoder()
CHECKER_TOOLS = frozenset({"typecheck", "test"})
_INSPECTION = frozenset({"list_role_messages", "read_message_window", "search_role_blocks", "recent_role_tool_calls"})


def encode_json(value: object) -> str:
    return _encoder.encode(value).decode()


def tool_message(call: ToolCall, content: str) -> Message:
    return Message(role="tool", content=content, tool_call_id=call.id)


#: What a call whose arguments are not a JSON object carries in the conversation from then on.
REPLAYED_INVALID_ARGUMENTS = "{}"


def _is_object(arguments: str) -> bool:
    return bool(arguments.strip()) and isinstance(parse_arguments(arguments), dict)


def replayable(assistant: Message) -> Message:
    """``assistant`` as it may be replayed to the model: every call's arguments a JSON object.

    Arguments that are not one (cut off by the completion limit, malformed, empty) are replaced by
    ``{}``: an endpoint that renders the history through a template (llama-server) parses them and
    would refuse every later request with HTTP 500. The call's ``invalid_tool_call`` result says so,
    and the log keeps the text as received.
    """
    calls = [
        call
        if _is_object(call.function.arguments)
        else msgspec.structs.replace(
            call, function=msgspec.structs.replace(call.function, arguments=REPLAYED_INVALID_ARGUMENTS)
        )
        for call in assistant.tool_calls
    ]
    if all(new is old for new, old in zip(calls, assistant.tool_calls, strict=True)):
        return assistant
    return msgspec.structs.replace(assistant, tool_calls=calls)


@dataclass(frozen=True)
class CallDone:
    """A call that has its output: the text the conversation gets, and a card if it ends the role."""

    text: str
    card: ResultCard | None = None


@dataclass(frozen=True)
class Delegate:
    """The ``agent`` tool's instruction to the role loop: run ``role`` on ``task`` as the caller's child.

    The call's arguments passed every check (allow-list, JSON, schema) and its ``tool_call`` event is
    logged; the loop refuses it or runs the child, then hands the card to ``ToolCalls.delegated``.
    """

    role: str
    task: str


class ToolCalls:
    """The run's tool dispatcher: validators built once from the Guild, the native-tool table."""

    def __init__(self, context: RunContext, native_tools: dict[str, NativeTool]) -> None:
        self._context = context
        self.native_tools = native_tools
        guild = context.settings.guild
        self._schemas = SchemaCache({name: tool.parameters for name, tool in guild.tools.items()})
        self._limit = context.settings.deployment.context_policy.max_tool_output_chars

    def for_conversation(self, text: str) -> str:
        """What the conversation gets: the text cut to ``maxToolOutputChars`` (the log keeps it whole)."""
        return truncate_text(text, self._limit)

    async def execute(self, frame: RoleFrame, pending: PendingTurn, call: ToolCall) -> CallDone | Delegate:
        """Run one call: its output (and a card if the call ends the role), or, for a valid ``agent``
        call, the ``Delegate`` instruction the caller carries out before calling ``delegated``.

        Cancellation: propagates (a running native tool is stopped by its own cleanup); nothing is
        appended to the history here, so a cancelled call leaves no trace in the conversation.
        """
        name = call.function.name
        # The call runs as the model wrote it; the log keeps it without a secret in any encoding.
        arguments = self._context.redactor.encoded().redact(call.function.arguments)
        self._context.log.emit(ev.tool_call(frame, name, arguments))
        outcome = await self._dispatch(frame, pending, call)
        if isinstance(outcome, Delegate):
            return outcome
        return self._done(frame, name, outcome, None)

    def delegated(self, frame: RoleFrame, call: ToolCall, card: ResultCard, refused: bool) -> CallDone:
        """The output of an ``agent`` call whose ``Delegate`` the role loop carried out.

        ``refused`` (unknown role, depth, stopped) with an error kind → a failure result; otherwise the
        child's card is the result. Either way the conversation gets the card as JSON.
        """
        if refused and card.error is not None:
            result = failure(card.error.kind, card.summary)
        else:
            result = success(msgspec.to_builtins(card))
        return self._done(frame, call.function.name, ToolOutcome(result), encode_json(card))

    def _done(self, frame: RoleFrame, name: str, outcome: ToolOutcome, conversation_text: str | None) -> CallDone:
        # The secret boundary: what a tool returns (output, error message, details) is redacted before
        # the log or the conversation (hence the next model request and the checkpoint) sees it.
        result = self._redacted(outcome.result)
        self._context.log.emit(ev.tool_result(frame, name, result), redacted=True)
        if conversation_text is not None:
            conversation_text = self._context.redactor.redact(conversation_text)
        text = conversation_text if conversation_text is not None else encode_json(result)
        return CallDone(self.for_conversation(text), outcome.terminate)

    def _redacted(self, result: ToolResult) -> ToolResult:
        """``result`` with every known secret value and credential shape replaced by ``<redacted>`` (itself
        when none occurs)."""
        redactor = self._context.redactor
        if not redactor or not redactor.found_in(_encoder.encode(result)):
            return result
        message = result.message if isinstance(result.message, UnsetType) else redactor.redact(result.message)
        data, details = redactor.redact_value(result.data), redactor.redact_value(result.details)
        return ToolResult(kind=result.kind, data=data, message=message, details=details)

    async def _dispatch(self, frame: RoleFrame, pending: PendingTurn, call: ToolCall) -> ToolOutcome | Delegate:
        context = self._context
        name = call.function.name
        guild = context.settings.guild
        role = guild.roles[frame.role]
        if name not in role.tools or name not in guild.tools:
            message = f"tool {name!r} is not available to role {frame.role!r}; it may call: {', '.join(role.tools)}"
            context.log.emit(ev.failure(names.UNKNOWN_TOOL, frame, tool=name, message=message))
            return ToolOutcome(failure("unknown_tool", message))
        arguments = parse_arguments(call.function.arguments)
        if isinstance(arguments, ToolResult):
            message = arguments.message or "invalid arguments"
            if pending.cut_off:
                limit = context.settings.deployment.model.generation.max_tokens
                message += (
                    f". Your response was cut off at the completion limit ({limit} tokens) inside these "
                    "arguments: send shorter ones (split big content over several calls)"
                )
            message += f". The call was not run; this conversation shows its arguments as {REPLAYED_INVALID_ARGUMENTS}"
            arguments = msgspec.structs.replace(arguments, message=message)
            context.log.emit(ev.failure(names.INVALID_TOOL_CALL, frame, tool=name, message=message))
            return ToolOutcome(arguments)
        invalid = self._schemas.check(name, arguments)
        if invalid is not None:
            return ToolOutcome(invalid)
        if name == "agent":
            return Delegate(role=str(arguments["role"]), task=str(arguments["task"]))
        if name == "finish":
            card_or_error = validate_finish(arguments)
            if isinstance(card_or_error, str):
                return ToolOutcome(failure("invalid_arguments", card_or_error))
            return ToolOutcome(success(msgspec.to_builtins(card_or_error)), terminate=card_or_error)
        if name in ("context_info", "edit_context"):
            target = self._target(frame, arguments.get("targetRole"))
            view = ContextView(context.settings.deployment.model.context_window or 0, context.budget)
            if name == "context_info":
                outcome = context_info(view, frame, target)
                if isinstance(target, RoleFrame) and outcome.result.ok:
                    context.log.emit(ev.observe(target, name))
                return outcome
            attempts = context.settings.deployment.executor.max_compaction_attempts
            return edit_context(view, frame, target, arguments["operations"], max_attempts=attempts)
        if name in _INSPECTION:
            return ToolOutcome(self._inspect(frame, name, arguments))
        if name == "read_run_log":
            return ToolOutcome(read_run_log(context.log.path, arguments.get("offset", 0), arguments.get("limit", 50)))
        if name == "search_run_log":
            query, kind = arguments["query"], arguments.get("type")
            found = search_run_log(context.log.path, query, kind, arguments.get("limit", 20))
            return ToolOutcome(found)
        if name == "trigger_interrupt":
            return ToolOutcome(self._trigger_interrupt(frame, arguments))
        if name == "ask_human":
            return ToolOutcome(await self._ask_human(frame, pending, arguments))
        return ToolOutcome(await self._native(frame, name, arguments))

    def _inspect(self, frame: RoleFrame, name: str, arguments: dict[str, Any]) -> ToolResult:
        """A bounded read of a live instance's conversation; emits ``observe`` when it succeeds."""
        target = self._target(frame, arguments.get("targetRole"), allow_self=True)
        if isinstance(target, str):
            return failure("invalid_arguments", target)
        target = target or frame
        if name == "list_role_messages":
            result = list_role_messages(target)
        elif name == "read_message_window":
            result = read_message_window(
                target,
                int(arguments["index"]),
                str(arguments["field"]),
                int(arguments["start"]),
                int(arguments["end"]),
            )
        elif name == "search_role_blocks":
            result = search_role_blocks(
                target,
                str(arguments["pattern"]),
                kind=str(arguments.get("kind", "substring")),
                field=arguments.get("field"),
                max_matches=int(arguments.get("maxMatches", 10)),
            )
        else:
            result = recent_role_tool_calls(target, int(arguments.get("limit", 20)))
        if result.ok and target is not frame:
            self._context.log.emit(ev.observe(target, name))
        return result

    def _trigger_interrupt(self, frame: RoleFrame, arguments: dict[str, Any]) -> ToolResult:
        """Record a loop-check decision for the instance this handler serves; ``redirect`` injects the
        reason into that instance's conversation before it resumes."""
        served = frame.handler_for
        target_id, action, reason = str(arguments["targetRole"]), str(arguments["action"]), str(arguments["reason"])
        if served is None:
            return failure("invalid_arguments", "trigger_interrupt is only for a handler serving a suspended role")
        if target_id != served:
            return failure("invalid_arguments", f"targetRole must be {served!r}, the instance this check is about")
        if action not in ("continue", "redirect", "abort"):
            return failure("invalid_arguments", "action must be continue, redirect or abort")
        if action == "redirect" and not reason.strip():
            return failure("invalid_arguments", "redirect needs a reason: it is what the role will read")
        registered = self._context.registry.get(served)
        if registered is None:
            return failure("invalid_arguments", f"{served!r} is no longer live")
        self._context.decisions[frame.instance_id] = (action, reason)
        if action == "redirect":
            registered.frame.inbox.append(Message(role="user", content=f"[Platform notice — redirect] {reason}"))
        return success({"targetRole": served, "action": action})

    async def _ask_human(self, frame: RoleFrame, pending: PendingTurn, arguments: dict[str, Any]) -> ToolResult:
        """Pause this role until the human backend answers (cancellable like any wait). The question is
        checkpointed on the pending turn first, so a run abandoned while it waits asks it again on resume."""
        human = self._context.human
        question, background = str(arguments["question"]), arguments.get("context")
        if not question.strip():
            return failure("invalid_arguments", "question must not be empty")
        question_id = uuid.uuid4().hex
        context = self._context
        if context.queue_tracked and not context.state.write_started:
            # Nothing was written yet: park the run so the question waits in the queue, not in a process.
            context.log.emit(ev.ask_human(question_id, question, background, frame))
            context.state.park_question = question
            return success({"parked": True, "note": "the run stops here until the operator answers"})
        if human is None:
            return failure("unavailable", "no human is attached to this run; decide with what you know")
        context.log.emit(ev.ask_human(question_id, question, background, frame))
        redact = context.redactor.redact
        pending.asking = AskedQuestion(
            id=question_id,
            question=redact(question),
            context=redact(str(background)) if background is not None else None,
            asked_at=utc_timestamp(),
        )
        context.checkpoint()
        return await self._wait_for_answer(pending, human)

    async def ask_again(self, frame: RoleFrame, pending: PendingTurn, call: ToolCall) -> CallDone:
        """The ``ask_human`` call a resumed role was waiting in: the checkpointed question is asked again
        under its id (no new ``tool_call`` or ``ask_human`` event: the log has them), and its answer
        becomes the call's result as if the wait had never been cut."""
        human = self._context.human
        if human is None:
            result = failure("unavailable", "no human is attached to this run; decide with what you know")
            pending.asking = None
        else:
            result = await self._wait_for_answer(pending, human)
        return self._done(frame, call.function.name, ToolOutcome(result), None)

    async def _wait_for_answer(self, pending: PendingTurn, human: HumanBackend) -> ToolResult:
        asked = pending.asking
        assert asked is not None
        answer = await human.ask(asked.id, asked.question, asked.context)
        self._context.log.emit(ev.human_answer(asked.id, answer))
        pending.asking = None
        return success({"answer": answer})

    def _target(self, caller: RoleFrame, target_id: Any, *, allow_self: bool = False) -> RoleFrame | str | None:
        """Resolve a ``targetRole``: ``None`` when absent, the suspended frame, or an error message.

        A cross-role target must be registered (so suspended: a finished role is gone) and, for the
        conversation tools, must not be the caller, which is active rather than suspended.
        """
        if target_id is None:
            return None
        if str(target_id) == caller.instance_id:
            if allow_self:
                return None
            return f"targetRole {target_id!r} is you; omit targetRole to act on your own conversation"
        registered = self._context.registry.get(str(target_id))
        if registered is None:
            live = ", ".join(self._context.registry) or "none"
            return f"targetRole {target_id!r} is not a live role instance (live: {live})"
        return registered.frame

    async def _native(self, frame: RoleFrame, name: str, arguments: dict[str, Any]) -> ToolResult:
        """A native tool under ``tool_budget``; ``timeoutSeconds`` may lower the default, never raise it."""
        tool = self.native_tools.get(name)
        if tool is None:
            message = f"tool {name!r} is declared in the Guild but this executor has no implementation of it"
            return failure("unavailable", message)
        context = self._context
        timeout = float(context.settings.deployment.executor.default_tool_timeout_seconds)
        requested = arguments.get("timeoutSeconds")
        if isinstance(requested, int | float) and not isinstance(requested, bool) and 0 < requested < timeout:
            timeout = float(requested)
        ctx = tool_context(context, frame, timeout)
        budget = timeout
        if name in CHECKER_TOOLS:  # the timeout is per command: the call may take one per command
            commands = arguments.get("commands")
            budget = timeout * max(len(commands) if isinstance(commands, list) else 1, 1) + 5.0
        with trio.move_on_after(budget) as tool_budget:
            return await tool(ctx, arguments)
        assert tool_budget.cancelled_caught
        return failure("timeout", f"{name} did not finish within {budget:g}s and was stopped")


def tool_context(context: RunContext, frame: RoleFrame, timeout_seconds: float) -> ToolContext:
    """What a native tool called by ``frame`` sees: the workspace, its run and role ids, the call's
    timeout and the executor's default tool timeout (the per-command default of ``typecheck``/``test``), the
    deployment's ``toolEnvironment`` and ``fetchUrl.allowHosts``, and the run's redactor."""
    deployment = context.settings.deployment
    allow_hosts = deployment.fetch_url.allow_hosts if deployment.fetch_url is not None else None
    return ToolContext(
        workspace=context.workspace,
        timeout_seconds=timeout_seconds,
        run_id=context.state.run_id,
        role_id=frame.instance_id,
        default_tool_timeout_seconds=float(deployment.executor.default_tool_timeout_seconds),
        tool_env_allow=tuple(deployment.tool_environment),
        redactor=context.redactor,
        fetch_allow_hosts=tuple(allow_hosts) if allow_hosts is not None else None,
    )
