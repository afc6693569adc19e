"""Durable file writes: temp file in the same directory, fsync, rename, fsync the directory.

A reader (or a process restarted after a kill at any instant) sees the old file or the new one,
never a torn mix. A crash may leave ``<name>.<pid>.tmp`` behind; later writes overwrite it.
``read_regular`` reads a small file that may have been planted (a secret file, a workspace's token)
without ever blocking on a FIFO or a device.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["atomic_write", "fsync_dir", "read_regular"]


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically. ``durable=False`` skips the fsyncs (tests, caches)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if durable:
        fsync_dir(path.parent)


def read_regular(path: Path, limit: int = 1 << 20) -> bytes:
    """At most ``limit`` bytes of the regular file at ``path`` (symlinks followed). It is opened with
    ``O_NONBLOCK`` and checked on the descriptor, so a FIFO or a device there raises ``OSError`` at once
    instead of hanging the caller (where a signal could not interrupt it)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        chunks: list[bytes] = []
        while limit > 0 and (chunk := os.read(fd, min(limit, 65536))):
            chunks.append(chunk)
            limit -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
