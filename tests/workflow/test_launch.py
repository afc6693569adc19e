"""``workflow/launch.py``: ``serve_main`` builds the server, serves it, and maps failures to exit codes.

Configuration that cannot work exits 2 with the reason on stderr before anything listens (checked in this
process); a real HTTP server drains on SIGTERM and exits 0, and a second one on its port exits 2.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.workflow.conftest import REPO
from tests.workflow.httpchild import spawn_http_server, stop_process, wait_listening

from orchestrator.workflow.launch import serve_main
from orchestrator.workflow.serverconfig import load_workflow_settings


@pytest.fixture
def root_logging() -> Iterator[None]:
    """``serve_main`` routes Python logging to its JSON lines; put the test process's handlers back after."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.usefixtures("root_logging")
def test_a_bind_beyond_loopback_without_a_token_exits_2_before_listening(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"HOME": str(tmp_path), "WORKFLOW_WORKSPACE": str(tmp_path), "WORKFLOW_SERVER_KEY_DIR": str(tmp_path / "k")}
    settings = load_workflow_settings(env, {"transport": "http", "host": "0.0.0.0", "port": "0"}, cwd=tmp_path)
    assert serve_main(settings, env) == 2
    err = capsys.readouterr().err
    assert "orchestrator mcp: invalid configuration: --host 0.0.0.0 is reachable beyond this machine" in err
    assert '"config_error"' in err and '"server_started"' not in err


@pytest.mark.usefixtures("root_logging")
def test_a_missing_workflow_dir_exits_2_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = {
        "HOME": str(tmp_path),
        "WORKFLOW_WORKSPACE": str(tmp_path),
        "WORKFLOW_SERVER_KEY_DIR": str(tmp_path / "k"),
        "WORKFLOW_DIR": str(tmp_path / "nowhere"),
    }
    assert serve_main(load_workflow_settings(env, cwd=tmp_path), env) == 2
    assert f"workflow directory {tmp_path / 'nowhere'} does not exist" in capsys.readouterr().err


def _server_cmd(tmp_path: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO / "src"),
        "WORKFLOW_WORKSPACE": str(tmp_path),
        "WORKFLOW_SERVER_KEY_DIR": str(tmp_path / "k"),
    }
    return [sys.executable, "-m", "orchestrator", "mcp", "--transport", "http", *args], env


def test_sigterm_drains_and_exits_0_and_a_taken_port_exits_2(tmp_path: Path) -> None:
    cmd, env = _server_cmd(tmp_path, "--port", "0")
    log = tmp_path / "first.log"
    first = spawn_http_server(cmd, env, log, tmp_path)
    try:
        url = wait_listening(first, log)
        port = url.rsplit(":", 1)[1].split("/", 1)[0]
        taken_cmd, taken_env = _server_cmd(tmp_path, "--port", port)
        taken = subprocess.run(
            taken_cmd,
            env=taken_env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert taken.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in taken.stderr
    finally:
        code = stop_process(first)
    assert code == 0
    assert '"server_stopped"' in log.read_text()
