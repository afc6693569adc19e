"""``orchestrator mcp --transport http`` as a child process: spawn it, wait until it listens, stop it.

Shared by the workflow tests (``conftest.McpProcess``, ``test_http.py``) and ``bench/mcp_calls.py``.
It lives with the tests, not in the product (nothing in ``src/`` starts its own HTTP server as a
child), and the bench imports it as the other benches import their harnesses from ``tests/``.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["http_token", "spawn_http_server", "stop_process", "wait_listening"]

#: how often the log is re-read while waiting for the listening line (an event in a file, not a fixed wait)
_POLL_SECONDS = 0.005


def spawn_http_server(
    command: Sequence[str], env: Mapping[str, str], log_path: Path, cwd: Path | str | None = None
) -> subprocess.Popen[bytes]:
    """The server as a subprocess: no stdin, stdout dropped, stderr (the JSON-lines log) in ``log_path``."""
    with log_path.open("wb") as errlog:
        return subprocess.Popen(
            list(command), env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errlog
        )


def wait_listening(proc: subprocess.Popen[bytes], log_path: Path, timeout: float = 60.0) -> str:
    """The ``/mcp`` URL from the server's ``http_listening`` log line, once it is written. Raises
    ``RuntimeError`` (with the log) when the process exits first, or after ``timeout`` s (process stopped)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log_path.read_text(errors="replace").splitlines():
            if '"http_listening"' in line:
                return str(json.loads(line)["urls"][0])
        if proc.poll() is not None:
            raise RuntimeError(f"the HTTP server exited with {proc.returncode}: {log_path.read_text()[-2000:]}")
        time.sleep(_POLL_SECONDS)
    stop_process(proc)
    raise RuntimeError(f"the HTTP server did not listen within {timeout} s: {log_path.read_text()[-2000:]}")


def http_token(env: Mapping[str, str]) -> str:
    """The bearer token a server started with ``env`` requires: ``WORKFLOW_SERVER_TOKEN`` when set, else the
    one it generated in ``<WORKFLOW_SERVER_KEY_DIR>/http-token`` (read once it listens, as a user would)."""
    if env.get("WORKFLOW_SERVER_TOKEN"):
        return env["WORKFLOW_SERVER_TOKEN"]
    key_dir = Path(env.get("WORKFLOW_SERVER_KEY_DIR") or Path(env["HOME"]) / ".workflow-server")
    return (key_dir / "http-token").read_text().strip()


def stop_process(proc: subprocess.Popen[bytes]) -> int:
    """SIGTERM (the server drains), then SIGKILL after 15 s; returns the exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(15)
    return proc.returncode
