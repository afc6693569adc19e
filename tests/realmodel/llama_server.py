"""Run the cached llama-server on loopback, and a request-rewriting relay in front of it.

``llama_server(...)`` starts the real server built by ``llama_cache.py`` (``just real-model``) on a
free loopback port with a tool-capable chat template, waits for ``GET /health`` to answer 200 (polled
against a deadline, failing early if the process dies), and always kills it on the way out.

``rewriting_relay(...)`` is a tiny HTTP relay for the tests that must steer a tiny model: it forwards
every request to llama-server unchanged except that a JSON body's fields may be set per request
(``tool_choice: "required"`` so a call is made, a small ``max_output_tokens`` to cut one). The
engine, the wire and the model are all real; the relay only edits what the test needs and records
each request body as llama-server received it, and the status it answered.
"""

from __future__ import annotations

import json
import os
import signal
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import trio
from tests.realmodel.llama_cache import real_model

#: Fixed sampling: the server's default seed, and temperature 0 in every request the tests make.
SEED = 42
TEMPERATURE = 0.0
QWEN25 = "Qwen-Qwen2.5-7B-Instruct.jinja"
QWEN35 = "Qwen3.5-4B.jinja"
#: Qwen3.5's template opens a ``<think>`` block; SmolLM2 was never taught to close it, so every answer
#: would be reasoning only (an empty completion). A user serving a non-thinking model with it turns
#: thinking off on the server, as here.
NO_THINKING = ("--chat-template-kwargs", '{"enable_thinking": false}')
READY_SECONDS = 60.0
#: One generation thread. ggml's threads spin-wait on each other: on two cores shared with the rest of the
#: suite, ``-t 2`` measured 3.6 tokens/s against 18 tokens/s for ``-t 1`` (SmolLM2-135M, load average ~8).
THREADS = 1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LlamaServer:
    process: trio.Process
    port: int
    log_path: Path

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except FileNotFoundError:
            return ""

    def stop(self) -> None:
        """SIGSTOP: the process keeps its sockets but answers nothing."""
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)


async def wait_healthy(root: str, process: trio.Process | None, seconds: float = READY_SECONDS) -> None:
    """Poll ``GET /health`` until 200 (503 while the model loads; refused before the socket is up)."""
    async with httpx.AsyncClient(timeout=5) as client:
        with trio.move_on_after(seconds):
            while process is None or process.returncode is None:
                try:
                    if (await client.get(f"{root}/health")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                await trio.sleep(0.1)
    raise AssertionError(f"llama-server at {root} not healthy within {seconds:.0f} s")


@asynccontextmanager
async def llama_server(
    directory: Path,
    *,
    template: str = QWEN25,
    ctx: int = 8192,
    parallel: int = 1,
    port: int | None = None,
    name: str = "llama",
    extra_args: tuple[str, ...] = (),
) -> AsyncIterator[LlamaServer]:
    target = real_model()
    missing = target.missing()
    if missing:
        raise RuntimeError(f"llama-server is not built (run `just real-model`): missing {missing[0]}")
    port = port or free_port()
    log_path = directory / f"{name}.log"
    args = [
        str(target.server),
        "-m",
        str(target.model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-c",
        str(ctx),
        "-np",
        str(parallel),
        "--jinja",
        "--chat-template-file",
        str(target.template(template)),
        "-t",
        str(THREADS),
        "--no-webui",
        "--seed",
        str(SEED),
        "--temp",
        str(TEMPERATURE),
        *extra_args,
    ]
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(target.lib_dir), env.get("LD_LIBRARY_PATH")]))
    with log_path.open("wb") as log:
        process = await trio.lowlevel.open_process(args, env=env, stdin=None, stdout=log, stderr=log)
    server = LlamaServer(process, port, log_path)
    try:
        try:
            await wait_healthy(server.root, process)
        except AssertionError as exc:
            raise AssertionError(f"{exc} (exit {process.returncode}):\n{server.log()}") from None
        yield server
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGCONT)
            process.kill()
            with trio.move_on_after(10):
                await process.wait()


# --- the relay ---------------------------------------------------------------------------------------

#: Given the 0-based index of a POST with a JSON body, the fields to set in it (empty: unchanged).
Rewrite = Callable[[int, dict[str, Any]], dict[str, Any]]


@dataclass
class Exchange:
    path: str
    #: the JSON body as forwarded (None: no JSON body)
    body: dict[str, Any] | None
    #: llama-server's status (None while its answer has not started; 502: unreachable)
    status: int | None = None


@dataclass
class Relay:
    base_url: str
    seen: list[Exchange] = field(default_factory=list)
    _grew: trio.Event = field(default_factory=trio.Event)

    def record(self, exchange: Exchange) -> None:
        self.seen.append(exchange)
        self._grew.set()
        self._grew = trio.Event()

    def responses(self) -> list[Exchange]:
        """The ``POST …/responses`` exchanges so far, in order."""
        return [x for x in self.seen if x.path.endswith("/responses") and x.body is not None]

    async def wait_responses(self, count: int) -> list[Exchange]:
        """Wait until ``count`` model requests have reached the relay (answered or not)."""
        while len(self.responses()) < count:
            await self._grew.wait()
        return self.responses()


_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"content-length", b"host", b"accept-encoding"}


async def _read_request(stream: trio.SocketStream) -> tuple[str, str, list[tuple[bytes, bytes]], bytes] | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = await stream.receive_some(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    method, target, _ = lines[0].decode("latin-1").split(" ", 2)
    headers = [(k.strip().lower(), v.strip()) for k, _, v in (line.partition(b":") for line in lines[1:])]
    length = int(next((v for k, v in headers if k == b"content-length"), b"0"))
    while len(body) < length:
        chunk = await stream.receive_some(65536)
        if not chunk:
            return None
        body += chunk
    return method, target, headers, body


async def _relay_one(
    stream: trio.SocketStream, upstream: str, client: httpx.AsyncClient, rewrite: Rewrite, relay: Relay
) -> None:
    async with stream:
        request = await _read_request(stream)
        if request is None:
            return
        method, target, headers, body = request
        parsed: dict[str, Any] | None = None
        if method == "POST" and body:
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                index = sum(1 for x in relay.seen if x.body is not None and x.path == target)
                parsed.update(rewrite(index, parsed))
                body = json.dumps(parsed).encode()
        exchange = Exchange(target, parsed if isinstance(parsed, dict) else None)
        relay.record(exchange)
        forward = {k.decode("latin-1"): v.decode("latin-1") for k, v in headers if k not in _HOP}
        req = client.build_request(method, upstream + target, headers=forward, content=body)
        try:
            response = await client.send(req, stream=True)
        except httpx.TransportError as exc:
            exchange.status = 502
            message = f"relay: upstream unreachable: {exc}".encode()
            await stream.send_all(
                b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                + f"Content-Length: {len(message)}\r\n\r\n".encode()
                + message
            )
            return
        exchange.status = response.status_code
        try:
            head = [f"HTTP/1.1 {response.status_code} {response.reason_phrase}".encode()]
            head += [
                f"{k}: {v}".encode("latin-1") for k, v in response.headers.items() if k.lower().encode() not in _HOP
            ]
            head.append(b"Connection: close")
            await stream.send_all(b"\r\n".join(head) + b"\r\n\r\n")
            async for chunk in response.aiter_raw():
                await stream.send_all(chunk)
        finally:
            await response.aclose()


@asynccontextmanager
async def rewriting_relay(upstream_root: str, rewrite: Rewrite) -> AsyncIterator[Relay]:
    """A loopback relay to ``upstream_root`` (e.g. ``http://127.0.0.1:P``); yields its ``/v1`` base URL."""
    async with httpx.AsyncClient(timeout=httpx.Timeout(None)) as client, trio.open_nursery() as nursery:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        relay = Relay(base_url=f"http://127.0.0.1:{port}/v1")

        async def handler(stream: trio.SocketStream) -> None:
            try:
                await _relay_one(stream, upstream_root, client, rewrite, relay)
            except (trio.BrokenResourceError, trio.ClosedResourceError, httpx.HTTPError):
                pass  # the engine gave up on a stream (a stall retry): nothing to relay any more

        nursery.start_soon(trio.serve_listeners, handler, listeners)
        try:
            yield relay
        finally:
            nursery.cancel_scope.cancel()


#: The opening of a call in the Qwen templates' tool format. Sent as a trailing assistant message it is a
#: *prefill*: llama-server continues that message, so the output starts inside a call and the tool grammar
#: (``tool_choice: "required"``) constrains it to one of the offered tools. Without it a tiny model
#: writes prose first, which the "required" grammar allows, and the output limit ends it before any call.
CALL_OPENER: dict[str, Any] = {
    "type": "message",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "<tool_call>\n"}],
}

#: ``finish`` narrowed so a tiny model's call is short and valid: success, a 1-12 character summary
#: (the whole call is under 40 tokens).
SHORT_FINISH: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["success"]},
        "summary": {"type": "string", "minLength": 1, "maxLength": 12},
    },
    "required": ["status", "summary"],
    "additionalProperties": False,
}


def force_call(body: dict[str, Any], offer: dict[str, dict[str, Any] | None]) -> dict[str, Any]:
    """The fields that make the next answer one call of one of ``offer``'s tools (each with its parameter
    schema replaced when one is given, else as the Guild wrote it); the other tools are not offered."""
    tools = []
    for tool in body.get("tools", []):
        name = tool.get("name")
        if name in offer:
            schema = offer[name]
            tools.append({**tool, "parameters": schema} if schema is not None else tool)
    return {
        "tools": tools,
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "input": [*body.get("input", []), CALL_OPENER],
    }


def finish_after(first: int) -> Rewrite:
    """Requests before ``first`` unchanged; from then on only a short ``finish`` (bounds a run)."""

    def rewrite(index: int, body: dict[str, Any]) -> dict[str, Any]:
        return {} if index < first else force_call(body, {"finish": SHORT_FINISH})

    return rewrite


def prose_sentence(index: int, body: dict[str, Any]) -> dict[str, Any]:
    """Answer in prose and stop at the end of the first sentence. At temperature 0 SmolLM2's choice between
    prose and a call flips with any change to the prompt (the workspace path is in it), a Qwen3.5-format
    call from it is rarely valid, and its prose repeats itself to any limit (a cut-off answer is no card)."""
    return {"tool_choice": "none", "stop": [".", "!", "?"]}
