"""``routes.stream``: ``/ws/stream`` in-process — a ping gets its pong, a subscription its ack, and a socket
past the cap is closed with 1013 (timeouts and shutdown over a real socket: ``tests/service/test_stream.py``)."""

from __future__ import annotations

import json
from pathlib import Path

from quart.testing import QuartClient
from quart.testing.connections import WebsocketDisconnectError
from tests.service.inprocess import BEARER, inprocess_app

from orchestrator.service.stream import StreamLimits


def _leaves(group: BaseExceptionGroup[WebsocketDisconnectError]) -> list[WebsocketDisconnectError]:
    found: list[WebsocketDisconnectError] = []
    for exc in group.exceptions:
        found += _leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc]
    return found


async def _close_code(client: QuartClient) -> object:
    """The close code a socket opened now gets before any message (the test client raises it)."""
    codes: list[object] = []
    try:
        async with client.websocket("/ws/stream", headers=BEARER) as socket:
            await socket.receive()
    except* WebsocketDisconnectError as group:
        codes += [exc.args[0] for exc in _leaves(group)]
    return codes[0] if codes else None


async def test_ping_subscribe_and_the_socket_cap(tmp_path: Path) -> None:
    async with (
        inprocess_app(tmp_path, limits=StreamLimits(max_sockets=1)) as (_, client),
        client.websocket("/ws/stream", headers=BEARER) as first,
    ):
        await first.send('{"type":"ping"}')
        assert json.loads(await first.receive()) == {"type": "pong"}
        await first.send('{"type":"subscribe","runId":"run-20240501-100000"}')
        assert json.loads(await first.receive()) == {"type": "subscribed", "runId": "run-20240501-100000"}
        assert await _close_code(client) == 1013
