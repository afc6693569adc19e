"""``run_shell``: one ``sh -c`` command in the workspace, in its own process group.

Cancellation (the tool timeout, a plan modification, shutdown) kills the whole process group before
the cancellation propagates, so no stray child outlives its call.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

import trio

from orchestrator.runlog.events import ToolResult
from orchestrator.tools.base import ToolContext, failure, success

__all__ = ["STREAM_CAP", "run_command", "run_shell"]

#: Per-stream capture cap; the engine's maxToolOutputChars applies on top of it for the conversation.
STREAM_CAP = 64_000


async def _drain(stream: trio.abc.ReceiveStream | None, sink: bytearray) -> None:
    if stream is None:
        return
    while True:
        data = await stream.receive_some(65536)
        if not data:
            return
        room = STREAM_CAP - len(sink)
        if room > 0:
            sink.extend(data[:room])


def _kill_group(process: trio.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def run_command(command: str, cwd: str) -> dict[str, Any]:
    """Run ``sh -c command`` to completion; returns ``{command, exitCode, stdout, stderr}``.

    ``exitCode`` is ``None`` when a signal ended the process. Raises ``OSError`` when it cannot start.
    Cancellation: kills the process group, reaps it (shielded, bounded), then propagates.
    """
    process = await trio.lowlevel.open_process(
        ["sh", "-c", command],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    out, err = bytearray(), bytearray()
    try:
        async with trio.open_nursery() as readers:
            readers.start_soon(_drain, process.stdout, out)
            readers.start_soon(_drain, process.stderr, err)
        code = await process.wait()
    except BaseException:
        _kill_group(process)
        with trio.move_on_after(5, shield=True):
            await process.wait()
        raise
    finally:
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                with trio.CancelScope(shield=True):
                    await stream.aclose()
    return {
        "command": command,
        "exitCode": code if code >= 0 else None,
        "stdout": out.decode("utf-8", "replace"),
        "stderr": err.decode("utf-8", "replace"),
    }


async def run_shell(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    command = arguments["command"]
    try:
        return success(await run_command(command, str(ctx.workspace)))
    except OSError as exc:
        return failure("unavailable", f"could not start the command: {exc}", {"command": command})
