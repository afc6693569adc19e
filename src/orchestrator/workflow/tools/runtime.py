"""Process-level services the tool handlers share: JSON-lines logging and the reloading corpus cache.

Nothing here is global: ``server.build_state`` creates one ``JsonLog`` and one ``CorpusCache`` per server.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import msgspec

__all__ = ["MAX_LOG_VALUE", "CorpusCache", "JsonLog", "corpus_signature", "cut_values"]

MAX_LOG_VALUE = 8 * 1024


def cut_values(value: Any, limit: int = MAX_LOG_VALUE) -> Any:
    """``value`` with every string longer than ``limit`` cut (and marked) — nested containers included."""
    if isinstance(value, str):
        return value if len(value) <= limit else f"{value[:limit]}…[cut {len(value) - limit} chars]"
    if isinstance(value, dict):
        return {k: cut_values(v, limit) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [cut_values(v, limit) for v in value]
    return value


class JsonLog:
    """One JSON object per line on stderr (never stdout: stdout is the MCP wire)."""

    def __init__(self, stream: TextIO | None = None, *, clock: Callable[[], float] = time.time) -> None:
        self._stream = stream
        self._clock = clock
        self._encoder = msgspec.json.Encoder()

    def _emit(self, level: str, msg: str, fields: dict[str, Any]) -> None:
        record = {"ts": round(self._clock(), 3), "level": level, "msg": msg, **cut_values(fields)}
        try:
            line = self._encoder.encode(record)
        except (TypeError, ValueError, msgspec.EncodeError):  # e.g. a lone surrogate in an argument
            fixed = {k: v if k in ("ts", "level", "msg") else ascii(v) for k, v in record.items()}
            line = self._encoder.encode(fixed)
        stream = self._stream or sys.stderr
        try:
            stream.write(line.decode() + "\n")
            stream.flush()
        except (OSError, ValueError):
            pass

    def info(self, msg: str, **fields: Any) -> None:
        self._emit("info", msg, fields)

    def warn(self, msg: str, **fields: Any) -> None:
        self._emit("warn", msg, fields)

    def error(self, msg: str, **fields: Any) -> None:
        self._emit("error", msg, fields)


def corpus_signature(root: Path) -> str:
    """A cheap fingerprint of every file under ``root`` (relative path, size, mtime); ``""`` if missing."""
    digest = hashlib.blake2b(digest_size=16)
    found = False
    stack = [str(root)]
    while stack:
        current = stack.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=True):
                    stack.append(entry.path)
                    continue
                st = entry.stat(follow_symlinks=True)
            except OSError:
                continue
            found = True
            digest.update(f"{entry.path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest() if found else ""


class CorpusCache:
    """Holds the loaded corpus and reloads it when the files under ``root`` change.

    The signature is recomputed at most once per ``interval`` seconds (monotonic clock), so a burst of calls
    costs one directory walk; an edit shows up on the first call after the interval as a new corpus (and
    therefore as version drift in sessions). ``loader(root)`` must be pure; its exceptions propagate.
    """

    def __init__(
        self,
        root: Path,
        loader: Callable[[Path], Any],
        *,
        interval: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
        on_reload: Callable[[str], None] | None = None,
    ) -> None:
        self.root = root
        self._loader = loader
        self._interval = interval
        self._monotonic = monotonic
        self._on_reload = on_reload
        self._value: Any = None
        self._signature: str | None = None
        self._checked_at = float("-inf")
        self.generation = 0
        self._lock = threading.Lock()  # a background preload and the first call never load twice

    def get(self) -> Any:
        """The current corpus, reloading first if the files changed since the last load."""
        with self._lock:
            return self._get()

    def _get(self) -> Any:
        now = self._monotonic()
        if self._value is None or now - self._checked_at >= self._interval:
            self._checked_at = now
            signature = corpus_signature(self.root)
            if self._value is None or signature != self._signature:
                self._value = self._loader(self.root)
                self._signature = signature
                self.generation += 1
                if self._on_reload is not None:
                    self._on_reload(signature)
        return self._value
