"""Issue 18, problem 2 and the finished-run polls, in real Chromium against a real ``serve``.

A scripted run whose coder gets an exit 1 and an exit 127 from ``run_shell``: the sequence rows, the
labels of every tier, the operation card, the strip's chips and the inspector's transcript all badge
them (amber / red) from the server's one classifier; "returns success" is gone. Then the real shell
watches the finished run: its polls become body-less 304s.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from tests.web.harness import Shots, UiService, call, finish, turn
from tests.web.runview_page import mount, open_host


def _script() -> list[dict[str, Any]]:
    return [
        turn("lead", call("agent", role="coder", task="Run the tests")),
        turn("coder", call("run_shell", command="exit 1")),
        turn("coder", call("run_shell", command="no-such-command-xyz")),
        turn("coder", finish("The tests fail", status="error")),
        turn("lead", finish("The coder reported failing tests"), last="The tests fail"),
    ]


def _finished_run(ui_service: UiService) -> str:
    ui_service.script(_script())
    run_id = ui_service.http.post("/api/runs", json={"task": "Check the tests"}).json()["runId"]
    ui_service.run_status(run_id, "success")
    ui_service.wait_idle()
    return run_id


def test_failing_shell_calls_are_badged_everywhere(ui_service: UiService, page: Any, shots: Shots) -> None:
    run_id = _finished_run(ui_service)
    open_host(page)
    mount(page, run_id)
    page.evaluate("rvHost.view.setMode('sequence')")
    sequence = page.get_by_test_id("sequence-view")
    warn = sequence.locator(".seq-row.kind-return.sev-warn")
    fail = sequence.locator(".seq-row.kind-return.sev-fail")
    expect(warn).to_have_count(1)
    expect(warn).to_contain_text("⚠ exit 1")
    expect(fail.filter(has_text="exit 127")).to_have_count(1)
    expect(fail.filter(has_text="Coder returns error")).to_have_count(1)  # the coder's error card
    expect(sequence).not_to_contain_text("Shell returns success")
    for tier in ("friendly", "whimsical"):
        page.evaluate(f"rvHost.view.setTier('{tier}')")
        expect(warn).to_contain_text("⚠ exit 1")
        expect(sequence.locator(".seq-row.sev-fail").filter(has_text="exit 127")).to_have_count(1)
    page.evaluate("rvHost.view.setTier('detailed')")
    shots.save(page, "failures-sequence")

    warn.click()
    card = page.get_by_test_id("operation-card")
    expect(card.get_by_test_id("operation-badge")).to_have_text("⚠ exit 1")
    expect(card.get_by_test_id("operation-badge")).to_have_class("rv-badge sev-warn")
    page.keyboard.press("Escape")

    page.evaluate("rvHost.view.setMode('flow')")
    shell = page.get_by_test_id("flow-types").locator(".fg-chip.kind-tool")
    expect(shell).to_contain_text("×2")
    expect(shell).to_have_class("fg-chip kind-tool has-error")

    page.evaluate("rvHost.view.setMode('sequence')")
    sequence.locator(".seq-row.kind-call").filter(has_text="Lead delegates to Coder").click()
    page.get_by_test_id("operation-card").get_by_test_id("card-open-transcript").last.click()
    transcript = page.get_by_test_id("inspector").get_by_test_id("inspector-transcript")
    badges = transcript.get_by_test_id("transcript-badge")
    expect(badges).to_have_count(2)
    expect(badges.first).to_have_text("⚠ exit 1")
    expect(badges.last).to_have_text("✖ exit 127: command not found")
    shots.save(page, "failures-inspector")


def test_the_shell_stops_redownloading_a_finished_run(ui_service: UiService, page: Any) -> None:
    run_id = _finished_run(ui_service)
    statuses: dict[str, list[int]] = {"view": [], "flow": []}
    base = f"/api/runs/{run_id}"

    def seen(response: Any) -> None:
        path = response.url.split("://", 1)[-1].split("/", 1)[-1]
        if path == f"{base.lstrip('/')}?recent=0":  # the shell's run view poll (issue 26: no recentLog)
            statuses["view"].append(response.status)
        elif path.startswith(f"{base.lstrip('/')}/flow?since="):  # issue 26: the delta poll
            statuses["flow"].append(response.status)

    page.on("response", seen)
    page.goto(f"/#watch/{run_id}")
    expect(page.get_by_test_id("run-status")).to_have_text("Done")
    # The shell polls every second: wait (on the page's own requests) for repeated polls of each answer.
    page.wait_for_function(
        "() => performance.getEntriesByType('resource').filter((e) => e.name.includes('/flow?since=')).length >= 4"
    )
    assert statuses["view"][0] == 200 and statuses["view"][1:] and set(statuses["view"][1:]) == {304}, statuses
    # the flow: the full answer, one (tiny) delta against its cursor, then that same delta's 304 every poll
    assert statuses["flow"][:2] == [200, 200] and set(statuses["flow"][2:]) == {304}, statuses
    expect(page.get_by_test_id("run-status")).to_have_text("Done")  # still drawn from the kept answer
