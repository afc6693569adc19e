"""The one subprocess runner: ``sh -c`` in a working directory, its own process group, streams capped.

Every command the orchestrator runs for a role or a benchmark goes through ``run_process``: the
tools (``run_shell``, ``typecheck``, ``test``) and the benchmark validation (``foundry/validate.py``).
It guarantees, for every caller:

- the environment is the given one (default: this process's) reduced to its allow-listed part
  (``config.secrets.tool_environment``);
- stdin is closed; the command runs in a new session, so its whole process group can be killed;
- at the deadline the group is killed and the run comes back ``timed_out`` with the output so far;
- cancellation kills the group and reaps it (shielded, bounded) before it propagates, so no stray
  child outlives the call;
- each stream keeps at most ``cap`` bytes (``Capture``).
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import trio

from orchestrator.config.secrets import tool_environment

__all__ = ["Capture", "ProcessRun", "run_process"]

#: How long a killed group may take to be reaped before we stop waiting (shielded).
_REAP_SECONDS = 5.0


class Capture:
    """A capped byte sink, counting what it dropped.

    With ``keep_tail`` (the default) half the cap goes to the first bytes and half to the most recent
    ones, and ``text()`` marks the cut: the start of a compiler's output and the summary line at the
    end of a test run both survive. Without it the sink keeps the first ``cap`` bytes, unmarked.
    """

    def __init__(self, cap: int, *, keep_tail: bool = True) -> None:
        self.cap = max(cap, 2)
        self.keep_tail = keep_tail
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        half = self.cap // 2 if self.keep_tail else self.cap
        room = half - len(self._head)
        if room > 0:
            self._head.extend(data[:room])
            data = data[room:]
        if data and self.keep_tail:
            self._tail.extend(data)
            if len(self._tail) > self.cap - half:
                del self._tail[: len(self._tail) - (self.cap - half)]

    @property
    def dropped(self) -> int:
        return self.total - len(self._head) - len(self._tail)

    def text(self) -> str:
        head = self._head.decode("utf-8", "replace")
        if not self.keep_tail:
            return head
        tail = self._tail.decode("utf-8", "replace")
        if not self.dropped:
            return head + tail
        return f"{head}\n[truncated: {self.dropped} bytes removed]\n{tail}"


@dataclass
class ProcessRun:
    """One finished (or stopped) command. ``exit_code`` is ``None`` when a signal or the deadline
    ended it; ``seconds`` is its wall time from start to the end of capture."""

    command: str
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    seconds: float = 0.0

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


async def _until_output_ends(process: trio.Process, out: Capture, err: Capture) -> int:
    """Read both streams to their end, then wait for the shell: a child that keeps a pipe open keeps
    the command running."""
    async with trio.open_nursery() as readers:
        readers.start_soon(_drain, process.stdout, out)
        readers.start_soon(_drain, process.stderr, err)
    return await process.wait()


async def _until_shell_exits(
    process: trio.Process, out: Capture, err: Capture, deadline: float, grace: float
) -> tuple[int | None, bool]:
    """Wait for the shell alone, then kill what it left in its group and read the pipes for at most
    ``grace`` more seconds (a daemon that left the group may hold one open). Returns the exit code
    (``None`` past the deadline) and whether the deadline passed."""
    code: int | None = None
    async with trio.open_nursery() as readers:
        readers.start_soon(_drain, process.stdout, out)
        readers.start_soon(_drain, process.stderr, err)
        with trio.move_on_at(deadline) as command_budget:
            code = await process.wait()
        _kill_group(process)
        if command_budget.cancelled_caught:
            with trio.move_on_after(_REAP_SECONDS, shield=True):
                await process.wait()
        readers.cancel_scope.deadline = trio.current_time() + grace
    return code, command_budget.cancelled_caught


async def run_process(
    command: str,
    cwd: str,
    *,
    cap: int,
    deadline: float = math.inf,
    env: Mapping[str, str] | None = None,
    allow: Iterable[str] = (),
    keep_tail: bool = True,
    straggler_grace: float | None = None,
) -> ProcessRun:
    """Run ``sh -c command`` in ``cwd`` until it ends or ``deadline`` (trio clock) passes.

    The environment is the allow-listed part of ``env`` (default: this process's), always:
    ``config.secrets.tool_environment`` with ``allow`` (the deployment's ``toolEnvironment``). Each
    stream keeps at most ``cap`` bytes (``Capture``; ``keep_tail`` as there).

    When the command ends: by default when both output streams close (a background child holding
    one keeps the command running, up to the deadline). With ``straggler_grace`` (seconds), when the
    shell itself exits: whatever it left in its group is killed and the pipes are read for at most
    that long more, so a straggler cannot hold the result.

    At the deadline the process group is killed and the run comes back ``timed_out`` with the output
    captured so far and ``exit_code=None``. Raises ``OSError`` when the command cannot be started
    (missing ``cwd``, argument too long …). Cancellation: kills the process group, reaps it
    (shielded, bounded), then propagates.
    """
    started = trio.current_time()
    process = await trio.lowlevel.open_process(
        ["sh", "-c", command],
        cwd=cwd,
        env=tool_environment(os.environ if env is None else env, allow),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    out, err = Capture(cap, keep_tail=keep_tail), Capture(cap, keep_tail=keep_tail)
    code: int | None = None
    timed_out = False
    try:
        if straggler_grace is None:
            with trio.move_on_at(deadline) as command_budget:
                code = await _until_output_ends(process, out, err)
            timed_out = command_budget.cancelled_caught
            if timed_out:
                await _kill_and_reap(process)
        else:
            code, timed_out = await _until_shell_exits(process, out, err, deadline, straggler_grace)
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
        exit_code=None if timed_out or code is None or code < 0 else code,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        seconds=trio.current_time() - started,
    )
