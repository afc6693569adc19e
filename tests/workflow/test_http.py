"""``orchestrator mcp --transport http`` (``workflow/http.py``): the guard in front of ``/mcp`` and the
unauthenticated probes, against a real server process; the guard's rules as pure functions.

The tool suite itself runs over HTTP through the parametrised ``mcp`` fixture (every ``test_mcp_*`` module);
two processes sharing one workspace are in ``test_http_processes.py``.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from tests.slowness import budget
from tests.workflow.conftest import REPO, McpProcess

from orchestrator.workflow.http import HttpGuard, guard_from_env, is_loopback
from orchestrator.workflow.serverconfig import load_workflow_settings

TOKEN = "s3cret-token-for-tests"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpProcess]:
    """One HTTP server with ``WORKFLOW_SERVER_TOKEN`` set (the client sends it)."""
    server = McpProcess(
        tmp_path_factory.mktemp("guarded"), transport="http", token=TOKEN, env={"WORKFLOW_SERVER_TOKEN": TOKEN}
    ).start()
    try:
        yield server
    finally:
        server.stop()


def base(server: McpProcess) -> str:
    assert server.url is not None
    return server.url.removesuffix("/mcp")


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def post_mcp(server: McpProcess, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(server.url or "", json=INIT, headers={**HEADERS, **headers}, timeout=30)


def test_official_client_with_the_token_calls_tools(guarded: McpProcess) -> None:
    assert guarded.ok("health_check").parsed["status"] == "healthy"
    index = guarded.ok("start_session", workflow_id="bug-fix").parsed["session_index"]
    assert guarded.ok("get_workflow_status", session_index=index).parsed["status"] == "active"


def test_health_and_ready_answer_without_the_token(guarded: McpProcess) -> None:
    health = httpx.get(base(guarded) + "/health", headers={"x-request-id": "probe-1"}, timeout=30)
    assert health.status_code == 200 and health.json() == {"status": "ok"}
    assert health.headers["x-request-id"] == "probe-1"
    ready = httpx.get(base(guarded) + "/ready", timeout=30)
    assert ready.status_code == 200
    assert ready.json() == {
        "status": "ready",
        "checks": {"workflowDir": True, "sessionKeyWritable": True, "workspaceDir": True},
    }
    assert httpx.post(base(guarded) + "/health", timeout=30).status_code == 405


@pytest.mark.parametrize("authorization", [None, "Bearer wrong", f"Basic {TOKEN}", "Bearer", f"Bearer {TOKEN}x"])
def test_mcp_without_the_right_token_is_401(guarded: McpProcess, authorization: str | None) -> None:
    reply = post_mcp(guarded, {"authorization": authorization} if authorization else {})
    assert reply.status_code == 401
    assert reply.json()["error"] == "unauthorized" and "WORKFLOW_SERVER_TOKEN" in reply.json()["message"]
    assert reply.headers["www-authenticate"].startswith("Bearer")
    assert TOKEN not in reply.text


def test_the_right_token_gets_through(guarded: McpProcess) -> None:
    reply = post_mcp(guarded, {"authorization": f"Bearer {TOKEN}"})
    assert reply.status_code == 200 and reply.json()["result"]["serverInfo"]["name"] == "workflow-server"


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "null", "http://localhost.evil.example:1", "https://127.0.0.1:1"]
)
def test_a_foreign_origin_is_403_even_with_the_token(guarded: McpProcess, origin: str) -> None:
    reply = post_mcp(guarded, {"authorization": f"Bearer {TOKEN}", "origin": origin})
    assert reply.status_code == 403 and reply.json()["error"] == "forbidden_origin"


def test_the_servers_own_origin_is_accepted(guarded: McpProcess) -> None:
    own = base(guarded)
    reply = post_mcp(guarded, {"authorization": f"Bearer {TOKEN}", "origin": own})
    assert reply.status_code == 200


def test_a_foreign_host_is_403(guarded: McpProcess) -> None:
    reply = post_mcp(guarded, {"authorization": f"Bearer {TOKEN}", "host": "evil.example"})
    assert reply.status_code == 403 and reply.json()["error"] == "forbidden_host"


def test_other_paths_are_404_json(guarded: McpProcess) -> None:
    reply = httpx.get(base(guarded) + "/nope", timeout=30)
    assert reply.status_code == 404
    body = reply.json()
    assert body["error"] == "not_found" and "/mcp" in body["message"] and body["requestId"]
    assert reply.headers["x-request-id"] == body["requestId"]


def assert_official_client_refused(url: str) -> None:
    """The official Streamable HTTP client, sending no token, cannot even initialize."""
    import trio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    async def attempt() -> None:
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as s:
            await s.initialize()

    with pytest.raises(BaseExceptionGroup) as caught:
        trio.run(attempt)
    assert caught.group_contains(MCPError, depth=None), repr(caught.value)  # the SDK reports the 401 generically


def test_a_client_without_the_token_is_refused(guarded: McpProcess) -> None:
    assert_official_client_refused(guarded.url or "")


def test_on_loopback_without_a_configured_token_one_is_generated_printed_once_and_required(
    spawn_mcp: Callable[..., McpProcess],
) -> None:
    server = spawn_mcp(transport="http")  # no WORKFLOW_SERVER_TOKEN, 127.0.0.1
    token_file = server.key_dir / "http-token"
    token = token_file.read_text().strip()
    assert len(token) >= 43 and stat.S_IMODE(token_file.stat().st_mode) == 0o600
    said = [line for line in server.stderr().splitlines() if token in line]
    assert len(said) == 1 and said[0].startswith("orchestrator mcp: ") and f"Bearer {token}" in said[0]
    assert_official_client_refused(server.url or "")
    assert post_mcp(server, {}).status_code == 401
    assert server.ok("health_check").parsed["status"] == "healthy"  # the official client, with the token
    again = spawn_mcp(transport="http", env={"WORKFLOW_SERVER_KEY_DIR": str(server.key_dir)})
    assert again.token == token  # a restart keeps it
    assert post_mcp(again, {"authorization": f"Bearer {token}"}).status_code == 200


def test_the_token_can_be_turned_off_on_loopback_only(spawn_mcp: Callable[..., McpProcess], tmp_path: Path) -> None:
    server = spawn_mcp(transport="http", env={"WORKFLOW_SERVER_NO_TOKEN": "1"})
    assert post_mcp(server, {}).status_code == 200
    assert "THE TOKEN IS OFF" in server.stderr() and not (server.key_dir / "http-token").exists()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO / "src"),
        "WORKFLOW_WORKSPACE": str(tmp_path),
        "WORKFLOW_SERVER_NO_TOKEN": "1",
        "WORKFLOW_SERVER_TOKEN": TOKEN,
    }
    wide = subprocess.run(
        [sys.executable, "-m", "orchestrator", "mcp", "--transport", "http", "--host", "0.0.0.0", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=budget(120),
        stdin=subprocess.DEVNULL,
    )
    assert wide.returncode == 2 and "WORKFLOW_SERVER_NO_TOKEN is accepted on a loopback bind only" in wide.stderr


def test_a_short_configured_token_is_refused(tmp_path: Path) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO / "src"),
        "WORKFLOW_WORKSPACE": str(tmp_path),
        "WORKFLOW_SERVER_TOKEN": "a",
    }
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "mcp", "--transport", "http", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=budget(120),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "WORKFLOW_SERVER_TOKEN has 1 characters; use at least 16" in done.stderr


def test_ready_is_503_naming_the_failing_check(spawn_mcp: Callable[..., McpProcess], tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the key directory's parent should be")
    server = spawn_mcp(
        transport="http",
        token=TOKEN,
        env={"WORKFLOW_SERVER_KEY_DIR": str(blocker / "keys"), "WORKFLOW_SERVER_TOKEN": TOKEN},
    )
    ready = httpx.get(base(server) + "/ready", timeout=30)
    assert ready.status_code == 503
    assert ready.json()["status"] == "not-ready" and ready.json()["checks"]["sessionKeyWritable"] is False


# ------------------------------------------------------------------------------------------ pure rules


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("127.1.2.3", True),
        ("0.0.0.0", False),
        ("192.168.1.5", False),
        ("example.com", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def _settings(host: str) -> object:
    return load_workflow_settings({"WORKFLOW_WORKSPACE": "/tmp", "HOST": host}, require_workspace=False)


def test_a_bind_beyond_loopback_needs_the_token() -> None:
    with pytest.raises(ValueError, match="WORKFLOW_SERVER_TOKEN"):
        guard_from_env(_settings("0.0.0.0"), {})  # type: ignore[arg-type]
    wide = guard_from_env(_settings("0.0.0.0"), {"WORKFLOW_SERVER_TOKEN": TOKEN})  # type: ignore[arg-type]
    assert wide.hosts is None and wide.host_allowed("lb.internal:8080")
    listed = guard_from_env(
        _settings("0.0.0.0"),
        {
            "WORKFLOW_SERVER_TOKEN": TOKEN,  # type: ignore[arg-type]
            "WORKFLOW_SERVER_ALLOWED_HOSTS": "mcp.example.org",
        },
    )
    assert listed.host_allowed("mcp.example.org:443") and not listed.host_allowed("evil.example")


def test_guard_rules() -> None:
    guard = HttpGuard(
        token="abc", hosts=frozenset({"127.0.0.1", "localhost"}), origins=frozenset({"https://ide.example"})
    )
    assert guard.token_ok("Bearer abc") and guard.token_ok("bearer abc") and not guard.token_ok("Bearer abd")
    assert guard.origin_allowed("http://127.0.0.1:9", "127.0.0.1:9", "http")
    assert guard.origin_allowed("https://ide.example", "127.0.0.1:9", "http")
    assert not guard.origin_allowed("http://127.0.0.1:10", "127.0.0.1:9", "http")
    assert not guard.origin_allowed("http://evil.example", "evil.example", "http")
    assert guard.host_allowed("[::1]:5") is False and guard.host_allowed("localhost:5")
