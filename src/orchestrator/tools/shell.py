"""``run_shell``: one command in the workspace, through the shared runner (``orchestrator.process``).

Cancellation (the tool timeout, a plan modification, shutdown) kills the whole process group before
the cancellation propagates, so no stray child outlives its call. The command's environment is the
allow-listed part of the process's own (``config.secrets.tool_environment`` with the deployment's
``toolEnvironment``); its output is redacted by the engine where it enters the conversation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orchestrator.conversation import ToolResult
from orchestrator.process import run_process
from orchestrator.tools.base import ToolContext, failure, success

__all__ = ["STREAM_CAP", "run_command", "run_shell", "tool_env"]

#: Per-stream capture cap for run_shell; the engine's maxToolOutputChars applies on top of it.
STREAM_CAP = 64_000


async def run_command(
    command: str, cwd: str, env: Mapping[str, str] | None = None, allow: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Run ``sh -c command`` to completion; returns ``{command, exitCode, stdout, stderr}``.

    ``exitCode`` is ``None`` when a signal ended the process. Raises ``OSError`` when it cannot start.
    Cancellation: kills the process group, reaps it (shielded, bounded), then propagates.
    """
    return (await run_process(command, cwd, cap=STREAM_CAP, env=env, allow=allow)).entry()


def tool_env(ctx: ToolContext) -> Mapping[str, str] | None:
    """The environment a tool's subprocess starts from: ``ctx.env`` (tests), else ``None``
    (this process's); either way ``run_process`` passes only the allow-listed variables."""
    return ctx.env


async def run_shell(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """One command under the engine's tool timeout (which kills the group when it fires)."""
    command = arguments["command"]
    try:
        return success(await run_command(command, str(ctx.workspace), tool_env(ctx), ctx.tool_env_allow))
    except OSError as exc:
        return failure("unavailable", f"could not start the command: {exc}", {"command": command})
