"""The process table, read from ``/proc`` (Linux): a process's state and parent, a parent's children,
and the processes that carry a marker variable in their environment (how a test run finds what it
started, whoever re-parented it); and adopting orphans (a child subreaper) and reaping them."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["children_of", "marked_pids", "pids", "proc_stat", "reap", "set_child_subreaper"]

_PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 36, 37


def proc_stat(pid: int) -> tuple[str, int] | None:
    """``(state, ppid)`` of a process, or ``None`` once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1])


def pids() -> Iterator[int]:
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        if entry.isdigit():
            yield int(entry)


def children_of(parent: int) -> set[int]:
    return {pid for pid in pids() if (stat := proc_stat(pid)) is not None and stat[1] == parent}


def marked_pids(variable: str, value: str) -> set[int]:
    """Live processes (not zombies: their environ reads empty) whose environment has ``variable=value``."""
    marker = f"{variable}={value}".encode()
    found = set()
    for pid in pids():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            found.add(pid)
    return found


def set_child_subreaper(on: bool) -> bool:
    """Make this process a child subreaper (orphaned descendants are re-parented to it rather than to
    PID 1), or stop; returns the previous setting. ``OSError`` where ``prctl`` refuses (not Linux)."""
    libc = ctypes.CDLL(None, use_errno=True)
    previous = ctypes.c_int(0)
    libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(previous), 0, 0, 0)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
    return bool(previous.value)


def reap(pid: int) -> bool:
    """Reap ``pid`` if it has exited (never blocks); whether it was reaped now."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return bool(done)
