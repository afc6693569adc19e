"""One sidecar process from the starting side (``observability.sidecarchild``): it says it is ready, sends
its report when its input closes and ends by itself; one that died is seen to have ended."""

from __future__ import annotations

import os
import signal

from orchestrator.observability.config import ExportConfig
from orchestrator.observability.report import ExportReport
from orchestrator.observability.sidecarchild import SidecarChild
from orchestrator.observability.sidecarwire import Config, FromSidecar, Ready, Report

CONFIG = ExportConfig(endpoint="http://127.0.0.1:9/v1/traces", shutdown_timeout_seconds=0.2)


def test_it_is_ready_reports_when_its_input_closes_and_ends_by_itself() -> None:
    frames: list[FromSidecar] = []
    child = SidecarChild(frames.append)
    assert child.write([Config(CONFIG)])
    assert child.ready.wait(60)
    child.close_input()
    assert child.end(60)
    assert child.process.returncode == 0
    assert isinstance(frames[0], Ready)
    assert [f.report for f in frames if isinstance(f, Report)] == [ExportReport(submitted=0, exported=0)]


def test_a_child_that_died_is_ended_and_a_write_to_it_fails_without_raising() -> None:
    child = SidecarChild(lambda frame: None)
    os.kill(child.pid, signal.SIGKILL)
    assert child.ended.wait(60)  # its output closed: how the sink learns it died
    assert child.end(0)  # it ended already: nothing to kill
    assert child.process.returncode == -signal.SIGKILL
    assert not child.write([Config(CONFIG)])  # its pipe is closed: refused, never raised
