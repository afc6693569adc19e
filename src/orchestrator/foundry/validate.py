"""The deterministic validation of a final workspace: expected files, the command, its exit code and stdout.

``decide`` is the pure decision table; ``run_command`` runs the command (``sh -c`` in the workspace, its
own process group, killed whole on timeout); ``validate_workspace`` does both.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import trio

from orchestrator.config.secrets import tool_environment
from orchestrator.foundry.evalspec import ValidationSpec

__all__ = ["OUTPUT_CAP", "CommandResult", "Verdict", "decide", "missing_files", "run_command", "validate_workspace"]

#: Bytes kept per stream; a needle past this point is not seen.
OUTPUT_CAP = 1_000_000
#: How long a killed process group gets to be reaped before we stop waiting.
_REAP_SECONDS = 5.0
#: How long the output pipes may stay open after the command ended.
_PIPE_GRACE_SECONDS = 2.0


@dataclass
class CommandResult:
    """What the validation command did. ``exit_code`` is ``None`` when a signal ended it."""

    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    seconds: float = 0.0


@dataclass
class Verdict:
    """The validation outcome: pass iff ``reasons`` is empty."""

    reasons: list[str] = field(default_factory=list)
    command: CommandResult | None = None

    @property
    def passed(self) -> bool:
        return not self.reasons


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def missing_files(spec: ValidationSpec, workspace: Path) -> list[str]:
    """The ``expectedFiles`` that do not exist in ``workspace`` (a directory counts as existing)."""
    return [name for name in spec.expected_files if not (workspace / name).exists()]


def decide(spec: ValidationSpec, missing: list[str], result: CommandResult) -> list[str]:
    """The reasons the benchmark fails (none: it passes).

    One reason per missing file; a timeout fails at once (nothing else about the command is judged);
    otherwise a signal-ended command, an exit-code mismatch and each stdout needle not found are one
    reason each.
    """
    reasons = [f"expected file {name} does not exist" for name in missing]
    if result.timed_out:
        default = "" if spec.timeout_given else ", the default"
        reasons.append(f"the command timed out after {_number(spec.timeout_seconds)} s (timeoutSeconds{default})")
        return reasons
    expected = spec.expected_exit_code
    if result.exit_code is None:
        reasons.append(f"the command was ended by a signal (no exit code; expected {_number(expected)})")
    elif not math.isclose(result.exit_code, expected):
        reasons.append(f"the command exited with {result.exit_code}, expected {_number(expected)}")
    for needle in spec.expected_stdout_contains:
        if needle not in result.stdout:
            reasons.append(f"stdout does not contain {needle!r}")
    return reasons


async def _drain(stream: trio.abc.ReceiveStream | None, sink: bytearray) -> None:
    if stream is None:
        return
    while True:
        data = await stream.receive_some(65536)
        if not data:
            return
        room = OUTPUT_CAP - len(sink)
        if room > 0:
            sink.extend(data[:room])


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def run_command(
    command: str, cwd: Path, timeout_seconds: float, env: Mapping[str, str] | None = None
) -> CommandResult:
    """``sh -c command`` in ``cwd`` with stdin closed, in a new session (its own process group).

    The environment is ``env`` (default: this process's) with the secrets stripped
    (``config.secrets.tool_environment``): a benchmark's command is workspace code like any tool's.

    On timeout the whole group is killed and the result says ``timed_out``. When the shell exits, any
    straggler it left in its group is killed too, so the output pipes close and nothing outlives the
    validation. Raises ``OSError`` when the shell cannot be started.
    """
    started = time.monotonic()
    process = await trio.lowlevel.open_process(
        ["sh", "-c", command],
        cwd=str(cwd),
        env=tool_environment(os.environ if env is None else env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    out, err = bytearray(), bytearray()
    code: int | None = None
    timed_out = False
    try:
        async with trio.open_nursery() as readers:
            readers.start_soon(_drain, process.stdout, out)
            readers.start_soon(_drain, process.stderr, err)
            with trio.move_on_after(timeout_seconds) as deadline:
                code = await process.wait()
            timed_out = deadline.cancelled_caught
            _kill_group(process.pid)
            if timed_out:
                with trio.move_on_after(_REAP_SECONDS, shield=True):
                    await process.wait()
            # A daemon that left the group may still hold a pipe open: stop reading shortly after.
            readers.cancel_scope.deadline = trio.current_time() + _PIPE_GRACE_SECONDS
    except BaseException:
        _kill_group(process.pid)
        raise
    finally:
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                with trio.CancelScope(shield=True):
                    await stream.aclose()
    return CommandResult(
        exit_code=None if timed_out or code is None or code < 0 else code,
        stdout=out.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"),
        timed_out=timed_out,
        seconds=time.monotonic() - started,
    )


async def validate_workspace(spec: ValidationSpec, workspace: Path, env: Mapping[str, str] | None = None) -> Verdict:
    """Check the expected files, run the command under its timeout, and decide."""
    missing = missing_files(spec, workspace)
    try:
        result = await run_command(spec.command, workspace, spec.timeout_seconds, env)
    except OSError as exc:
        return Verdict(
            reasons=[*(f"expected file {n} does not exist" for n in missing), f"the command could not start: {exc}"]
        )
    return Verdict(reasons=decide(spec, missing, result), command=result)
