"""``service/portcheck.py``: a second ``serve``/``demo`` on a taken port says so in one line and exits 2."""

from __future__ import annotations

import errno
import os
import socket
import sys
from pathlib import Path

import trio
from tests.helpers import REPO
from tests.service.server import child_env, serve_process, write_config

from orchestrator.service.portcheck import Holder, bind_failure, busy_message, first_bind_error, holders

ROLES = {"lead": ["agent", "finish"]}


def _listener() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


async def _orchestrator(*args: str, cwd: Path) -> tuple[int, str, str]:
    done = await trio.run_process(
        [sys.executable, "-m", "orchestrator", *args],
        env=child_env(),
        cwd=cwd,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def test_a_listening_port_fails_the_bind_check_and_names_this_process() -> None:
    with _listener() as sock:
        port = sock.getsockname()[1]
        failure = bind_failure("127.0.0.1", port)
        assert failure is not None and failure.errno == errno.EADDRINUSE
        assert os.getpid() in [h.pid for h in holders(port)]
    assert bind_failure("127.0.0.1", port) is None
    assert bind_failure("127.0.0.1", 0) is None


def test_the_bind_error_is_found_inside_nested_groups_and_said_in_one_line() -> None:
    taken = OSError(errno.EADDRINUSE, "Address already in use")
    nested = BaseExceptionGroup("outer", [ExceptionGroup("inner", [ValueError("x"), taken])])
    assert first_bind_error(nested) is taken
    assert first_bind_error(ExceptionGroup("other", [OSError(errno.ENOSPC, "full")])) is None
    line = busy_message("127.0.0.1", 8765, taken, [Holder(pid=42, command="orchestrator demo")], True)
    assert line == (
        "port 8765 on 127.0.0.1 is already in use by another `orchestrator serve` (or demo) "
        "(pid 42: orchestrator demo); stop it, or pick another port with --port N (--port 0 takes any free one)"
    )
    assert "\n" not in line
    denied = busy_message("127.0.0.1", 80, OSError(errno.EACCES, "Permission denied"), [], False)
    assert denied.startswith("cannot listen on 127.0.0.1:80: Permission denied")


async def test_a_second_serve_on_a_busy_port_says_who_holds_it_and_exits_2(tmp_path: Path) -> None:
    guild, deployment = write_config(tmp_path, "http://127.0.0.1:9/v1", ROLES)
    async with serve_process(tmp_path, guild=guild, deployment=deployment) as first:
        port = first.base_url.rsplit(":", 1)[1]
        second = tmp_path / "second"
        second.mkdir()
        code, stdout, stderr = await _orchestrator(
            "serve",
            "--port",
            port,
            "--workspace",
            str(second),
            "--guild",
            str(guild),
            "--deployment",
            str(deployment),
            cwd=REPO,
        )
        assert first.alive()
    assert code == 2 and stdout == ""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(
        f"orchestrator: port {port} on 127.0.0.1 is already in use by another `orchestrator serve`"
    )
    assert f"pid {first.process.pid}: " in lines[0] and "--port N" in lines[0]
    assert "Traceback" not in stderr


async def test_demo_on_a_busy_port_is_one_line_too(tmp_path: Path) -> None:
    with _listener() as sock:
        port = str(sock.getsockname()[1])
        code, _, stderr = await _orchestrator("demo", "--port", port, "--workspace", str(tmp_path / "d"), cwd=tmp_path)
    assert code == 2 and "Traceback" not in stderr
    busy = [line for line in stderr.splitlines() if "already in use" in line]
    assert busy == [
        f"orchestrator: port {port} on 127.0.0.1 is already in use (pid {os.getpid()}: {_command_line()}); stop it, "
        "or pick another port with --port N (--port 0 takes any free one)"
    ]


def _command_line() -> str:
    raw = Path(f"/proc/{os.getpid()}/cmdline").read_bytes()
    command = " ".join(raw.decode(errors="replace").replace("\0", " ").split())
    return command if len(command) <= 80 else command[:79] + "…"
