"""Issue 18, problem 1: a finished run's flow view draws its whole call tree (real Chromium, real
``serve``): every instance nested under its caller, the failed branch marked, durations and the waterfall
from ``/tree`` + ``/timeline``; clicking a row opens that instance in the inspector."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect
from tests.web.harness import Shots, UiService, call, finish, turn
from tests.web.runview_page import mount, open_host


def _script() -> list[dict[str, Any]]:
    return [
        turn("lead", call("agent", role="coder", task="Run the tests")),
        turn("coder", call("run_shell", command="exit 1")),
        turn("coder", finish("The tests fail", status="error")),
        turn("lead", call("agent", role="coder", task="Try again"), last="The tests fail"),
        turn("coder", call("run_shell", command="echo fixed")),
        turn("coder", finish("Fixed"), last="fixed"),
        turn("lead", finish("All done"), last="Fixed"),
    ]


def test_a_finished_run_shows_its_call_tree_and_opens_an_instance(
    ui_service: UiService, page: Any, shots: Shots
) -> None:
    ui_service.script(_script())
    run_id = ui_service.http.post("/api/runs", json={"task": "Fix the tests"}).json()["runId"]
    ui_service.run_status(run_id, "success")
    ui_service.wait_idle()
    tree = ui_service.http.get(f"/api/runs/{run_id}/tree").json()
    lead, first, _ = tree["nodes"]
    slowest = ui_service.http.get(f"/api/runs/{run_id}/timeline").json()["slowestPath"]

    open_host(page)
    mount(page, run_id)
    view = page.get_by_test_id("call-tree")
    rows = view.get_by_test_id("call-tree-row")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_have_attribute("data-instance", lead["instanceId"])
    expect(rows.nth(1)).to_have_attribute("data-instance", first["instanceId"])
    expect(rows.nth(1)).to_contain_text("✖ error")
    expect(rows.nth(1)).to_contain_text("⚠ 1")
    expect(rows.nth(1)).to_have_class(re.compile(r"^ct-row sev-fail failed-branch\b.*\bdepth-1$"))
    expect(rows.nth(2)).to_contain_text("#2")  # the second coder instance is numbered
    expect(rows.nth(2)).not_to_have_class(re.compile(r"\bfailed-branch\b"))
    expect(rows.nth(0)).to_have_class(re.compile(r"\bfailed-branch slowest\b"))  # the lead: above a failure
    assert slowest[0] == lead["instanceId"] and len(slowest) == 2  # which coder was slower is timing
    expect(view.locator(".ct-row.slowest")).to_have_count(2)
    expect(view.locator(f'.ct-row.slowest[data-instance="{slowest[1]}"]')).to_have_count(1)
    expect(view).to_contain_text("3 instances")
    expect(view).to_contain_text("1 failed")
    shots.save(page, "calltree-finished")

    rows.nth(1).click()
    inspector = page.get_by_test_id("inspector")
    expect(inspector).to_contain_text(first["instanceId"])
    expect(inspector.get_by_test_id("inspector-transcript")).to_contain_text("The tests fail")
    page.keyboard.press("Escape")
    expect(inspector).to_have_count(0)
