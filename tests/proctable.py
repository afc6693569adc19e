"""The process table, read from ``/proc`` (Linux): a process's state and parent, a parent's children,
and the processes that carry a marker variable in their environment (how a test run finds what it
started, whoever re-parented it)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["children_of", "marked_pids", "pids", "proc_stat"]


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
