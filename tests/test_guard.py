"""The suite's own guard rails: the slowness factor, the deadline that cancels a hung trio test, and the
processes a session leaves behind (marked or adopted) killed at its end."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import trio
from tests import slowness as slowness_module
from tests.guard import RUN_VARIABLE, DeadlineExceeded, _run_within
from tests.helpers import REPO, process_gone
from tests.slowness import FACTOR_VARIABLE, MAX_FACTOR, budget, slowness


def test_the_factor_is_at_least_one_at_most_the_cap_and_scales_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slowness_module, "_load_per_core", lambda: 0.1)
    monkeypatch.setenv(FACTOR_VARIABLE, "0.4")  # a machine faster than the reference keeps the written budget
    assert slowness() == 1.0 and budget(10) == 10
    monkeypatch.setenv(FACTOR_VARIABLE, "2.5")
    assert slowness() == 2.5 and budget(10) == 25
    monkeypatch.setenv(FACTOR_VARIABLE, "50")
    assert slowness() == MAX_FACTOR
    monkeypatch.setenv(FACTOR_VARIABLE, "not a number")
    assert slowness() == 1.0
    monkeypatch.setattr(slowness_module, "_load_per_core", lambda: 3.0)  # a busy machine now counts too
    assert slowness() == 3.0


def test_a_hung_trio_function_is_cancelled_and_the_next_run_starts_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FACTOR_VARIABLE, "1")
    monkeypatch.setattr(slowness_module, "_load_per_core", lambda: 0.0)
    unwound: list[str] = []

    async def hangs() -> None:
        try:
            await trio.sleep_forever()
        finally:
            unwound.append("finally ran")

    with pytest.raises(DeadlineExceeded, match=r"did not finish within 0 s .*cancelled"):
        _run_within(0.05, "hangs")(hangs)
    assert unwound == ["finally ran"]

    async def quick() -> str:
        await trio.lowlevel.checkpoint()
        return "ok"

    assert trio.run(quick) == "ok"  # no run was left behind
    assert _run_within(5, "quick")(quick) == "ok"


ORPHAN_TEST = """
import os
import pathlib
import subprocess
import time


def test_leaves_a_process_without_the_marker_behind() -> None:
    pid_file = pathlib.Path(os.environ["ORPHAN_PID_FILE"])
    # a background process of a shell that ends at once, with an empty environment: no marker, no parent
    subprocess.run(["sh", "-c", f"env -i sh -c 'echo $$ > {pid_file}; exec sleep 120' &"], check=True)
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text().strip()):
        assert time.monotonic() < deadline
        time.sleep(0.01)
"""


def test_a_process_without_the_marker_whose_parent_died_is_found_and_killed(tmp_path: Path) -> None:
    """The controller adopts orphans (a child subreaper): one that carries no marker is still named in the
    summary and killed when the session ends."""
    (tmp_path / "test_orphan.py").write_text(ORPHAN_TEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    pid_file = tmp_path / "orphan.pid"
    env = {
        **os.environ,
        RUN_VARIABLE: uuid.uuid4().hex,  # a run of its own: its end must not touch this run's processes
        "ORPHAN_PID_FILE": str(pid_file),
        "PYTHONPATH": str(REPO),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.guard", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 processes outlived their tests and were killed" in done.stdout
    pid = int(pid_file.read_text())
    assert f"{pid} (sleep 120)" in done.stdout
    assert process_gone(pid)
