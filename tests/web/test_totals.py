"""Issue 18, problem 4: past 1,000 operations the strip still describes the whole run.

A synthetic run of about 2,000 operations (the bench's log writer) with one short ``reviewer`` delegation
and its single ``read_file`` at the very start, so both fall outside the default flow window. The windowed
poll leaves them out of its operations; the strip's chips must still show them, and every chip's count
must be the server's whole-run total, not the window's share.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from playwright.sync_api import expect
from tests.helpers import REPO
from tests.web.harness import Shots, UiService
from tests.web.runview_page import mount, open_host

RUN_ID = "run-20260101-000004"
EVENTS = 4_100
EARLY = "2026-01-01T00:00:00.010Z"  # between the orchestrator's first reply and its delegation to the planner


def _synthetic() -> Any:
    spec = importlib.util.spec_from_file_location(
        "bench_totals_synthetic", REPO / "bench" / "log_window" / "synthetic.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _early_review() -> list[dict[str, Any]]:
    """A delegation to a reviewer that reads one file, as the engine logs it."""
    lead = {"role": "orchestrator", "roleId": "orchestrator-0-1"}
    reviewer = {"role": "reviewer", "roleId": "reviewer-1-900"}
    usage = {"promptTokens": 300, "completionTokens": 20, "totalTokens": 320}
    events = [
        (
            "tool_call",
            {**lead, "tool": "agent", "arguments": json.dumps({"role": "reviewer", "task": "Read the notes"})},
        ),
        (
            "role_start",
            {
                **reviewer,
                "depth": 1,
                "task": "Read the notes",
                "parent": "orchestrator",
                "parentRoleId": "orchestrator-0-1",
            },
        ),
        ("llm_call_start", reviewer),
        ("llm_call", {**reviewer, "messageCount": 2, "usage": usage, "sentFrom": 0, "sent": []}),
        ("tool_call", {**reviewer, "tool": "read_file", "arguments": json.dumps({"path": "NOTES.md"})}),
        (
            "tool_result",
            {
                **reviewer,
                "tool": "read_file",
                "kind": "success",
                "result": {"kind": "success", "data": {"content": "notes\n"}},
            },
        ),
        (
            "role_finished",
            {**reviewer, "depth": 1, "status": "success", "summary": "Read them", "parent": "orchestrator"},
        ),
        (
            "tool_result",
            {
                **lead,
                "tool": "agent",
                "kind": "success",
                "result": {"kind": "success", "data": {"status": "success", "summary": "Read them"}},
            },
        ),
    ]
    return [{"timestamp": EARLY, "type": kind, "payload": payload} for kind, payload in events]


def _write_run(workspace: Path) -> None:
    log = _synthetic().write_synthetic_run(workspace, RUN_ID, EVENTS)
    lines = log.path.read_text().splitlines(keepends=True)
    assert json.loads(lines[3])["type"] == "llm_call"  # the orchestrator's first reply; its delegation follows
    injected = [json.dumps(event) + "\n" for event in _early_review()]
    log.path.write_text("".join(lines[:4] + injected + lines[4:]))


def _chip_count(page: Any, kind: str, name: str) -> int:
    chip = page.get_by_test_id("flow-types").locator(f".fg-chip.kind-{kind}", has_text=name)
    expect(chip).to_have_count(1)
    return int(chip.locator(".fg-chip-count").inner_text().lstrip("×"))


def test_the_strip_counts_the_whole_run_past_the_window(ui_service: UiService, page: Any, shots: Shots) -> None:
    _write_run(ui_service.workspace)
    flow = ui_service.json(f"/api/runs/{RUN_ID}/flow")
    assert flow["operationsTotal"] > 1_000 and flow["operationsOmitted"] > 0
    in_window = {p["role"] for p in flow["participants"]}
    assert "reviewer" not in in_window and "read_file" not in in_window  # the window really cut them
    totals = {(t["kind"], t["name"]): t["count"] for t in flow["totals"]}
    shell_in_window = sum(
        1 for op in flow["operations"] if op["kind"] == "call" and op["destination"].startswith("tool:run_shell:")
    )
    assert totals[("tool", "run_shell")] > shell_in_window

    open_host(page)
    mount(page, RUN_ID)  # the default, windowed poll
    page.wait_for_selector("[data-testid=flow-types] .fg-chip")
    assert _chip_count(page, "tool", "Shell") == totals[("tool", "run_shell")]
    assert _chip_count(page, "role", "Reviewer") == totals[("role", "reviewer")] == 1
    assert _chip_count(page, "tool", "Read file") == totals[("tool", "read_file")] == 1
    assert _chip_count(page, "role", "Worker") == totals[("role", "worker")]
    shots.save(page, "totals-whole-run")
