"""Make crashes boring: SIGKILL ``orchestrator run`` / ``resume`` at random instants (``CRASH_KILLS``
times: 12 in ``./dev test``, 50 with ``just crash``), resume each time, and require the uncrashed run's
card and a consistent run folder.

``just crash N`` runs it with N kills; see docs/crash-harness.md.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from tests.crash.harness import CrashHarness
from tests.crash.scenario import crash_script
from tests.helpers import serve_script

#: ``./dev test`` keeps a representative 12 kills; ``just crash N`` (default 50) sets CRASH_KILLS.
KILLS = int(os.environ.get("CRASH_KILLS", "12"))
SEED = int(os.environ.get("CRASH_SEED", "20260101"))
#: Crash runs at a time (each in its own workspace; the processes mostly wait on the sim and on sleeps).
PARALLEL = int(os.environ.get("CRASH_PARALLEL", "2"))

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the harness reads /proc (Linux)")


@pytest.mark.timeout(0 if KILLS > 100 else 180)
async def test_runs_killed_at_random_instants_resume_to_the_reference_card(tmp_path: Path) -> None:
    async with serve_script(crash_script()) as sim:
        harness = CrashHarness(
            tmp_path, sim, target=KILLS, seed=SEED, parallel=PARALLEL, log=lambda line: print(line, flush=True)
        )
        report = await harness.run()
    print(report.summary(), flush=True)
    assert not report.failures, "\n".join(report.failures[:50])
    assert len(report.kills) == KILLS
    if KILLS >= 50:  # the kills must have landed in every interesting phase
        phases = report.phases()
        assert phases["model-stream"] and phases["tool"] and phases["checkpoint-write"], report.summary()
