"""Stop in a real browser: the Watch screen's Stop… asks first, then the run's sleeping command is gone, the
run reads Cancelled within a second of the click, and the next queued task starts. A stopped or failed run
offers the next step — Retry (the same task, a new run) and Continue — on Watch and in the result modal."""

from __future__ import annotations

import time

from playwright.sync_api import Page, expect
from tests.helpers import SLEEPER, process_gone
from tests.slowness import budget
from tests.web.harness import Shots, UiService, call, finish, turn


def _open(page: Page, route: str) -> None:
    """Load the page afresh on ``#route``: runs that ended before the load never pop up a result modal."""
    page.goto(f"/#{route}")
    page.reload()


def test_stop_on_a_live_run_cancels_it_and_the_next_task_starts(
    page: Page, ui_service: UiService, shots: Shots
) -> None:
    ui_service.script(
        [
            turn("lead", call("agent", role="coder", task="wait for it")),
            turn("coder", call("run_shell", command=SLEEPER)),
            turn("lead", finish("The second task is done."), last="second task"),
            turn("lead", finish("Retried."), last="first task: sleep"),
        ]
    )
    pid_file = ui_service.workspace / "sleeper.pid"
    pid_file.unlink(missing_ok=True)
    page.goto("/")
    page.get_by_test_id("compose-task").fill("first task: sleep")
    page.get_by_test_id("compose-submit").click()
    run_id = ui_service.active_run_id()
    queued = ui_service.http.post("/api/queue", json={"task": "second task"}).json()
    pid = ui_service.wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), what="the sleeping command")

    expect(page.get_by_test_id("watch-run-id")).to_have_text(run_id)
    page.get_by_test_id("watch-stop").click()
    modal = page.get_by_test_id("stop-modal")
    expect(modal).to_be_visible()
    expect(modal.get_by_test_id("stop-cancel")).to_be_focused()  # the safe choice has the focus
    expect(modal.get_by_test_id("stop-task")).to_have_text("first task: sleep")
    shots.save(page, "stop-confirm")
    modal.get_by_test_id("stop-cancel").click()  # "Keep running" keeps it running
    expect(modal).to_be_hidden()
    assert ui_service.json(f"/api/runs/{run_id}")["status"] == "running"

    page.get_by_test_id("watch-stop").click()
    clicked = time.monotonic()
    modal.get_by_test_id("stop-confirm").click()
    expect(page.get_by_test_id("watch-status")).to_have_attribute("data-status", "cancelled")
    shown = time.monotonic() - clicked
    ui_service.wait_for(lambda: process_gone(int(pid)), what=f"the command's process {pid} to end")
    gone = time.monotonic() - clicked
    assert shown < budget(1.0), f"the Cancelled status took {shown:.2f} s to show"  # 0.14-0.26 s measured
    assert gone < budget(1.0), f"the command outlived the stop by {gone:.2f} s"
    expect(page.get_by_test_id("watch-status")).to_have_text("Cancelled")
    expect(page.get_by_test_id("watch-run-id")).to_have_text(run_id)  # pinned: the stopped run stays on screen
    expect(page.get_by_test_id("watch-stop")).to_be_hidden()
    expect(page.get_by_test_id("watch-interrupt")).to_be_hidden()
    expect(page.get_by_test_id("watch-next-retry")).to_be_visible()
    expect(page.get_by_test_id("watch-result-error")).to_have_text("the operator stopped the run (from the web UI)")
    popped = page.get_by_test_id("result-modal").get_by_test_id("result-run-id").all_inner_texts()
    assert run_id not in popped  # this page stopped it: no pop-up (the next task's result may have one)
    shots.save(page, "stopped")

    # The queue moves on: the second task runs to its end.
    second = ui_service.wait_for(
        lambda: next((i for i in ui_service.queue() if i["id"] == queued["id"] and i.get("runId")), None),
        what="the queued task to start",
    )
    ui_service.run_status(second["runId"], "success")
    ui_service.wait_idle()  # nothing runs: Retry below starts at once rather than queueing
    _open(page, f"watch/{second['runId']}")
    expect(page.get_by_test_id("watch-status")).to_have_attribute("data-status", "success")
    (stopped,) = [i for i in ui_service.queue() if i.get("runId") == run_id]
    assert stopped["status"] == "cancelled"
    events = ui_service.json(f"/api/runs/{run_id}/log", params={"limit": 500})["events"]
    assert events[-1]["type"] == "run_stopped" and events[-1]["payload"]["by"] == "ui"

    # The stopped run's next step: Continue… opens compose continuing it; Retry runs its task again.
    _open(page, f"watch/{run_id}")
    page.get_by_test_id("watch-next-continue").click()
    expect(page.get_by_test_id("compose-continuation")).to_contain_text(run_id)
    _open(page, f"watch/{run_id}")
    page.get_by_test_id("watch-next-retry").click()
    expect(page.get_by_test_id("retry-sent")).to_contain_text(f"Retrying {run_id} as ")
    expect(page.get_by_test_id("watch-run-id")).not_to_have_text(run_id)
    retried = page.get_by_test_id("watch-run-id").inner_text()
    view = ui_service.run_status(retried, "success")
    assert view["task"] == "first task: sleep"
    ui_service.wait_idle()


def test_a_failed_run_offers_retry_and_continue_in_the_result_modal(page: Page, ui_service: UiService) -> None:
    ui_service.script([turn("lead", fail={"status": 400, "message": "refused"}, reusable=True, last="doomed")])
    page.goto("/#compose")
    expect(page.get_by_test_id("compose-mode")).to_have_attribute("data-mode", "start")  # polled: baseline taken
    run_id = ui_service.http.post("/api/runs", json={"task": "doomed task"}).json()["runId"]
    result = page.get_by_test_id("result-modal")
    expect(result).to_be_visible()
    expect(result.get_by_test_id("result-run-id")).to_have_text(run_id)
    expect(result.get_by_test_id("result-next-retry")).to_be_visible()
    result.get_by_test_id("result-next-continue").click()
    expect(result).to_be_hidden()
    expect(page.get_by_test_id("compose-continuation")).to_contain_text(run_id)
    ui_service.wait_idle()
    page.goto(f"/#watch/{run_id}")
    expect(page.get_by_test_id("watch-status")).to_have_attribute("data-status", "error")
    expect(page.get_by_test_id("watch-next-continue")).to_be_visible()
    page.get_by_test_id("watch-next-retry").click()
    expect(page.get_by_test_id("retry-sent")).to_contain_text(f"Retrying {run_id} as ")
    ui_service.wait_idle()
    runs = [r for r in ui_service.runs() if r["task"] == "doomed task"]
    assert len(runs) == 2 and all(r["status"] == "error" for r in runs)
