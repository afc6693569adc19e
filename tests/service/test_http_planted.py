"""A real ``orchestrator serve`` against what a checkout or a careless setting can plant before it starts:
a FIFO at ``.orchestration/token``, a one-character ``ORCHESTRATOR_TOKEN``, a ``.orchestration`` that is a
symlink into a folder every user may write, and the wide-bind warning's container advice.

Each refusal is the configuration error path: the process still binds and serves the error page (no
token, no action), says what is wrong on stderr, and exits 2 once signalled — promptly, never hung.
"""

from __future__ import annotations

import os
import signal
import stat
import sys
from pathlib import Path

import trio
from tests.helpers import REPO, serve_script
from tests.service.server import child_env, serve_process, write_config
from tests.slowness import budget

ROLES = {"lead": ["finish"]}


async def test_a_fifo_at_the_token_file_is_refused_without_hanging(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".orchestration").mkdir(parents=True, mode=0o700)
    os.mkfifo(workspace / ".orchestration" / "token", 0o600)
    async with serve_script({"turns": []}) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, ROLES)
        async with serve_process(tmp_path, guild=guild, deployment=deployment, refused=True) as server:
            assert "not a regular file" in server.stderr() and "delete it" in server.stderr()
            assert (await server.get("/api/config")).status_code != 200  # the error page, not the service
            assert await server.stop(signal.SIGTERM, seconds=budget(15)) == 2  # SIGTERM is heard
    assert stat.S_ISFIFO((workspace / ".orchestration" / "token").lstat().st_mode)  # nothing replaced it


async def test_a_short_environment_token_is_refused(tmp_path: Path) -> None:
    async with serve_script({"turns": []}) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, ROLES)
        env = {"ORCHESTRATOR_TOKEN": "a"}
        async with serve_process(tmp_path, guild=guild, deployment=deployment, env=env, refused=True) as server:
            stderr = server.stderr()
            assert "ORCHESTRATOR_TOKEN has 1 characters; use at least 16" in stderr
            reply = await server.get("/api/config", headers={"Authorization": "Bearer a"})
            assert reply.status_code != 200 and "Bearer a" not in reply.text
            assert "?token=a" not in stderr  # no sign-in link printed for it
            assert await server.stop() == 2
        sixteen = {"ORCHESTRATOR_TOKEN": "0123456789abcdef"}
        async with serve_process(tmp_path, guild=guild, deployment=deployment, env=sixteen, name="ok") as server:
            assert (await server.get("/api/config")).status_code == 200


async def test_a_symlinked_orchestration_folder_open_to_everyone_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # what /tmp-like folders are: anyone may swap files in it
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".orchestration").symlink_to(shared)
    async with serve_script({"turns": []}) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, ROLES)
        async with serve_process(tmp_path, guild=guild, deployment=deployment, refused=True) as server:
            stderr = server.stderr()
            assert f"{workspace / '.orchestration'} (a link to {shared})" in stderr
            assert "writable by other users" in stderr and "chmod 700" in stderr
            assert await server.stop() == 2
        assert list(shared.iterdir()) == []  # no token, queue or run folder was written there
        shared.chmod(0o700)  # the user's own private folder behind the link is fine
        async with serve_process(tmp_path, guild=guild, deployment=deployment, name="private") as server:
            assert (await server.get("/api/config")).status_code == 200
            assert (shared / "token").is_file()


async def test_the_wide_bind_warning_names_the_port_served(tmp_path: Path) -> None:
    async with serve_script({"turns": []}) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, ROLES)
        args = ["serve", "--host", "0.0.0.0", "--port", "0", "--workspace", str(tmp_path), "--guild", str(guild),
                "--deployment", str(deployment), "--no-token"]  # fmt: skip
        with trio.fail_after(budget(30)):  # refused before binding (no token off loopback): only the warning is wanted
            done = await trio.run_process(
                [sys.executable, "-m", "orchestrator", *args], cwd=REPO, env=child_env(), capture_stdout=True,
                capture_stderr=True, check=False,
            )  # fmt: skip
        stderr = done.stderr.decode()
        assert "WARNING: binding 0.0.0.0" in stderr
        assert "publish the port as -p 127.0.0.1:8765:8765" in stderr and ":80)" not in stderr  # the image's port
        assert done.returncode == 2 and "serving on" not in stderr
