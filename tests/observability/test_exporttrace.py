"""``orchestrator run`` exporting live and ``orchestrator export-trace`` as real subprocesses against a
loopback OTLP/HTTP collector: the same spans both ways; clear errors for a wrong folder or no export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.test_cli_run import _config, _orchestrator
from tests.engine.harness import call, finish, turn
from tests.observability.collector import collector

SCRIPT = {
    "turns": [
        turn("lead", call("agent", role="leaf", task="x")),
        turn("leaf", finish("leaf ok")),
        turn("lead", finish("all done")),
    ]
}


def _shape(spans: list[Any]) -> list[tuple[Any, ...]]:
    return sorted(
        (s.name, s.trace_id, s.span_id, s.parent_span_id, s.start_time_unix_nano, s.end_time_unix_nano, s.status.code)
        for s in spans
    )


async def test_export_trace_sends_the_same_spans_as_the_live_export_of_the_run(tmp_path: Path, sim_for) -> None:
    async with sim_for(SCRIPT) as sim:
        config = _config(tmp_path, sim.base_url)
        with collector("record") as live:
            done = await _orchestrator(
                "run", "--workspace", str(tmp_path), *config, "--json", "go",
                env={"OTEL_EXPORTER_OTLP_ENDPOINT": live.url, "OTEL_SERVICE_NAME": "orch-test"},
            )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    run_dir = tmp_path / ".orchestration" / "runs" / json.loads(done.stdout)["runId"]
    names = sorted(s.name for s in live.spans)
    roles = ["run", "invoke_agent lead", "invoke_agent leaf"]
    assert names == sorted([*roles, *["chat sim"] * 3, *["execute_tool finish"] * 2])
    with collector("record") as again:  # a bare run id names the run in --workspace
        exported = await _orchestrator(
            "export-trace", run_dir.name, "--workspace", str(tmp_path), *config,
            env={"OTEL_EXPORTER_OTLP_ENDPOINT": again.url},
        )  # fmt: skip
    assert exported.returncode == 0, exported.stderr.decode()
    assert f"sent 8 of 8 spans of {run_dir.name}".encode() in exported.stdout
    assert _shape(again.spans) == _shape(live.spans)


async def test_export_trace_refuses_a_folder_that_is_not_a_run(tmp_path: Path) -> None:
    config = _config(tmp_path, "http://127.0.0.1:9/v1")
    done = await _orchestrator(
        "export-trace", str(tmp_path), *config, env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    )
    assert done.returncode == 2
    assert f"{tmp_path}: not a run folder (no log.jsonl)".encode() in done.stderr
    assert b"Traceback" not in done.stderr


async def test_export_trace_says_how_to_configure_the_export(tmp_path: Path) -> None:
    (tmp_path / "log.jsonl").write_text("")
    config = _config(tmp_path, "http://127.0.0.1:9/v1")
    done = await _orchestrator("export-trace", str(tmp_path), *config, env={"OTEL_SDK_DISABLED": "false"})
    assert done.returncode == 2
    assert b"no trace export configured: set OTEL_EXPORTER_OTLP_ENDPOINT" in done.stderr
