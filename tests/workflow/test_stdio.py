"""The thread-free stdio wire: lines across chunk boundaries, a last line without a newline, EOF,
malformed UTF-8, and writes that arrive whole."""

from __future__ import annotations

import os

import trio

from orchestrator.workflow.stdio import FdLineReader, FdTextWriter


async def test_lines_split_across_writes_arrive_whole_and_eof_ends_the_iteration() -> None:
    read_fd, write_fd = os.pipe()
    reader = FdLineReader(read_fd)
    big = "x" * 200_000  # larger than one pipe buffer and one read chunk

    async def feed() -> None:
        writer = FdTextWriter(write_fd)
        for piece in ['{"a": 1', '}\n{"b":', f' "{big}"}}\n', "tail without newline"]:
            await writer.write(piece)
            await trio.lowlevel.checkpoint()
        await writer.flush()
        await writer.aclose()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(feed)
        lines = [line async for line in reader]
    await reader.aclose()
    assert lines == ['{"a": 1}\n', f'{{"b": "{big}"}}\n', "tail without newline"]


async def test_malformed_utf8_is_replaced_not_fatal() -> None:
    read_fd, write_fd = os.pipe()
    os.write(write_fd, b"ok \xff\xfe\n")
    os.close(write_fd)
    reader = FdLineReader(read_fd)
    assert [line async for line in reader] == ["ok \ufffd\ufffd\n"]
    await reader.aclose()
