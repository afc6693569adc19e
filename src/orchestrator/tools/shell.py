"""The one subprocess path: ``sh -c`` in the workspace, in its own process group, streams capped.

``run_shell`` and the checker tools (``typecheck``, ``test``) both go through ``run_process``.
Cancellation (the tool timeout, a plan modification, shutdown) kills the whole process group before
the cancellation propagates, so no stray child outlives its call. The command's environment is the
process's own with the secrets stripped (``config.secrets.tool_environment``); its output is redacted
by the engine where it enters the conversation.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import trio

from orchestrator.config.secrets import tool_environment
from orchestrator.conversation import ToolResult
from orchestrator.tools.base import ToolContext, failure, success

__all__ = ["STREAM_CAP", "Capture", "ProcessRun", "run_command", "run_process", "run_shell", "tool_env"]

#: Per-stream capture cap for run_shell; the engine's maxToolOutputChars applies on top of it.
STREAM_CAP = 64_000
#: How long a killed group may take to be reaped before we stop waiting (shielded).
_REAP_SECONDS = 5.0


class Capture:
    """A capped byte sink keeping the head and the tail of a stream, counting what it dropped.

    Half the cap goes to the first bytes, half to the most recent ones: the start of a compiler's
    output and the summary line at the end of a test run both survive.
    """

    def __init__(self, cap: int) -> None:
        self.cap = max(cap, 2)
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        half = self.cap // 2
        room = half - len(self._head)
        if room > 0:
            self._head.extend(data[:room])
            data = data[room:]
        if data:
            self._tail.extend(data)
            if len(self._tail) > self.cap - half:
                del self._tail[: len(self._tail) - (self.cap - half)]

    @property
    def dropped(self) -> int:
        return self.total - len(self._head) - len(self._tail)

    def text(self) -> str:
        head = self._head.decode("utf-8", "replace")
        tail = self._tail.decode("utf-8", "replace")
        if not self.dropped:
            return head + tail
        return f"{head}\n[truncated: {self.dropped} bytes removed]\n{tail}"


@dataclass
class ProcessRun:
    """One finished (or stopped) command. ``exit_code`` is ``None`` when a signal ended it."""

    command: str
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False

    def entry(self) -> dict[str, Any]:
        """The wire shape ``{command, exitCode, stdout, stderr}`` (+ ``timedOut: true`` when stopped)."""
        entry: dict[str, Any] = {
            "command": self.command,
            "exitCode": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
        }
        if self.timed_out:
            entry["timedOut"] = True
        return entry


async def _drain(stream: trio.abc.ReceiveStream | None, sink: Capture) -> None:
    if stream is None:
        return
    while True:
        data = await stream.receive_some(65536)
        if not data:
            return
        sink.feed(data)


def _kill_group(process: trio.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def _kill_and_reap(process: trio.Process) -> None:
    _kill_group(process)
    with trio.move_on_after(_REAP_SECONDS, shield=True):
        await process.wait()


async def run_process(
    command: str,
    cwd: str,
    *,
    deadline: float = math.inf,
    cap: int = STREAM_CAP,
    env: Mapping[str, str] | None = None,
) -> ProcessRun:
    """Run ``sh -c command`` in ``cwd`` until it ends or ``deadline`` (trio clock) passes.

    The environment is ``env`` (default: this process's) with the secrets stripped, always.

    At the deadline the process group is killed and the run comes back ``timed_out`` with the output
    captured so far and ``exit_code=None``. Each stream keeps at most ``cap`` bytes (head and tail).
    Raises ``OSError`` when the command cannot be started (missing ``cwd``, argument too long …).
    Cancellation: kills the process group, reaps it (shielded, bounded), then propagates.
    """
    process = await trio.lowlevel.open_process(
        ["sh", "-c", command],
        cwd=cwd,
        env=tool_environment(os.environ if env is None else env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    out, err = Capture(cap), Capture(cap)
    code: int | None = None
    try:
        with trio.move_on_at(deadline) as command_budget:
            async with trio.open_nursery() as readers:
                readers.start_soon(_drain, process.stdout, out)
                readers.start_soon(_drain, process.stderr, err)
            code = await process.wait()
        if command_budget.cancelled_caught:
            await _kill_and_reap(process)
            code = None
    except BaseException:
        await _kill_and_reap(process)
        raise
    finally:
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                with trio.CancelScope(shield=True):
                    await stream.aclose()
    return ProcessRun(
        command=command,
        exit_code=code if code is not None and code >= 0 else None,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=command_budget.cancelled_caught,
    )


async def run_command(command: str, cwd: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Run ``sh -c command`` to completion; returns ``{command, exitCode, stdout, stderr}``.

    ``exitCode`` is ``None`` when a signal ended the process. Raises ``OSError`` when it cannot start.
    Cancellation: kills the process group, reaps it (shielded, bounded), then propagates.
    """
    return (await run_process(command, cwd, env=env)).entry()


def tool_env(ctx: ToolContext) -> Mapping[str, str] | None:
    """The environment a tool's subprocess starts from: ``ctx.env`` (tests), else ``None``
    (this process's); either way ``run_process`` strips the secrets."""
    return ctx.env


async def run_shell(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """One command under the engine's tool timeout (which kills the group when it fires)."""
    command = arguments["command"]
    try:
        return success(await run_command(command, str(ctx.workspace), tool_env(ctx)))
    except OSError as exc:
        return failure("unavailable", f"could not start the command: {exc}", {"command": command})
