"""Every benchmark has a ``--quick`` mode, and ``./dev test`` runs it.

Each bench script (``bench/*.py`` and ``bench/<dir>/run.py``) runs with ``--quick`` in its own process:
it must accept the flag, exit 0 and print at least one ratio line: a number followed by ``x``
(``engine/raw per-turn ratio: 1.08x (goal <= 1.15x)``) or a line naming a ratio with its value
(``ratio with/without  0.987``). Timings are not judged here, only that the bench still works; a bench
added later without ``--quick`` fails this test.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers import REPO
from tests.slowness import budget

BENCH = REPO / "bench"
#: a printed ratio: "1.08x", "17.6x", "0.950x", or "ratio ...: 0.987"
RATIO = re.compile(r"(?<![\w.])\d+(?:\.\d+)?x\b|\bratio\b.*?\d+\.\d+", re.IGNORECASE)
#: a hang guard on a quiet machine (scaled by the run's slowness); a quick bench takes seconds when idle
QUICK_SECONDS = 170


def bench_scripts() -> list[Path]:
    return sorted([*BENCH.glob("*.py"), *BENCH.glob("*/run.py")])


def test_the_bench_list_is_complete() -> None:
    names = {p.relative_to(BENCH).as_posix() for p in bench_scripts()}
    assert {"engine_overhead.py", "checkpoint_cost.py", "log_window/run.py", "load/run.py"} <= names


@pytest.mark.slow
@pytest.mark.parametrize(
    "script",
    # each bench is its own xdist unit: they share nothing, and together they are minutes of work
    [pytest.param(p, marks=pytest.mark.xdist_group(f"bench-{p.name}-{p.parent.name}")) for p in bench_scripts()],
    ids=lambda p: p.relative_to(BENCH).as_posix(),
)
def test_bench_runs_quick_and_prints_its_ratio(script: Path) -> None:
    has_quick = "--quick" in script.read_text()
    assert has_quick, f"{script.relative_to(REPO)} has no --quick mode"
    proc = subprocess.run(
        [sys.executable, str(script), "--quick"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=budget(QUICK_SECONDS),
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{script.name} --quick exited {proc.returncode}:\n{output[-4000:]}"
    ratios = [line for line in proc.stdout.splitlines() if RATIO.search(line)]
    assert ratios, f"{script.name} --quick printed no ratio line:\n{proc.stdout[-4000:]}"
