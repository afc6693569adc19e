"""Issue 18, problems 1 and 8: the flow view draws the run's whole call tree (real Chromium, real ``serve``),
finished and live: every instance nested under its caller, the failed branch marked, durations and the
waterfall from ``/tree`` + ``/timeline`` on a time axis, each instance's context track from ``/context``;
clicking a row opens that instance in the inspector."""

from __future__ import annotations

import re
from itertools import pairwise
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


FILLER = "y" * 3000


def _live_script() -> list[dict[str, Any]]:
    """The coder's prompts grow past the pressure threshold (25,000 of 28,672), a request is rejected as
    too long (the backstop compacts in place), then it asks two questions: the run stays live meanwhile."""
    coder = {"expect": {"systemContains": "You are the coder."}}
    return [
        turn("lead", call("agent", role="coder", task="Find the port"), usage={"promptTokens": 900}),
        turn("coder", call("run_shell", command=f"printf '{FILLER}'"), usage={"promptTokens": 12000}),
        turn("coder", call("run_shell", command=f"printf '{FILLER}'"), usage={"promptTokens": 25000}),
        turn("coder", call("run_shell", command="true"), usage={"promptTokens": 26000}),
        {**coder, "fail": {"contextExceeded": True, "promptTokens": 40000}},
        turn(
            "coder",
            call("ask_human", question="Which port?"),
            last="context window exceeded",
            usage={"promptTokens": 6000},
        ),
        turn("coder", call("ask_human", question="And the host?"), last="8080", usage={"promptTokens": 6500}),
        turn("coder", finish("Port 8080 on localhost"), last="localhost", usage={"promptTokens": 7000}),
        turn("lead", finish("Found it"), last="Port 8080", usage={"promptTokens": 1200}),
    ]


def _question(ui_service: UiService, text: str) -> dict[str, Any]:
    return ui_service.wait_for(
        lambda: next((q for q in ui_service.questions() if q.get("question") == text), None), what=text
    )


def test_a_live_run_shows_its_call_tree_and_context_track_while_running(
    ui_service: UiService, page: Any, shots: Shots
) -> None:
    """Issue 18, problems 1 and 8: the call tree of a LIVE run (running badges, durations counting up, the
    in-flight instance highlighted, rows updated in place), each instance's context track against its
    budget with the pressure point and the compaction marked; once finished, the waterfall's time axis."""
    ui_service.script(_live_script())
    run_id = ui_service.http.post("/api/runs", json={"task": "Find the port"}).json()["runId"]
    first = _question(ui_service, "Which port?")

    open_host(page)
    mount(page, run_id)
    view = page.get_by_test_id("call-tree")
    rows = view.get_by_test_id("call-tree-row")
    expect(rows).to_have_count(2)
    expect(view).to_have_class(re.compile(r"\bcompact\b"))
    expect(view).to_have_attribute("open", "")
    lead, coder = rows.nth(0), rows.nth(1)
    expect(coder.locator(".ct-status.ct-badge")).to_have_text("running")
    expect(lead.locator(".ct-status.ct-badge")).to_have_text("running")
    expect(coder).to_have_class(re.compile(r"\bin-flight\b"))  # waiting on its question
    expect(lead).not_to_have_class(re.compile(r"\bin-flight\b"))
    expect(view).to_contain_text("2 running")
    # The coder's context track: 12,000 → 26,000 tokens against 28,672, the pressure point, the
    # rejection and the compaction marked; its peak in the row.
    track = coder.get_by_test_id("context-track")
    expect(track.locator("text.ctx-compacted")).to_have_count(1)
    expect(track.locator("text.ctx-pressure")).to_have_count(1)
    expect(track.locator("text.ctx-rejected")).to_have_count(1)
    expect(track.locator("line.ctx-budget")).to_have_count(1)
    expect(coder.locator(".ct-ctx-peak")).to_have_text("91%")  # 26,000 of 28,672
    expect(track).to_have_attribute("aria-label", re.compile(r"peak 26,000 prompt tokens \(91%\), budget 28,672"))
    context = ui_service.json(f"/api/runs/{run_id}/context")
    assert [m["kind"] for m in context["tracks"][1]["marks"]] == ["pressure", "rejected", "compacted"]
    # The running coder's duration counts up between refreshes.
    before = coder.locator(".ct-dur").inner_text()
    page.wait_for_function(
        "([el, text]) => el.textContent !== text", arg=[coder.locator(".ct-dur").element_handle(), before]
    )
    shots.save(page, "calltree-live")

    # Keyed rows: the next refresh (more operations) updates the same elements in place.
    page.evaluate("() => document.querySelectorAll('[data-testid=call-tree-row]').forEach((r) => { r.__probe = 1; })")
    ops = ui_service.json(f"/api/runs/{run_id}/flow")["operationsTotal"]
    ui_service.http.post("/api/answer", json={"id": first["id"], "answer": "8080"})
    second = _question(ui_service, "And the host?")
    page.wait_for_function(
        "(n) => (document.querySelector('[data-testid=call-tree-row]:nth-child(2)').title || '') !== '' &&"
        " window.rvHost.stats.work.at(-1).ops > n",
        arg=ops,
    )
    expect(coder.locator(".ct-ctx-peak")).to_have_text("91%")
    expect(track.locator("polyline.ctx-line")).to_have_count(1)
    page.wait_for_function(
        "() => { const t = document.querySelector('[data-testid=call-tree-row]:nth-child(2) .ct-cost');"
        " return t && /\\b5 turns\\b/.test(t.textContent); }"
    )
    assert page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=call-tree-row]')].every((r) => r.__probe === 1)"
    )

    # Refreshed at most about once a second however often the poll (every 250 ms here) runs.
    starts = page.evaluate(
        "() => performance.getEntriesByType('resource').filter((e) => /\\/tree$/.test(e.name)).map((e) => e.startTime)"
    )
    assert len(starts) >= 2 and all(b - a >= 900 for a, b in pairwise(starts)), starts

    ui_service.http.post("/api/answer", json={"id": second["id"], "answer": "localhost"})
    ui_service.run_status(run_id, "success")
    ui_service.wait_idle()
    expect(view).not_to_have_class(re.compile(r"\bcompact\b"))
    expect(coder.locator(".ct-status")).to_have_text("success")
    expect(coder).not_to_have_class(re.compile(r"\bin-flight\b"))
    axis = view.get_by_test_id("call-tree-axis")
    expect(axis).to_be_visible()
    ticks = axis.locator(".ct-tick")
    expect(ticks.first).to_have_text("0")
    labels = ticks.all_inner_texts()[1:]
    assert labels and all(re.fullmatch(r"\d+ ms|\d+(\.\d{1,3})? s|\d+ min \d\d s", t) for t in labels)
    expect(coder.locator(".ct-bar")).to_be_visible()
    timeline = ui_service.json(f"/api/runs/{run_id}/timeline")
    tree = ui_service.json(f"/api/runs/{run_id}/tree")
    assert [r["instanceId"] for r in timeline["rows"]] == [n["instanceId"] for n in tree["nodes"]]
    expect(lead).to_have_attribute("data-instance", tree["nodes"][0]["instanceId"])
    expect(lead.locator(".ct-dur")).to_have_text(re.compile(r"^\d+(\.\d{3})? (ms|s)$"))
    assert page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=call-tree-row]')].every((r) => r.__probe === 1)"
    )
    shots.save(page, "calltree-context-track")

    page.set_viewport_size({"width": 1024, "height": 700})  # fits: nothing runs off the right edge
    expect(coder.locator(".ct-bar")).to_be_visible()
    assert page.evaluate("() => { const t = document.querySelector('[data-testid=call-tree]');"
                         " return t.scrollWidth <= t.clientWidth + 1; }")  # fmt: skip
    shots.save(page, "calltree-1024")

    view.get_by_test_id("call-tree-head").click()  # collapsible; the choice is kept across refreshes
    expect(rows.first).to_be_hidden()
    view.get_by_test_id("call-tree-head").press("Enter")
    expect(rows.first).to_be_visible()
