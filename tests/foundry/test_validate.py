"""The validation decision table and the command runner (timeout kills the whole process group)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from tests.slowness import budget

from orchestrator.foundry.evalspec import ValidationSpec
from orchestrator.foundry.validate import decide, missing_files, run_validation_command, validate_workspace
from orchestrator.process import ProcessRun


def spec(**fields: object) -> ValidationSpec:
    return ValidationSpec(command="true", **fields)  # type: ignore[arg-type]


def ran(exit_code: int | None, **fields: Any) -> ProcessRun:
    """A finished validation command, as the runner reports it."""
    return ProcessRun(command="pytest -q", exit_code=exit_code, **fields)


OK = ran(exit_code=0, stdout="3 passed\n")


def alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie waiting for a reaper we do not control."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


@pytest.mark.parametrize(
    ("validation", "missing", "result", "reasons"),
    [
        pytest.param(spec(), [], OK, [], id="pass"),
        pytest.param(spec(expected_stdout_contains=("3 passed",)), [], OK, [], id="pass-with-needle"),
        pytest.param(
            spec(expected_files=("a.py", "b.py")),
            ["a.py", "b.py"],
            OK,
            ["expected file a.py does not exist", "expected file b.py does not exist"],
            id="a-reason-per-missing-file",
        ),
        pytest.param(
            spec(expected_stdout_contains=("never",)),
            [],
            ran(exit_code=None, timed_out=True),
            ["the command timed out after 60 s (timeoutSeconds, the default)"],
            id="timeout-default-fails-at-once",
        ),
        pytest.param(
            spec(timeout_seconds=2.5, timeout_given=True),
            ["x"],
            ran(exit_code=None, timed_out=True),
            ["expected file x does not exist", "the command timed out after 2.5 s (timeoutSeconds)"],
            id="timeout-given",
        ),
        pytest.param(
            spec(),
            [],
            ran(exit_code=None),
            ["the command was ended by a signal (no exit code; expected 0)"],
            id="null-exit-code",
        ),
        pytest.param(spec(), [], ran(exit_code=1), ["the command exited with 1, expected 0"], id="exit-code-mismatch"),
        pytest.param(spec(expected_exit_code=2), [], ran(exit_code=2), [], id="nonzero-expected"),
        pytest.param(
            spec(expected_stdout_contains=("4 passed", "ok", "passed")),
            [],
            OK,
            ["stdout does not contain '4 passed'", "stdout does not contain 'ok'"],
            id="each-missing-needle",
        ),
        pytest.param(
            spec(expected_files=("out.txt",), expected_stdout_contains=("42",)),
            ["out.txt"],
            ran(exit_code=1, stdout="nope"),
            [
                "expected file out.txt does not exist",
                "the command exited with 1, expected 0",
                "stdout does not contain '42'",
            ],
            id="everything-wrong",
        ),
    ],
)
def test_decision_table(validation: ValidationSpec, missing: list[str], result: ProcessRun, reasons: list[str]) -> None:
    assert decide(validation, missing, result) == reasons


def test_missing_files(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("")
    validation = spec(expected_files=("src/a.py", "src", "src/b.py"))
    assert missing_files(validation, tmp_path) == ["src/b.py"]


async def test_the_command_reports_exit_code_and_output(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("hello")
    result = await run_validation_command("cat f.txt; echo; echo oops >&2; exit 3", tmp_path, 10)
    assert (result.exit_code, result.stdout, result.stderr, result.timed_out) == (3, "hello\n", "oops\n", False)


async def test_a_signal_leaves_no_exit_code(tmp_path: Path) -> None:
    result = await run_validation_command("kill -TERM $$", tmp_path, 10)
    assert result.exit_code is None
    assert not result.timed_out


async def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    started = time.monotonic()
    result = await run_validation_command("sleep 30 & echo $! > child.pid; wait", tmp_path, 0.5)
    assert result.timed_out
    assert result.exit_code is None
    assert time.monotonic() - started < min(budget(10), 25)  # not the child's 30 s
    child = int((tmp_path / "child.pid").read_text())
    for _ in range(250):
        if not alive(child):
            break
        await trio.sleep(0.02)
    else:
        pytest.fail("the background child outlived the timeout")


async def test_a_straggler_does_not_hold_the_verdict(tmp_path: Path) -> None:
    started = time.monotonic()
    result = await run_validation_command("(sleep 30 &) ; echo done", tmp_path, 20)
    assert (result.exit_code, result.stdout, result.timed_out) == (0, "done\n", False)
    assert time.monotonic() - started < min(budget(10), 25)  # not the straggler's 30 s


async def test_validate_workspace(tmp_path: Path) -> None:
    (tmp_path / "total.txt").write_text("42.75\n")
    good = ValidationSpec(command="cat total.txt", expected_files=("total.txt",), expected_stdout_contains=("42.75",))
    verdict = await validate_workspace(good, tmp_path)
    assert verdict.passed and verdict.command is not None and verdict.command.stdout == "42.75\n"
    bad = ValidationSpec(command="cat nothing.txt", expected_files=("nothing.txt",))
    verdict = await validate_workspace(bad, tmp_path)
    assert verdict.reasons == ["expected file nothing.txt does not exist", "the command exited with 1, expected 0"]


async def test_the_validation_command_runs_without_the_secrets(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "ORCHESTRATOR_KAGI_API_KEY": "kagi-4567", "AWS_SECRET_ACCESS_KEY": "abc12345"}
    result = await run_validation_command("env", tmp_path, 10, env)
    assert "PATH=" in result.stdout
    assert "ORCHESTRATOR_KAGI_API_KEY" not in result.stdout and "AWS_SECRET_ACCESS_KEY" not in result.stdout
