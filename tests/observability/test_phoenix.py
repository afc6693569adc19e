"""Optional: a real OTLP receiver, Arize Phoenix, takes the export's spans and keeps their tree.

Phoenix is not a project dependency: it lives in a tool environment outside the repository,
``~/.cache/orchestrator/phoenix-venv`` (``python3 -m venv ~/.cache/orchestrator/phoenix-venv &&
~/.cache/orchestrator/phoenix-venv/bin/pip install arize-phoenix``). Without it these tests skip, saying
so; the behaviour they check is also checked against the loopback collector (``test_sink.py``,
``test_exporttrace.py``).
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.observability.collector import closed_port
from tests.observability.test_spans import INFO, big_run
from tests.slowness import budget

from orchestrator.observability.config import ExportConfig
from orchestrator.observability.sink import SpanSink
from orchestrator.observability.spans import fold_spans

PHOENIX = Path.home() / ".cache" / "orchestrator" / "phoenix-venv" / "bin" / "phoenix"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not PHOENIX.exists(), reason=f"Arize Phoenix is not installed at {PHOENIX}"),
]


@pytest.fixture
def phoenix(tmp_path: Path) -> Iterator[str]:
    """``phoenix serve`` on free loopback ports with its own working directory; its base URL."""
    port = closed_port()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PHOENIX_WORKING_DIR": str(tmp_path / "phoenix"),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(closed_port()),
    }
    log = (tmp_path / "phoenix.log").open("wb")
    proc = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + budget(60)  # start-up takes seconds on a quiet machine
        with httpx.Client(timeout=2) as client:
            while time.monotonic() < deadline:  # until it answers its health check (or died)
                if proc.poll() is not None:
                    pytest.fail(f"phoenix exited {proc.returncode}: {(tmp_path / 'phoenix.log').read_text()[-2000:]}")
                try:
                    if client.get(f"{url}/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=0.1)
            else:
                pytest.fail(f"phoenix did not answer /healthz within {budget(60):.0f} s")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_phoenix_keeps_the_span_tree_the_export_sends(phoenix: str) -> None:
    spans = fold_spans(INFO, big_run(40))
    sink = SpanSink(ExportConfig(endpoint=f"{phoenix}/v1/traces", shutdown_timeout_seconds=15))
    sink.submit(spans)
    report = sink.close()
    assert report.dropped == 0
    stored: list[dict[str, Any]] = []
    pause = threading.Event()
    with httpx.Client(timeout=10) as client:
        for _ in range(300):  # Phoenix writes what it received in batches: until all of it is readable
            stored = client.get(f"{phoenix}/v1/projects/default/spans", params={"limit": 1000}).json()["data"]
            if len(stored) >= len(spans):
                break
            pause.wait(0.1)
    assert len(stored) == len(spans)
    ours = {f"{s.span_id:016x}": s for s in spans}
    for row in stored:
        span = ours[row["context"]["span_id"]]
        assert row["name"] == span.name
        assert row["context"]["trace_id"] == f"{span.trace_id:032x}"
        assert row["parent_id"] == (f"{span.parent_id:016x}" if span.parent_id is not None else None)
