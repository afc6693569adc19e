"""``typecheck`` and ``test``: one tool under two names, a bounded batch of ``sh -c`` commands.

Each command runs in the workspace root through ``process.run_process`` (the run_shell spawn path, so
with the same allow-listed environment),
one after the other, under a per-command timeout: the executor's default tool timeout, lowered (never
raised) by ``timeoutSeconds``. Success is ``[{command, exitCode, stdout, stderr}]``; a non-zero exit
is a normal result. The first timeout or spawn failure ends the batch:

* timeout → ``timeout`` naming the command; details: completed entries + the timed-out entry
  (``timedOut: true``, ``exitCode: null``, partial output);
* spawn failure → ``unavailable`` naming the command; details: the completed entries.

The engine wraps the whole call in one timeout scope. So that the caller always gets the envelope
above rather than a bare engine timeout, a command's deadline is also kept a little short of the
enclosing deadline (``trio.current_effective_deadline()``); a command cut that way is reported as
timed out, and the message says the call's overall budget ran out.
"""

from __future__ import annotations

import math
from typing import Any

import trio

from orchestrator.conversation import ToolResult
from orchestrator.process import ProcessRun, run_process
from orchestrator.tools.base import ToolContext, failure, success
from orchestrator.tools.shell import tool_env

__all__ = ["CHECK_STREAM_CAP", "MAX_COMMANDS", "per_command_timeout", "run_checks"]

#: At most this many commands per call (the manifests' ``maxItems``).
MAX_COMMANDS = 16
#: Each stream of each command keeps this many bytes (head and tail).
CHECK_STREAM_CAP = 16_000
#: Stop a command this long (at most) before the enclosing deadline, to leave time for the report.
_GRACE_SECONDS = 0.5


def default_tool_timeout(ctx: ToolContext) -> float:
    """The executor's default tool timeout (``ctx.default_tool_timeout_seconds``), else the call's."""
    value = ctx.default_tool_timeout_seconds
    if value is not None and value > 0:
        return float(value)
    return float(ctx.timeout_seconds)


def per_command_timeout(default: float, requested: object) -> float:
    """``timeoutSeconds`` may lower the default per-command timeout, never raise it."""
    if isinstance(requested, int | float) and not isinstance(requested, bool) and 0 < requested < default:
        return float(requested)
    return default


def _validate(commands: object) -> list[str] | ToolResult:
    if not isinstance(commands, list) or not commands:
        return failure("invalid_arguments", "commands must be a non-empty array of command strings")
    if len(commands) > MAX_COMMANDS:
        return failure(
            "invalid_arguments",
            f"at most {MAX_COMMANDS} commands per call (got {len(commands)}); split the work or chain with &&",
        )
    for index, command in enumerate(commands):
        if not isinstance(command, str) or not command.strip():
            return failure("invalid_arguments", f"commands[{index}] must be a non-empty string")
    return list(commands)


def _name(command: str) -> str:
    """The command as quoted in a message (long ones shortened; the details keep it whole)."""
    return repr(command if len(command) <= 200 else command[:200] + "…")


def _deadline(per_command: float) -> tuple[float, bool]:
    """This command's deadline, and whether the enclosing deadline (not its own timeout) set it."""
    now = trio.current_time()
    own = now + per_command
    outer = trio.current_effective_deadline()
    if math.isinf(outer):
        return own, False
    grace = min(_GRACE_SECONDS, max(outer - now, 0.0) * 0.1)
    cut = outer - grace
    return (cut, True) if cut < own else (own, False)


async def run_checks(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """Run ``commands`` in order; see the module docstring for the envelope.

    Cancellation: kills the running command's process group (``run_process``) and propagates.
    """
    commands = _validate(arguments.get("commands"))
    if isinstance(commands, ToolResult):
        return commands
    timeout = per_command_timeout(default_tool_timeout(ctx), arguments.get("timeoutSeconds"))
    cwd = str(ctx.workspace)
    done: list[dict[str, Any]] = []
    total = len(commands)
    for number, command in enumerate(commands, start=1):
        deadline, budget_cut = _deadline(timeout)
        try:
            ran: ProcessRun = await run_process(
                command, cwd, deadline=deadline, cap=CHECK_STREAM_CAP, env=tool_env(ctx), allow=ctx.tool_env_allow
            )
        except OSError as exc:
            message = f"command {number} of {total} could not be started: {_name(command)} ({exc.strerror or exc})"
            return failure("unavailable", message, done)
        if ran.timed_out:
            why = "the call's overall time budget ran out" if budget_cut else f"it did not finish within {timeout:g}s"
            message = f"command {number} of {total} timed out ({why}) and was stopped: {_name(command)}"
            return failure("timeout", message, [*done, ran.entry()])
        done.append(ran.entry())
    return success(done)
