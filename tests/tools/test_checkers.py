"""typecheck / test: the bounded command envelope over the run_shell spawn path."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from tests.slowness import budget
from tests.tools.support import make_ctx

from orchestrator.tools import default_native_tools
from orchestrator.tools.checkers import CHECK_STREAM_CAP, MAX_COMMANDS, per_command_timeout, run_checks


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def test_typecheck_and_test_are_the_same_tool() -> None:
    tools = default_native_tools()
    assert tools["typecheck"] is tools["test"] is run_checks


async def test_each_command_gets_its_own_entry_and_a_nonzero_exit_is_a_result(tmp_path: Path) -> None:
    commands = ["echo out; echo err >&2", "exit 3", "pwd"]
    result = await run_checks(make_ctx(tmp_path), {"commands": commands})
    assert result.kind == "success"
    assert result.data == [
        {"command": "echo out; echo err >&2", "exitCode": 0, "stdout": "out\n", "stderr": "err\n"},
        {"command": "exit 3", "exitCode": 3, "stdout": "", "stderr": ""},
        {"command": "pwd", "exitCode": 0, "stdout": f"{tmp_path}\n", "stderr": ""},
    ]


@pytest.mark.parametrize(
    "commands",
    [[], ["ok"] * (MAX_COMMANDS + 1), ["echo", ""], ["echo", "   "], "echo", [1]],
    ids=["empty", "seventeen", "empty-string", "blank-string", "not-a-list", "not-strings"],
)
async def test_bad_command_lists_are_invalid_arguments(tmp_path: Path, commands: object) -> None:
    marker = tmp_path / "ran"
    if isinstance(commands, list) and commands and commands[0] == "ok":
        commands = [f"touch {marker}"] * len(commands)
    result = await run_checks(make_ctx(tmp_path), {"commands": commands})
    assert result.kind == "invalid_arguments"
    assert not marker.exists()


async def test_sixteen_commands_are_allowed(tmp_path: Path) -> None:
    result = await run_checks(make_ctx(tmp_path), {"commands": ["true"] * MAX_COMMANDS})
    assert result.kind == "success" and len(result.data) == MAX_COMMANDS


async def test_a_timeout_stops_the_batch_and_reports_completed_plus_the_timed_out_entry(tmp_path: Path) -> None:
    third = tmp_path / "third-ran"
    commands = ["echo first", "echo partial; sleep 10", f"touch {third}"]
    with trio.fail_after(5):
        result = await run_checks(make_ctx(tmp_path), {"commands": commands, "timeoutSeconds": 0.5})
    assert result.kind == "timeout"
    assert "command 2 of 3" in str(result.message) and "sleep 10" in str(result.message)
    assert "0.5s" in str(result.message)
    assert result.details == [
        {"command": "echo first", "exitCode": 0, "stdout": "first\n", "stderr": ""},
        {"command": "echo partial; sleep 10", "exitCode": None, "stdout": "partial\n", "stderr": "", "timedOut": True},
    ]
    assert not third.exists()


async def test_timeout_seconds_cannot_raise_the_default(tmp_path: Path) -> None:
    assert per_command_timeout(30, 999) == 30 and per_command_timeout(30, 2) == 2
    assert per_command_timeout(30, 0) == 30 and per_command_timeout(30, True) == 30
    start = trio.current_time()
    ctx = make_ctx(tmp_path, default_tool_timeout_seconds=0.5)
    result = await run_checks(ctx, {"commands": ["sleep 60"], "timeoutSeconds": 999})
    assert result.kind == "timeout" and "within 0.5s" in str(result.message)
    assert trio.current_time() - start < min(budget(3), 50)  # the 0.5 s default, not the asked 999 s


async def test_without_a_default_the_calls_timeout_is_per_command(tmp_path: Path) -> None:
    # In a run the engine sets the deployment's default (tests/engine/test_toolcalls.py checks that it does).
    result = await run_checks(make_ctx(tmp_path, timeout=0.5), {"commands": ["sleep 5"]})
    assert result.kind == "timeout" and "within 0.5s" in str(result.message)


async def test_the_enclosing_deadline_yields_the_envelope_not_a_bare_cancel(tmp_path: Path) -> None:
    with trio.move_on_after(1.0) as engine_budget:
        result = await run_checks(make_ctx(tmp_path), {"commands": ["echo a", "sleep 10"]})
    assert not engine_budget.cancelled_caught
    assert result.kind == "timeout" and "overall time budget" in str(result.message)
    assert [entry.get("timedOut") for entry in result.details] == [None, True]


async def test_a_spawn_failure_is_unavailable_with_the_completed_entries(tmp_path: Path) -> None:
    third = tmp_path / "third-ran"
    too_long = "echo " + "x" * 300_000  # beyond the kernel's per-argument limit: exec fails (E2BIG)
    result = await run_checks(make_ctx(tmp_path), {"commands": ["echo ok", too_long, f"touch {third}"]})
    assert result.kind == "unavailable"
    assert "command 2 of 3" in str(result.message) and len(str(result.message)) < 500
    assert result.details == [{"command": "echo ok", "exitCode": 0, "stdout": "ok\n", "stderr": ""}]
    assert not third.exists()


async def test_a_missing_workspace_is_a_spawn_failure(tmp_path: Path) -> None:
    result = await run_checks(make_ctx(tmp_path / "gone"), {"commands": ["true"]})
    assert result.kind == "unavailable" and result.details == []


async def test_a_signal_killed_command_reports_a_null_exit_code(tmp_path: Path) -> None:
    result = await run_checks(make_ctx(tmp_path), {"commands": ["kill -9 $$", "kill -TERM $$", "true"]})
    assert result.kind == "success"
    assert [entry["exitCode"] for entry in result.data] == [None, None, 0]
    assert all("timedOut" not in entry for entry in result.data)


async def test_each_stream_is_capped_keeping_head_and_tail(tmp_path: Path) -> None:
    command = "echo START; head -c 100000 /dev/zero | tr '\\0' x; echo; echo END; echo ERR >&2"
    result = await run_checks(make_ctx(tmp_path), {"commands": [command]})
    stdout = result.data[0]["stdout"]
    assert stdout.startswith("START\n") and stdout.endswith("END\n")
    assert "[truncated: " in stdout and len(stdout) < CHECK_STREAM_CAP + 100
    assert result.data[0]["stderr"] == "ERR\n"


async def test_cancellation_kills_the_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "sleeper.pid"
    command = f"sleep 30 & echo $! > {pid_file}; wait"
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_checks, make_ctx(tmp_path), {"commands": [command]})
        with trio.fail_after(budget(5)):
            while not pid_file.exists() or not pid_file.read_text().strip():  # noqa: ASYNC110 - polling a file
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    sleeper = int(pid_file.read_text())
    with trio.move_on_after(budget(2)):
        while _running(sleeper):  # noqa: ASYNC110 - polling /proc; no event exists to wait on
            await trio.sleep(0.01)
    assert not _running(sleeper)


async def test_checker_commands_run_without_the_secrets(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "ORCHESTRATOR_API_KEY": "sk-model-key-123", "CI_TOKEN": "ci-token-abcdef"}
    result = await run_checks(make_ctx(tmp_path, env=env), {"commands": ["env"]})
    stdout = result.data[0]["stdout"]
    assert "PATH=" in stdout and "ORCHESTRATOR_API_KEY" not in stdout and "CI_TOKEN" not in stdout
