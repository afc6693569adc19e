"""``orchestrator.process``: the shared runner's capture, its two ways of ending, timeouts, environment."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from tests.slowness import budget

from orchestrator.process import Capture, run_process


def _names(stdout: str) -> set[str]:
    return {line.split("=", 1)[0] for line in stdout.splitlines() if "=" in line}


def test_capture_keeps_head_and_tail_and_marks_the_cut() -> None:
    sink = Capture(10)
    sink.feed(b"abcdefghijklmnopqrstuvwxyz")
    assert (sink.total, sink.dropped) == (26, 16)
    assert sink.text() == "abcde\n[truncated: 16 bytes removed]\nvwxyz"


def test_capture_without_tail_keeps_the_first_bytes_unmarked() -> None:
    sink = Capture(10, keep_tail=False)
    sink.feed(b"abcdefgh")
    sink.feed(b"ijklmnop")
    assert (sink.text(), sink.dropped) == ("abcdefghij", 6)


def test_capture_under_the_cap_is_the_whole_stream() -> None:
    sink = Capture(100)
    sink.feed(b"hello ")
    sink.feed(b"world")
    assert (sink.text(), sink.dropped) == ("hello world", 0)


async def test_exit_code_and_both_streams(tmp_path: Path) -> None:
    ran = await run_process("echo out; echo err >&2; exit 3", str(tmp_path), cap=1000)
    assert (ran.exit_code, ran.stdout, ran.stderr, ran.timed_out) == (3, "out\n", "err\n", False)
    assert ran.entry() == {
        "command": "echo out; echo err >&2; exit 3",
        "exitCode": 3,
        "stdout": "out\n",
        "stderr": "err\n",
    }


async def test_the_deadline_kills_the_group_and_keeps_the_output_so_far(tmp_path: Path) -> None:
    ran = await run_process("echo early; sleep 30", str(tmp_path), cap=1000, deadline=trio.current_time() + 0.5)
    assert (ran.exit_code, ran.stdout, ran.timed_out) == (None, "early\n", True)
    assert ran.entry()["timedOut"] is True


async def test_a_straggler_holding_the_pipe_runs_to_the_deadline_by_default(tmp_path: Path) -> None:
    ran = await run_process("(sleep 30 &); echo done", str(tmp_path), cap=1000, deadline=trio.current_time() + 1)
    assert (ran.stdout, ran.timed_out, ran.exit_code) == ("done\n", True, None)


async def test_with_a_straggler_grace_the_shell_exit_ends_the_command(tmp_path: Path) -> None:
    ran = await run_process(
        "(sleep 30 &); echo done", str(tmp_path), cap=1000, deadline=trio.current_time() + 20, straggler_grace=0.5
    )
    assert (ran.stdout, ran.timed_out, ran.exit_code) == ("done\n", False, 0)
    assert ran.seconds < min(budget(10), 25)  # not the straggler's 30 s


async def test_the_default_environment_is_this_processs_allow_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORCHESTRATOR_API_KEY", "sk-from-os-environ")
    monkeypatch.setenv("SOME_SECRET", "from-os-environ-too")
    monkeypatch.setenv("NOT_LISTED", "withheld")
    monkeypatch.setenv("LISTED_BY_THE_DEPLOYMENT", "yes")
    ran = await run_process("env", str(tmp_path), cap=64_000, allow=["LISTED_BY_THE_DEPLOYMENT"])
    names = _names(ran.stdout)
    assert {"PATH", "LISTED_BY_THE_DEPLOYMENT"} <= names
    assert not {"ORCHESTRATOR_API_KEY", "SOME_SECRET", "NOT_LISTED"} & names
    assert "sk-from-os-environ" not in ran.stdout


async def test_a_missing_directory_cannot_start(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        await run_process("true", str(tmp_path / "absent"), cap=10)
