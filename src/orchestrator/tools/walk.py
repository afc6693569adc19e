"""Bounded, contained tree walks for the search tools, run in a worker thread that can be stopped.

A walk never follows a directory symlink, never yields a file whose (symlink-resolved) location is
outside the workspace or under the top-level ``.orchestration``, never enters ``.orchestration``, and
stops after ``max_entries`` directory entries (``Walk.exhausted`` then says so).
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import trio

from orchestrator.tools.paths import display_path, is_bookkeeping

__all__ = ["Walk", "in_worker"]

T = TypeVar("T")

#: Directory entries one walk may visit before it stops (and reports it).
MAX_ENTRIES = 200_000


async def in_worker(work: Callable[[threading.Event], T]) -> T:
    """Run ``work(stop)`` in a worker thread.

    Cancellation: the await returns at once (the thread is abandoned) and ``stop`` is set, which the
    walk checks between entries, so the thread winds down shortly after.
    """
    stop = threading.Event()
    try:
        return await trio.to_thread.run_sync(work, stop, abandon_on_cancel=True)
    finally:
        stop.set()


@dataclass
class Walk:
    """One walk over ``start`` (canonical, inside ``root``); ``skip_dir(rel, name)`` prunes folders."""

    root: str
    stop: threading.Event
    skip_dir: Callable[[str, str], bool]
    max_entries: int = MAX_ENTRIES
    visited: int = 0
    exhausted: bool = False

    def files(self, start: str) -> Iterator[tuple[str, str, int]]:
        """Yield ``(rel, real, size)`` for each regular file below ``start``, names in sorted order."""
        stack: list[Iterator[os.DirEntry[str]]] = []
        listing = self._list(start)
        if listing is not None:
            stack.append(iter(listing))
        while stack:
            if self.stop.is_set():
                return
            entry = next(stack[-1], None)
            if entry is None:
                stack.pop()
                continue
            self.visited += 1
            if self.visited > self.max_entries:
                self.exhausted = True
                return
            rel = display_path(self.root, entry.path)
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not is_bookkeeping(rel) and not self.skip_dir(rel, entry.name):
                        sub = self._list(entry.path)
                        if sub is not None:
                            stack.append(iter(sub))
                    continue
                found = self._file(entry, rel)
            except OSError:
                continue
            if found is not None:
                yield found

    def _list(self, directory: str) -> list[os.DirEntry[str]] | None:
        try:
            with os.scandir(directory) as scan:
                return sorted(scan, key=lambda e: e.name)
        except OSError:
            return None

    def _file(self, entry: os.DirEntry[str], rel: str) -> tuple[str, str, int] | None:
        real = entry.path
        if entry.is_symlink():
            real = os.path.realpath(entry.path)
            inside = real.startswith(self.root.rstrip(os.sep) + os.sep)
            if not inside or is_bookkeeping(display_path(self.root, real)):
                return None
        info = os.stat(real)
        if not stat.S_ISREG(info.st_mode):
            return None
        return rel, real, info.st_size
