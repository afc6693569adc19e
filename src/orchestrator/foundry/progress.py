"""The runner's progress line on stderr.

On a terminal one line is redrawn in place (benchmark, phase, elapsed seconds, once a second); anywhere
else each benchmark gets a start line and a result line, so a CI log stays readable.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

import trio

__all__ = ["Progress"]


class Progress:
    """``[3/10] name · phase · 12 s``; ``stream=None`` keeps quiet."""

    def __init__(self, total: int, stream: TextIO | None = sys.stderr) -> None:
        self.total = total
        self._stream = stream
        self._live = bool(stream is not None and stream.isatty())
        self._index = 0
        self._name = ""
        self._phase = ""
        self._started = 0.0
        self._width = 0

    def _write(self, text: str) -> None:
        if self._stream is None:
            return
        self._stream.write(text)
        self._stream.flush()

    def _line(self) -> str:
        elapsed = time.monotonic() - self._started
        return f"[{self._index}/{self.total}] {self._name} · {self._phase} · {elapsed:.0f} s"

    def _redraw(self) -> None:
        line = self._line()[:160]
        pad = max(0, self._width - len(line))
        self._width = len(line)
        self._write("\r" + line + " " * pad)

    def start(self, index: int, name: str) -> None:
        self._index, self._name, self._phase = index, name, "starting"
        self._started = time.monotonic()
        if self._live:
            self._redraw()
        else:
            self._write(f"[{index}/{self.total}] {name} …\n")

    def phase(self, text: str) -> None:
        if text == self._phase:
            return
        self._phase = text
        if self._live and self._name:
            self._redraw()

    def finish(self, status: str, seconds: float, reason: str | None = None) -> None:
        detail = f" — {reason}" if reason else ""
        line = f"[{self._index}/{self.total}] {self._name}: {status} ({seconds:.1f} s){detail}"
        if self._live:
            self._write("\r" + line[:160] + " " * max(0, self._width - len(line[:160])) + "\n")
            self._width = 0
        else:
            self._write(line + "\n")
        self._name = ""

    async def ticker(self) -> None:
        """Redraw once a second while a benchmark runs (terminal only); runs until cancelled."""
        if not self._live:
            return
        while True:
            await trio.sleep(1)
            if self._name:
                self._redraw()
