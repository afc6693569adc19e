"""``/ws/stream`` limits against a real ``serve``: the socket cap (1013), the first-message and idle
timeouts (1008), pings that keep a live socket open; plus the message handling as a pure function."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio
from tests.helpers import serve_script
from tests.service.server import Server, serve_process, write_config
from tests.slowness import budget
from trio_websocket import ConnectionClosed, WebSocketConnection, open_websocket_url

from orchestrator.errors import ConfigError
from orchestrator.service.hub import StreamHub
from orchestrator.service.stream import StreamLimits, handle_message, stream_limits_from_env

ROLES = {"lead": ["finish"]}
LIMITS = {
    "ORCHESTRATOR_WS_MAX_SOCKETS": "2",
    "ORCHESTRATOR_WS_FIRST_MESSAGE_SECONDS": "0.5",
    "ORCHESTRATOR_WS_IDLE_SECONDS": "1.0",
}


def test_messages() -> None:
    subscription = StreamHub().subscribe()
    assert handle_message('{"type":"ping"}', subscription) == '{"type":"pong"}'
    assert json.loads(handle_message('{"type":"subscribe","runId":"r1"}', subscription) or "") == {
        "type": "subscribed",
        "runId": "r1",
    }
    assert subscription.run_id == "r1"
    for junk in ("", "nope", "[1]", '{"type":"subscribe","runId":7}', b"\xff", "[" * 10_000):
        assert handle_message(junk, subscription) is None
    assert subscription.run_id == "r1"


def test_limits_from_the_environment() -> None:
    assert stream_limits_from_env({}) == StreamLimits()
    assert stream_limits_from_env(LIMITS) == StreamLimits(max_sockets=2, first_message_seconds=0.5, idle_seconds=1.0)
    for name, bad in [("ORCHESTRATOR_WS_MAX_SOCKETS", "1.5"), ("ORCHESTRATOR_WS_IDLE_SECONDS", "-1"),
                      ("ORCHESTRATOR_WS_FIRST_MESSAGE_SECONDS", "soon")]:  # fmt: skip
        with pytest.raises(ConfigError, match=name):
            stream_limits_from_env({name: bad})


async def _ping(ws: WebSocketConnection) -> None:
    await ws.send_message('{"type":"ping"}')
    with trio.fail_after(budget(5)):
        assert json.loads(await ws.get_message()) == {"type": "pong"}


async def _closed_with(ws: WebSocketConnection, seconds: float = 5) -> int | None:
    with trio.fail_after(budget(seconds)):
        try:
            while True:
                await ws.get_message()
        except ConnectionClosed as closed:
            return closed.reason.code


async def test_socket_cap_and_timeouts(tmp_path: Path) -> None:
    async with serve_script({"turns": []}) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, ROLES)
        async with serve_process(tmp_path, guild=guild, deployment=deployment, env=LIMITS) as server:
            await _cap(server)
            await _silent_socket_is_closed(server)
            await _pinging_socket_stays(server)


async def _cap(server: Server) -> None:
    auth = server.auth_headers
    async with open_websocket_url(server.ws_url, extra_headers=auth) as first:
        async with open_websocket_url(server.ws_url, extra_headers=auth) as second:
            await _ping(first)
            await _ping(second)
            async with open_websocket_url(server.ws_url, extra_headers=auth) as third:
                assert await _closed_with(third) == 1013
        # one slot freed: a new socket is served again
        async with open_websocket_url(server.ws_url, extra_headers=auth) as again:
            await _ping(again)


async def _silent_socket_is_closed(server: Server) -> None:
    async with open_websocket_url(server.ws_url, extra_headers=server.auth_headers) as silent:
        started = trio.current_time()
        assert await _closed_with(silent) == 1008
        assert trio.current_time() - started >= 0.4
    async with open_websocket_url(server.ws_url, extra_headers=server.auth_headers) as once:
        await _ping(once)  # the first message came in time; then silence past the idle limit
        assert await _closed_with(once) == 1008


async def _pinging_socket_stays(server: Server) -> None:
    async with open_websocket_url(server.ws_url, extra_headers=server.auth_headers) as live:
        deadline = trio.current_time() + 3.0  # three idle limits
        while trio.current_time() < deadline:
            await _ping(live)
            await trio.sleep(0.3)  # the client's own ping pace, well inside the 1 s idle limit
        await _ping(live)
        assert live.closed is None
