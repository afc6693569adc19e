"""Issue 18, "Build": a replay — a scrubber that redraws the run view as it was at any operation (real
Chromium, real ``serve``), and the acceptance bound: no long task over 50 ms while a run of more than 1,000
operations replays at full speed, ending on the live model's final state."""

from __future__ import annotations

import os
from typing import Any

from playwright.sync_api import expect
from tests.web.harness import Shots, UiService, call, finish, turn
from tests.web.runview_page import mount, open_host
from tests.web.test_perf_2000 import _bench_module

from orchestrator.flow.replay import REPLAY_TAIL

RUN_ID = "run-20260101-000003"
#: Four events per worker turn, two operations per turn: about 1,100 operations.
EVENTS = 2_250
LONG_TASK_MS = 50.0


def _script() -> list[dict[str, Any]]:
    return [
        turn("lead", call("agent", role="coder", task="Run the tests")),
        turn("coder", call("run_shell", command="exit 1")),
        turn("coder", call("run_shell", command="echo fixed")),
        turn("coder", finish("Fixed"), last="fixed"),
        turn("lead", finish("All done"), last="Fixed"),
    ]


def test_replay_scrubs_a_finished_run_back_to_its_live_chain(ui_service: UiService, page: Any, shots: Shots) -> None:
    """Issue 18, problem 1 (a finished run's graph is empty): its replay redraws the chains that were
    live at any operation; keys step through them."""
    ui_service.script(_script())
    run_id = ui_service.http.post("/api/runs", json={"task": "Fix the tests"}).json()["runId"]
    ui_service.run_status(run_id, "success")
    ui_service.wait_idle()
    total = ui_service.json(f"/api/runs/{run_id}/flow")["operationsTotal"]
    assert total == 8  # root→lead, lead→coder, two shell calls and returns, coder→lead, lead→root

    open_host(page)
    mount(page, run_id)
    status, caption = page.get_by_test_id("run-status"), page.get_by_test_id("now-caption")
    expect(status).to_have_text("success")
    graph = page.get_by_test_id("flow-graph")
    expect(graph.locator('[data-pid="role:coder:1"]')).to_have_count(0)  # finished: the chains are gone

    page.get_by_test_id("replay-open").click()
    bar, scrubber = page.get_by_test_id("replay-bar"), page.get_by_test_id("replay-scrubber")
    expect(bar).to_be_visible()
    expect(scrubber).to_be_focused()
    expect(page.get_by_test_id("replay-open")).to_be_hidden()
    expect(caption).to_contain_text(f"Replay · operation 1 of {total}")
    scrubber.press("ArrowRight")
    # operation 2: the lead has just delegated, so the coder is in flight on the main stack
    expect(caption).to_contain_text(f"Replay · operation 2 of {total}")
    expect(status).to_have_text("running")
    expect(graph.locator('.fg-node.active[data-pid="role:coder:1"]')).to_have_count(1)
    expect(graph.locator('.fg-edge.in-flight[data-op="op-2"]')).to_have_count(1)
    expect(page.get_by_test_id("replay-position")).to_contain_text(f"Operation 2 of {total} · Lead")
    shots.save(page, "replay-op2-coder-in-flight")

    scrubber.press("ArrowRight")  # op 3: the coder calls the shell
    expect(graph.locator('[data-pid="tool:run_shell:1"]')).to_have_count(1)
    scrubber.press("ArrowRight")  # op 4: the shell answers exit 1
    expect(graph.locator('.fg-edge.sev-warn[data-op="op-4"]')).to_have_count(1)
    scrubber.press("ArrowLeft")
    scrubber.press("ArrowLeft")
    expect(caption).to_contain_text(f"Replay · operation 2 of {total}")
    expect(graph.locator('[data-pid="tool:run_shell:1"]')).to_have_count(0)
    page.get_by_test_id("replay-forward").click()
    expect(caption).to_contain_text(f"operation 3 of {total}")
    page.get_by_test_id("replay-back").click()
    expect(caption).to_contain_text(f"operation 2 of {total}")

    page.get_by_test_id("replay-speed").select_option("full")
    page.get_by_test_id("replay-play").click()
    expect(caption).to_contain_text(f"Replay · operation {total} of {total}")
    expect(page.get_by_test_id("replay-play")).to_have_text("Play")  # it stops at the end
    expect(status).to_have_text("success")
    expect(page.get_by_test_id("call-tree")).to_be_visible()  # the last frame is the finished run
    shots.save(page, "replay-end")

    page.get_by_test_id("replay-exit").click()
    expect(bar).to_be_hidden()
    expect(caption).not_to_contain_text("Replay")
    expect(page.get_by_test_id("replay-open")).to_be_focused()


def _without_now(model: dict[str, Any]) -> dict[str, Any]:
    """``model`` without what depends on the wall clock: a finished run's calls that never returned count
    their elapsed seconds up to ``now`` (the request's time), which differs between two requests."""
    returned = {op["source"] for op in model["operations"] if op["kind"] == "return"}
    operations = [
        {**op, "metrics": {**op["metrics"], "elapsedSeconds": None}}
        if op["kind"] == "call" and op["destination"] not in returned
        else op
        for op in model["operations"]
    ]
    return {**model, "operations": operations}


def _oversubscription() -> float:
    """How much more work the machine has than it can run: 1.0 while the one-minute load fits twice its
    cores (this test's browser and server count too), else load / (2 × cores). A long task is wall-clock
    time, so on a machine shared this much the bound is scaled by it (and the print says so); on an idle
    machine, as in CI, the bound is exactly 50 ms."""
    return max(1.0, os.getloadavg()[0] / (2 * (os.cpu_count() or 1)))


def test_a_1000_operation_run_replays_at_full_speed_without_long_tasks(ui_service: UiService, page: Any) -> None:
    """Issue 18, acceptance: no long task over 50 ms while a 1,000-operation run replays at full speed;
    the last frame is the live model's final state."""
    _bench_module().write_synthetic_run(ui_service.workspace, RUN_ID, EVENTS)
    live = ui_service.json(f"/api/runs/{RUN_ID}/flow?window={REPLAY_TAIL}")
    total = live["operationsTotal"]
    assert total > 1_000, total

    open_host(page)
    # polls keep arriving during the replay; the tail-sized window stands for the shell's 304s of a
    # finished run (it keeps the parsed answer), so the page parses no 1,000-operation model each second
    mount(page, RUN_ID, interval_ms=1000, flow_query=f"?window={REPLAY_TAIL}")
    expect(page.get_by_test_id("run-status")).to_have_text("success")
    page.get_by_test_id("replay-open").click()
    expect(page.get_by_test_id("now-caption")).to_contain_text(f"Replay · operation 1 of {total}")
    page.get_by_test_id("replay-speed").select_option("full")
    started = page.evaluate("performance.now()")
    busy = _oversubscription()
    page.get_by_test_id("replay-play").click()
    page.wait_for_function(
        "(n) => { const r = rvHost.view.replayState; return r.at === n && !r.playing && r.frame; }",
        arg=total,
        timeout=180_000,
    )
    ended = page.evaluate("performance.now()")
    long_tasks = [t for t in page.evaluate("rvHost.stats.longTasks") if t["at"] + t["ms"] >= started]
    seconds = (ended - started) / 1000
    busy = max(busy, _oversubscription())
    bound = LONG_TASK_MS * busy
    print(
        f"\nreplayed {total} operations at full speed in {seconds:.1f} s ({total / seconds:.0f} frames/s); "
        f"long tasks {[round(t['ms']) for t in long_tasks]}; bound {bound:.0f} ms (machine oversubscribed ×{busy:.1f})"
    )
    assert all(t["ms"] <= bound for t in long_tasks), long_tasks

    final = page.evaluate("rvHost.view.replayState.frame")
    assert final["status"] == "success" and final["operationsTotal"] == total
    assert _without_now(final) == _without_now(ui_service.json(f"/api/runs/{RUN_ID}/flow?window={REPLAY_TAIL}"))
    drawn = page.get_by_test_id("flow-graph").locator(".fg-node").evaluate_all("els => els.map((e) => e.dataset.pid)")
    page.get_by_test_id("replay-exit").click()  # back to the polled model
    expect(page.get_by_test_id("now-caption")).not_to_contain_text("Replay")
    live_drawn = (
        page.get_by_test_id("flow-graph").locator(".fg-node").evaluate_all("els => els.map((e) => e.dataset.pid)")
    )
    assert drawn == live_drawn
