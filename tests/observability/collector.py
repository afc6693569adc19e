"""A tiny OTLP/HTTP collector on loopback for the export tests and the overhead bench: it records the
spans it is sent, or answers 500, or holds each request (up to ``hold_seconds``) before answering —
until ``release()``, so a test never waits the hold out.

``python -m tests.observability.collector MODE [HOLD_SECONDS]`` serves one in a process of its own (the
bench's, so its work is not charged to the process measured): it prints its base URL, then serves until
its standard input closes."""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

__all__ = ["Collector", "closed_port", "collector"]

Mode = Literal["record", "fail", "slow"]


class Collector:
    def __init__(self, mode: Mode, hold_seconds: float) -> None:
        self.mode = mode
        self.hold_seconds = hold_seconds
        self.spans: list[Span] = []
        self.headers: list[dict[str, str]] = []
        self.requests = 0
        #: the spans each request carried, in the order received (also when answering 500)
        self.batch_sizes: list[int] = []
        self.in_flight = 0
        self.received = threading.Event()
        self._release = threading.Event()
        self._lock = threading.Lock()
        self.url = ""

    def release(self) -> None:
        self._release.set()

    def handle(self, body: bytes, headers: dict[str, str]) -> int:
        with self._lock:
            self.requests += 1
            self.in_flight += 1
            self.headers.append(headers)
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        spans = [span for resource in request.resource_spans for scope in resource.scope_spans for span in scope.spans]
        with self._lock:
            self.batch_sizes.append(len(spans))
        self.received.set()
        try:
            if self.mode == "fail":
                return 500
            if self.mode == "slow":
                self._release.wait(self.hold_seconds)
            with self._lock:
                self.spans.extend(spans)
            return 200
        finally:
            with self._lock:
                self.in_flight -= 1


@contextmanager
def collector(mode: Mode = "record", hold_seconds: float = 5.0) -> Iterator[Collector]:
    """Serve a collector on a free loopback port for the block; its base URL is ``.url``."""
    state = Collector(mode, hold_seconds)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status = state.handle(body, {k.lower(): v for k, v in self.headers.items()})
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="test-collector", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release()
        server.shutdown()
        server.server_close()
        thread.join(5)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


if __name__ == "__main__":
    mode: Mode = sys.argv[1]  # type: ignore[assignment]
    with collector(mode, float(sys.argv[2]) if len(sys.argv) > 2 else 5.0) as served:
        print(served.url, flush=True)
        sys.stdin.read()  # until the parent closes it (or dies)
