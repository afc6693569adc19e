"""A run told on the terminal as it happens: ``orchestrator run``, ``resume`` and ``demo --once``.

One line per role start and end, per tool call, and per model turn — when the request goes out (so a
long first turn, a slow prompt on a small machine, is visibly under way), each retry, and when the
answer is in, with its tokens and seconds — plus the streamed text of the turn in flight. Everything
goes to stderr; stdout keeps the result card.

Fed by the run log's listeners (``RunServices.log_listeners``) and the delta sink (``on_delta``); it
reads events, never the engine.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from orchestrator.engine.run import StreamDelta
from orchestrator.runlog.events import (
    LlmCall,
    LlmCallStart,
    LlmRetry,
    RoleFinished,
    RoleStart,
    RunEvent,
    ToolCallEvent,
)
from orchestrator.runsface.listing import task_head

__all__ = ["Narrator", "one_line"]


def one_line(text: str | None, limit: int = 90) -> str:
    """``text``'s first non-empty line cut to ``limit`` characters; `` …`` marks a cut or further lines, so a
    multi-line task or summary keeps the narrated role tree one line per node (``listing.task_head``)."""
    return task_head(text or "", limit) or ""


class Narrator:
    """Prints the run as it happens: role starts and ends, model turns, tool calls, streamed content.

    ``clock`` (seconds, monotonic) times each model turn; ``out`` is where the lines go (stderr).
    """

    def __init__(self, out: TextIO | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._out = out
        self._clock = clock
        self._streaming: str | None = None
        self._depth: dict[str, int] = {}
        self._turns: dict[str, int] = {}
        self._started: dict[str, float] = {}

    def _print(self, text: str = "", end: str = "\n") -> None:
        print(text, end=end, file=self._out or sys.stderr, flush=True)

    def _end_stream(self) -> None:
        if self._streaming is not None:
            self._print()
            self._streaming = None

    def _indent(self, role_id: str | None) -> str:
        return "  " * (self._depth.get(role_id or "", 0) + 2)

    def event(self, event: RunEvent) -> None:
        """One run-log event (a log listener: never raises for an event it does not narrate)."""
        if isinstance(event, RoleStart):
            self._end_stream()
            p = event.payload
            self._depth[p.role_id] = p.depth
            self._print(f"{'  ' * p.depth}▶ {p.role_id} starts: {one_line(p.task)}")
        elif isinstance(event, RoleFinished):
            self._end_stream()
            p = event.payload
            status = f"{p.status} ({p.error.kind})" if p.error is not None else p.status
            self._print(f"{'  ' * p.depth}■ {p.role_id} {status}: {one_line(p.summary)}")
        elif isinstance(event, LlmCallStart):
            self._end_stream()
            role_id = event.payload.role_id
            turn = self._turns[role_id] = self._turns.get(role_id, 0) + 1
            self._started[role_id] = self._clock()
            self._print(f"{self._indent(role_id)}… {role_id} turn {turn}: waiting for the model")
        elif isinstance(event, LlmRetry):
            self._end_stream()
            p = event.payload
            self._print(
                f"{self._indent(p.role_id)}! {p.role_id}: model attempt {p.attempt}/{p.attempts} failed "
                f"({p.cause}), retrying in {p.delay_seconds:g}s"
            )
        elif isinstance(event, LlmCall):
            self._end_stream()
            p = event.payload
            seconds = self._clock() - self._started.pop(p.role_id, self._clock())
            cut = ", cut off at the completion limit" if p.finish_reason == "length" else ""
            self._print(
                f"{self._indent(p.role_id)}✓ {p.role_id} turn {self._turns.get(p.role_id, 1)}: "
                f"{p.usage.prompt_tokens} prompt + {p.usage.completion_tokens} completion tokens "
                f"in {seconds:.1f}s{cut}"
            )
        elif isinstance(event, ToolCallEvent) and event.payload.tool not in ("agent", "finish"):
            self._end_stream()
            p = event.payload
            self._print(f"{self._indent(p.role_id)}· {p.role} calls {p.tool} {one_line(p.arguments, 80)}")

    def delta(self, delta: StreamDelta) -> None:
        """One streamed delta of the turn in flight (content only; reasoning is not shown)."""
        if delta.field != "content":
            return
        if delta.reset or self._streaming != delta.role_id:
            self._end_stream()
            self._streaming = delta.role_id
            self._print(f"{self._indent(delta.role_id)}✎ {delta.role_id}: ", end="")
        self._print(delta.text, end="")
