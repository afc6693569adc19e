"""``/ws/stream``: the live token stream (the socket protocol and limits are ``service.stream``)."""

from __future__ import annotations

from quart import Blueprint, websocket

from orchestrator.service.core import Service
from orchestrator.service.stream import StreamLimits, serve_socket

__all__ = ["stream_blueprint"]


def stream_blueprint(service: Service, limits: StreamLimits) -> Blueprint:
    """The route; the open-socket count lives in this closure, not in a global: at most
    ``limits.max_sockets`` at once, one more is accepted and closed with 1013 (try again)."""
    stream = Blueprint("stream", __name__)
    open_sockets = 0

    @stream.websocket("/ws/stream")
    async def live_stream() -> None:
        nonlocal open_sockets
        if open_sockets >= limits.max_sockets:
            await websocket.accept()
            await websocket.close(1013, "too many live streams; try again later")
            return
        open_sockets += 1
        try:
            await serve_socket(service, limits)
        finally:
            open_sockets -= 1

    return stream
