"""The stdio wire without worker threads: the process's stdin and stdout as trio pipe streams.

The SDK's default ``stdio_server()`` wraps the standard streams in ``anyio.wrap_file``, which costs a
worker-thread round trip for every line read and two (write, flush) for every message sent. Here the
two descriptors are duplicated and served by ``trio.lowlevel.FdStream`` (non-blocking, on trio's I/O
loop), and the SDK's ``stdio_server`` is handed these two objects as its explicit streams.

Like the SDK's own claim, ``claim_stdio`` then points fd 0 at the null device and fd 1 at stderr, so a
stray ``print`` or a child process can never write into the JSON-RPC stream or steal its input;
``release`` puts both back. Reads end at EOF (the client closed stdin); a final line without a newline
is still delivered. Malformed UTF-8 is replaced, as the SDK does.

``serve_stdio`` serves any SDK ``MCPServer`` on that wire: the workflow server (``launch.run_stdio``) and
the runs face (``runsface/server.py``) both start here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Protocol

import trio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

__all__ = ["FdLineReader", "FdTextWriter", "Tap", "claim_stdio", "serve_stdio"]

_CHUNK = 1 << 16


class FdLineReader:
    """An async iterator of ``str`` lines (newline kept) read from a pipe descriptor."""

    def __init__(self, fd: int, prefix: bytes = b"") -> None:
        self._stream = trio.lowlevel.FdStream(fd)
        self._buffer = bytearray(prefix)  # bytes already read from the pipe by someone else (``firstanswer``)
        self._scanned = 0  # bytes of the buffer already known to hold no newline
        self._eof = False

    def __aiter__(self) -> FdLineReader:
        return self

    async def __anext__(self) -> str:
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                self._scanned = 0
                return line.decode("utf-8", errors="replace")
            self._scanned = len(self._buffer)
            if self._eof:
                if not self._buffer:
                    raise StopAsyncIteration
                line = bytes(self._buffer)
                self._buffer.clear()
                self._scanned = 0
                return line.decode("utf-8", errors="replace")
            chunk = await self._stream.receive_some(_CHUNK)
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True

    async def aclose(self) -> None:
        await self._stream.aclose()


class FdTextWriter:
    """``write``/``flush`` of ``str`` onto a pipe descriptor; each write is sent whole before it returns."""

    def __init__(self, fd: int) -> None:
        self._stream = trio.lowlevel.FdStream(fd)

    async def write(self, text: str) -> None:
        await self._stream.send_all(text.encode("utf-8"))

    async def flush(self) -> None:
        """Nothing is buffered here: ``write`` already handed every byte to the pipe."""

    async def aclose(self) -> None:
        await self._stream.aclose()


def claim_stdio(prefix: bytes = b"") -> tuple[FdLineReader, FdTextWriter, Callable[[], None]]:
    """The wire's reader and writer on private duplicates of fd 0 and 1, and the function that restores
    the two standard descriptors; the reader yields ``prefix`` first. Raises ``OSError`` when the
    descriptors cannot be duplicated."""
    wire_in = os.dup(0)
    wire_out = os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)

    def release() -> None:
        for saved, fd in ((saved_in, 0), (saved_out, 1)):
            try:
                os.dup2(saved, fd)
            except OSError:
                pass
            finally:
                os.close(saved)

    return FdLineReader(wire_in, prefix), FdTextWriter(wire_out), release


class Tap(Protocol):
    """Sees every incoming line, and every outgoing message before it is sent (``None``: drop it)."""

    def incoming(self, line: str) -> None: ...

    def outgoing(self, text: str) -> str | None: ...


class _TappedReader:
    def __init__(self, reader: FdLineReader, tap: Tap) -> None:
        self._reader, self._tap = reader, tap

    def __aiter__(self) -> _TappedReader:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.__anext__()
        self._tap.incoming(line)
        return line


class _TappedWriter:
    def __init__(self, writer: FdTextWriter, tap: Tap) -> None:
        self._writer, self._tap = writer, tap

    async def write(self, text: str) -> None:
        shown = self._tap.outgoing(text)
        if shown is not None:
            await self._writer.write(shown)

    async def flush(self) -> None:
        await self._writer.flush()


async def serve_stdio(server: MCPServer, *, prelude: bytes = b"", tap: Tap | None = None) -> None:
    """Serve ``server`` on this process's stdin/stdout until the client closes stdin (fd 0/1 diverted
    meanwhile, restored after). ``prelude``: input already read from fd 0, served first; ``tap`` watches
    the wire (``firstanswer.Recorder``)."""
    raw_reader, raw_writer, release = claim_stdio(prelude)
    reader: object = raw_reader if tap is None else _TappedReader(raw_reader, tap)
    writer: object = raw_writer if tap is None else _TappedWriter(raw_writer, tap)
    try:
        async with stdio_server(stdin=reader, stdout=writer) as (read_stream, write_stream):  # type: ignore[arg-type]
            lowlevel = server._lowlevel_server
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
    finally:
        release()
