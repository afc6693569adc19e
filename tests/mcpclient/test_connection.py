"""``McpConnection`` against the real fixture server over stdio and Streamable HTTP (no mocked transport)."""

from __future__ import annotations

import sys
from pathlib import Path

import trio
from tests.mcpclient.support import FIXTURE_SERVER, http_server

from orchestrator.config.mcpservers import McpServer
from orchestrator.mcpclient.connection import McpConnection


def _stdio(**env: str) -> McpServer:
    return McpServer(command=sys.executable, args=[str(FIXTURE_SERVER)], env=env)


def _connection(server: McpServer, *, secrets: list[str] | None = None, headers: dict[str, str] | None = None):
    return McpConnection(
        "fx",
        server,
        env=dict(server.env),
        headers=headers or {},
        secrets=secrets or [],
        start_timeout=20.0,
    )


async def test_stdio_lists_tools_and_calls_them() -> None:
    connection = _connection(_stdio())
    async with trio.open_nursery() as nursery:
        assert await nursery.start(connection.run) is None
        assert {"echo", "add", "crash", "hang", "fail", "secret_env"} <= set(connection.tools)
        assert connection.tools["add"].input_schema["required"] == ["a", "b"]
        echoed = await connection.call("echo", {"text": "hello"})
        added = await connection.call("add", {"a": 2, "b": 3})
        failed = await connection.call("fail", {"reason": "because"})
        nursery.cancel_scope.cancel()
    assert echoed.kind == "success" and echoed.data == {"result": "hello"}
    assert added.kind == "success" and added.data == {"total": 5}
    assert failed.kind == "tool_error" and "failed on purpose: because" in (failed.message or "")


async def test_a_crashed_server_restarts_once_then_answers_unavailable() -> None:
    connection = _connection(_stdio())
    async with trio.open_nursery() as nursery:
        await nursery.start(connection.run)
        first = await connection.call("crash", {})
        after_restart = await connection.call("echo", {"text": "back"})
        second = await connection.call("crash", {})
        after_second = await connection.call("echo", {"text": "gone?"})
        nursery.cancel_scope.cancel()
    assert first.kind == "unavailable" and "restarted (once)" in (first.message or "")
    assert after_restart.kind == "success" and after_restart.data == {"result": "back"}
    assert connection.restarts == 1
    assert second.kind == "unavailable" and "already restarted once" in (second.message or "")
    assert after_second.kind == "unavailable" and "unavailable for the rest of this run" in (after_second.message or "")


async def test_a_server_that_dies_between_calls_is_restarted_before_the_next_call() -> None:
    connection = _connection(_stdio())
    async with trio.open_nursery() as nursery:
        await nursery.start(connection.run)
        answered = await connection.call("exit_soon", {})
        with trio.fail_after(20):
            while connection.restarts == 0:  # noqa: ASYNC110 (the restart has no public event)
                await trio.sleep(0.02)
        echoed = await connection.call("echo", {"text": "fresh"})
        nursery.cancel_scope.cancel()
    assert answered.data == {"result": "exiting"}
    assert echoed.kind == "success" and echoed.data == {"result": "fresh"}


async def test_a_hung_call_is_cancellable_and_the_server_keeps_serving() -> None:
    connection = _connection(_stdio())
    async with trio.open_nursery() as nursery:
        await nursery.start(connection.run)
        with trio.move_on_after(0.5) as scope:
            await connection.call("hang", {})
        echoed = await connection.call("echo", {"text": "still here"})
        nursery.cancel_scope.cancel()
    assert scope.cancelled_caught
    assert echoed.data == {"result": "still here"}


async def test_a_server_that_cannot_start_reports_why() -> None:
    connection = _connection(McpServer(command="/nonexistent/mcp-server"))
    async with trio.open_nursery() as nursery:
        problem = await nursery.start(connection.run)
    assert problem is not None and "'fx' could not be started" in problem


async def test_secrets_reach_the_server_but_not_its_answers() -> None:
    token = "s3cret-token-value"
    connection = _connection(_stdio(FIXTURE_TOKEN=token), secrets=[token])
    async with trio.open_nursery() as nursery:
        await nursery.start(connection.run)
        result = await connection.call("secret_env", {})
        nursery.cancel_scope.cancel()
    assert result.data == {"result": "token is <redacted>"}


async def test_a_stdio_server_gets_only_the_safe_environment_and_its_env(monkeypatch) -> None:
    monkeypatch.setenv("ORCHESTRATOR_API_KEY", "sk-should-never-reach-a-server")
    monkeypatch.setenv("KAGI_API_KEY", "kagi-should-never-reach-a-server")
    connection = _connection(_stdio(FIXTURE_TOKEN="given"))
    async with trio.open_nursery() as nursery:
        await nursery.start(connection.run)
        result = await connection.call("env_names", {})
        nursery.cancel_scope.cancel()
    names = set(result.data["result"])
    assert "FIXTURE_TOKEN" in names and "PATH" in names
    assert not {"ORCHESTRATOR_API_KEY", "KAGI_API_KEY"} & names
    assert names <= {"FIXTURE_TOKEN", "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LC_CTYPE"}


async def test_streamable_http_with_headers(tmp_path: Path) -> None:
    async with http_server(token="letmein-123") as url:
        denied = _connection(McpServer(url=url))
        allowed = _connection(McpServer(url=url), headers={"Authorization": "Bearer letmein-123"})
        async with trio.open_nursery() as nursery:
            problem = await nursery.start(denied.run)
            assert await nursery.start(allowed.run) is None
            added = await allowed.call("add", {"a": 40, "b": 2})
            nursery.cancel_scope.cancel()
    assert problem is not None and "could not be started" in problem
    assert added.data == {"total": 42}
