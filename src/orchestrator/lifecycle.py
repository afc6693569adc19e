"""Graceful wind-down on SIGINT/SIGTERM for a process that runs one run.

First signal: post the wind-down notice into the run (it lands in the entry role's history at the next
safe point) and give the run ``wind_down_seconds`` to finish. A second signal, or the deadline, cancels
the run scope; the last checkpoint stays on disk and the next start resumes it.

What the operator reads on stderr comes from here too (``orchestrator run`` and ``serve`` say the same):
``winding_down`` at once on the first signal, ``STOPPING_NOW`` on the second, then the outcome.
"""

from __future__ import annotations

import math
import signal
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

import trio

from orchestrator.engine.interrupts import InterruptQueue
from orchestrator.errors import ConfigError

__all__ = [
    "STOPPING_NOW",
    "WIND_DOWN_NOTICE",
    "WindDown",
    "run_with_wind_down",
    "stopped_line",
    "wind_down_seconds",
    "winding_down",
]

T = TypeVar("T")

WIND_DOWN_NOTICE = (
    "The orchestrator is shutting down. Stop starting new work: bring the run to a safe stopping point "
    "and finish with a summary of what is done and what remains, so the work can be picked up later."
)
DEFAULT_WIND_DOWN_SECONDS = 30.0
STOPPING_NOW = "stopping now: the run stops where it stands; its last checkpoint is kept"


def winding_down(run_id: str | None, seconds: float) -> str:
    """The line printed the moment the first signal arrives while a run is active."""
    subject = f"run {run_id}" if run_id else "the run"
    return (
        f"winding down: {subject} is asked to wrap up at its next step and has up to {seconds:g} s to finish; "
        "Ctrl-C again to stop it now"
    )


def stopped_line(run_id: str, how_to_resume: str) -> str:
    """The outcome when the run had to be abandoned (the deadline passed, or a second signal)."""
    return f"stopped; run {run_id} {how_to_resume}"


def wind_down_seconds(env: Mapping[str, str]) -> float:
    """``ORCHESTRATOR_WIND_DOWN_SECONDS`` (default 30): how long a signalled run may take to finish."""
    text = env.get("ORCHESTRATOR_WIND_DOWN_SECONDS", "")
    if not text:
        return DEFAULT_WIND_DOWN_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"ORCHESTRATOR_WIND_DOWN_SECONDS={text!r}: expected a non-negative number of seconds")
    return value


class WindDown:
    """What happened: whether a signal arrived and whether the run had to be cancelled."""

    def __init__(self) -> None:
        self.signalled = False
        self.cancelled = False


async def run_with_wind_down(
    body: Callable[[], Awaitable[T]],
    interrupts: InterruptQueue,
    *,
    seconds: float,
    say: Callable[[str], None] | None = None,
) -> tuple[T | None, WindDown]:
    """Run ``body`` under the signal policy above; returns its result (``None`` if cancelled). ``say``
    gets ``winding_down`` the moment the first signal arrives and ``STOPPING_NOW`` on the second.

    An exception from ``body`` propagates unchanged (not wrapped in an exception group).
    """
    status = WindDown()
    result: T | None = None
    failure: Exception | None = None
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            run_scope = trio.CancelScope()

            async def watch() -> None:
                await signals.__anext__()
                status.signalled = True
                interrupts.post_notice(WIND_DOWN_NOTICE)
                if say is not None:
                    say(winding_down(None, seconds))
                with trio.move_on_after(seconds):
                    await signals.__anext__()
                    if say is not None:
                        say(STOPPING_NOW)
                run_scope.cancel()

            nursery.start_soon(watch)
            with run_scope:
                try:
                    result = await body()
                except Exception as exc:  # re-raised below, outside the nursery
                    failure = exc
            status.cancelled = run_scope.cancelled_caught
            nursery.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result, status
