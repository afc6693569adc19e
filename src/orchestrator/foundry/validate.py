"""The deterministic validation of a final workspace: expected files, the command, its exit code and stdout.

``decide`` is the pure decision table; ``run_validation_command`` runs the command through the shared
runner (``orchestrator.process``: ``sh -c`` in the workspace, its own process group, killed whole on
timeout); ``validate_workspace`` does both.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import trio

from orchestrator.foundry.evalspec import ValidationSpec
from orchestrator.process import ProcessRun, run_process

__all__ = ["OUTPUT_CAP", "Verdict", "decide", "missing_files", "run_validation_command", "validate_workspace"]

#: Bytes kept per stream; a needle past this point is not seen.
OUTPUT_CAP = 1_000_000
#: How long the output pipes may stay open after the command ended.
_PIPE_GRACE_SECONDS = 2.0


@dataclass
class Verdict:
    """The validation outcome: pass iff ``reasons`` is empty."""

    reasons: list[str] = field(default_factory=list)
    command: ProcessRun | None = None

    @property
    def passed(self) -> bool:
        return not self.reasons


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def missing_files(spec: ValidationSpec, workspace: Path) -> list[str]:
    """The ``expectedFiles`` that do not exist in ``workspace`` (a directory counts as existing)."""
    return [name for name in spec.expected_files if not (workspace / name).exists()]


def decide(spec: ValidationSpec, missing: list[str], result: ProcessRun) -> list[str]:
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


async def run_validation_command(
    command: str, cwd: Path, timeout_seconds: float, env: Mapping[str, str] | None = None
) -> ProcessRun:
    """``sh -c command`` in ``cwd`` through the shared runner, stdout and stderr each cut at ``OUTPUT_CAP``.

    The environment is the allow-listed part of ``env`` (default: this process's,
    ``config.secrets.tool_environment``): a benchmark's command is workspace code like any tool's.

    On timeout the whole group is killed and the result says ``timed_out``. When the shell exits, any
    straggler it left in its group is killed too, so the output pipes close and nothing outlives the
    validation. Raises ``OSError`` when the shell cannot be started.
    """
    return await run_process(
        command,
        str(cwd),
        cap=OUTPUT_CAP,
        deadline=trio.current_time() + timeout_seconds,
        env=env,
        keep_tail=False,
        straggler_grace=_PIPE_GRACE_SECONDS,
    )


async def validate_workspace(spec: ValidationSpec, workspace: Path, env: Mapping[str, str] | None = None) -> Verdict:
    """Check the expected files, run the command under its timeout, and decide."""
    missing = missing_files(spec, workspace)
    try:
        result = await run_validation_command(spec.command, workspace, spec.timeout_seconds, env)
    except OSError as exc:
        return Verdict(
            reasons=[*(f"expected file {n} does not exist" for n in missing), f"the command could not start: {exc}"]
        )
    return Verdict(reasons=decide(spec, missing, result), command=result)
