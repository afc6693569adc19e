"""What the read-path benchmark measures with: CPU time of a process, the machine's CPU pressure, a
timed GET, and the millisecond format of its report lines. Also used by ``bench/load/run.py`` and
``bench/perimeter_cost.py``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_pressure() -> float | None:
    """Linux PSI: total microseconds some task waited for a CPU (``None`` where unavailable)."""
    try:
        line = Path("/proc/pressure/cpu").read_text().splitlines()[0]
        return float(line.rsplit("total=", 1)[1])
    except (OSError, IndexError, ValueError):
        return None


def pressure_note(before: float | None, seconds: float) -> str:
    """How contended the machine's CPUs were since ``before`` (``cpu_pressure()``), for context."""
    after = cpu_pressure()
    if before is None or after is None or seconds <= 0:
        return "CPU pressure: unknown"
    share = (after - before) / 1e6 / seconds
    quiet = "quiet" if share < 0.1 else "busy: timings are noisy, compare ratios over several runs"
    return f"CPU pressure (PSI 'some') during this section: {share:.0%} of the time ({quiet})"


async def timed_get(client: httpx.AsyncClient, url: str) -> tuple[float, httpx.Response]:
    start = time.perf_counter()
    response = await client.get(url)
    elapsed = time.perf_counter() - start
    if response.status_code != 200:
        raise RuntimeError(f"GET {url}: HTTP {response.status_code}: {response.text[:200]}")
    return elapsed, response


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.2f} ms"
