"""How much slower than a quiet machine this test run is, and hang budgets scaled by it.

A budget that guards against a hang (``trio.fail_after``, a subprocess ``timeout=``, a Playwright wait)
must not fail a correct test because the machine is busy. Tests therefore write ``budget(10)`` for
"10 s on a quiet machine", and the run multiplies it by one factor:

* a CPU calibration (a fixed pure-Python loop, best of three) against the same loop on a quiet
  2-core reference machine, measured once per run by the process that starts pytest and handed to
  xdist workers through :data:`FACTOR_VARIABLE`;
* the one-minute load average per core at the moment the budget is taken, since load changes over a
  run and every xdist worker competes for the same cores.

The factor is never below 1 (a fast machine keeps the written budget) and at most :data:`MAX_FACTOR`
(past that a "slow" test is a hung one). ``ORCHESTRATOR_TEST_SLOWNESS`` sets it by hand.
"""

from __future__ import annotations

import os
import time

__all__ = ["FACTOR_VARIABLE", "MAX_FACTOR", "budget", "calibrate", "slowness"]

#: Where the measured (or hand-set) factor travels from the pytest controller to its workers.
FACTOR_VARIABLE = "ORCHESTRATOR_TEST_SLOWNESS"
MAX_FACTOR = 8.0
#: Seconds :func:`_calibration_loop` takes on the quiet reference machine (2 cores, CPython 3.11).
REFERENCE_SECONDS = 0.016


def _calibration_loop() -> float:
    started = time.perf_counter()
    total = 0
    for i in range(400_000):
        total += i * i % 7
    elapsed = time.perf_counter() - started
    assert total >= 0
    return elapsed


def calibrate() -> float:
    """The CPU factor now: best of three calibration loops against the reference."""
    best = min(_calibration_loop() for _ in range(3))
    return best / REFERENCE_SECONDS


def _load_per_core() -> float:
    try:
        with open("/proc/loadavg") as stat:
            one_minute = float(stat.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 1.0
    return one_minute / max(1, len(os.sched_getaffinity(0)))


def slowness() -> float:
    """The factor budgets are multiplied by, from the run's calibration and the current load."""
    try:
        measured = float(os.environ.get(FACTOR_VARIABLE, "1"))
    except ValueError:
        measured = 1.0
    return min(MAX_FACTOR, max(1.0, measured, _load_per_core()))


def budget(seconds: float) -> float:
    """``seconds`` on a quiet machine, scaled to this one (see the module docstring)."""
    return seconds * slowness()
