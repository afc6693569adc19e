"""``bench/mcp_tool_calls.py --quick`` runs end to end (real stdio and HTTP servers) and prints its ratios."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import REPO


def test_the_mcp_tool_call_bench_runs_quick() -> None:
    completed = subprocess.run(
        [sys.executable, str(REPO / "bench" / "mcp_tool_calls.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "mcp stdio overhead per call:" in completed.stdout
    assert "ratio of medians vs native:" in completed.stdout
    assert "the SDK's stdio round-trip floor (ping)" in completed.stdout
