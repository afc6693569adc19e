"""Issue 18, "Build": a replay — a scrubber that redraws the run view as it was at any operation (real
Chromium, real ``serve``), and the acceptance bound: no long task over 50 ms while a run of more than 1,000
operations replays at full speed, ending on the live model's final state."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from playwright.sync_api import expect
from tests.slowness import slowness
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
    expect(status).to_have_text("Done")
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
    # issue 26: the badge says it is a replay (no "Running" under the header's "Done"); its title says how
    # the run was then
    expect(status).to_have_text("Replay")
    expect(status).to_have_attribute("title", re.compile(r"was: Running$"))
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
    expect(status).to_have_attribute("title", re.compile(r"was: Done$"))
    expect(graph).to_have_attribute("data-picture", "tree")  # issue 26: the end is the whole tree as it ran
    expect(page.get_by_test_id("call-tree")).to_be_visible()  # issue 26: it stays, the frame's moment marked
    shots.save(page, "replay-end")
    page.set_viewport_size({"width": 1024, "height": 700})  # the bar wraps; every control stays on screen
    for control in ("replay-back", "replay-play", "replay-forward", "replay-scrubber", "replay-speed", "replay-exit"):
        expect(page.get_by_test_id(control)).to_be_in_viewport()
    shots.save(page, "replay-1024")

    page.get_by_test_id("replay-exit").click()
    expect(bar).to_be_hidden()
    expect(caption).not_to_contain_text("Replay")
    expect(page.get_by_test_id("replay-open")).to_be_focused()
    expect(page.get_by_test_id("call-tree")).to_be_visible()

    # the real shell: its #watch/<run>/replay route opens the replay, which plays from operation 1 to the end
    page.unroute("**/static/app.js")  # the host page's stand-in goes: the real shell loads
    page.goto("about:blank")
    page.goto(f"/#watch/{run_id}/replay")
    expect(page.get_by_test_id("nav-watch")).to_be_visible()  # the shell's top bar: not the bare host
    expect(caption).to_contain_text(f"Replay · operation {total} of {total}")
    expect(page.get_by_test_id("replay-play")).to_have_text("Play")
    page.get_by_test_id("replay-scrubber").press("Home")
    expect(caption).to_contain_text(f"Replay · operation 1 of {total}")
    expect(status).to_have_attribute("title", re.compile(r"was: Running$"))


def test_a_live_run_rewinds_and_goes_back_to_live(ui_service: UiService, page: Any, shots: Shots) -> None:
    """Issue 18, "Build": a live run rewound — polls keep arriving (the end of the scrubber grows) but the
    frame stays where the user put it, in the flow and the sequence view, until "Back to live"."""
    ui_service.script(
        [
            turn("lead", call("agent", role="coder", task="Write the greeting")),
            turn("coder", call("ask_human", question="Which greeting?")),
            turn("coder", call("run_shell", command="echo hi"), last="Hello"),
            turn("coder", finish("Written"), last="hi"),
            turn("lead", finish("All done"), last="Written"),
        ]
    )
    run_id = ui_service.http.post("/api/runs", json={"task": "Say hello"}).json()["runId"]
    question = ui_service.wait_for(ui_service.questions, what="the coder's question")[0]

    open_host(page)
    mount(page, run_id)
    graph, caption = page.get_by_test_id("flow-graph"), page.get_by_test_id("now-caption")
    expect(graph.locator('.fg-node.active[data-pid="human:answerer:1"]')).to_have_count(1)
    page.evaluate("rvHost.view.startReplay()")  # what the shell's #watch/<run>/replay does
    expect(page.get_by_test_id("replay-exit")).to_have_text("Back to live")
    expect(caption).to_contain_text("Replay · operation 3 of 3")  # it played to the end and stopped
    expect(page.get_by_test_id("replay-play")).to_have_text("Play")
    page.get_by_test_id("replay-scrubber").press("Home")
    expect(caption).to_contain_text("Replay · operation 1 of 3")
    expect(graph.locator('[data-pid="role:coder:1"]')).to_have_count(0)
    page.evaluate("rvHost.view.setMode('sequence')")
    expect(page.get_by_test_id("sequence-view").locator(".seq-row")).to_have_count(1)
    page.evaluate("rvHost.view.setMode('flow')")

    ui_service.http.post("/api/answer", json={"id": question["id"], "answer": "Hello"})
    ui_service.run_status(run_id, "success")
    # the polls move the scrubber's end, not the frame
    expect(caption).to_contain_text("Replay · operation 1 of 8")
    expect(page.get_by_test_id("run-status")).to_have_attribute("title", re.compile(r"was: Running$"))
    expect(graph.locator('[data-pid="role:coder:1"]')).to_have_count(0)
    shots.save(page, "replay-live-rewound")
    page.get_by_test_id("replay-exit").click()
    expect(page.get_by_test_id("run-status")).to_have_text("Done")
    expect(caption).not_to_contain_text("Replay")
    ui_service.wait_idle()


def _without_now(model: dict[str, Any]) -> dict[str, Any]:
    """``model`` without what depends on the wall clock: a finished run's calls that never returned count
    their elapsed time up to ``now`` (the request's time), which differs between two requests."""
    returned = {op["source"] for op in model["operations"] if op["kind"] == "return"}
    operations = [
        {**op, "metrics": {**op["metrics"], "elapsedSeconds": None, "elapsedMs": None}}
        if op["kind"] == "call" and op["destination"] not in returned
        else op
        for op in model["operations"]
    ]
    return {**model, "operations": operations}


def _oversubscribed() -> bool:
    """More runnable work than twice the cores (this test's browser and server count too): wall-clock
    task lengths then measure the machine, not the page."""
    return os.getloadavg()[0] > 2 * (os.cpu_count() or 1)


@contextmanager
def _main_thread_tasks(page: Any) -> Iterator[list[float]]:
    """Collects the CPU time (ms) of every task the page's main thread ran meanwhile, from a Chromium
    trace ("toplevel" tasks carry their thread time): unlike a long task's wall-clock length it does not
    grow while other processes hold the cores."""
    cdp = page.context.new_cdp_session(page)
    done: dict[str, Any] = {}
    cdp.on("Tracing.tracingComplete", lambda event: done.update(event))
    cdp.send("Tracing.start", {"categories": "toplevel,__metadata", "transferMode": "ReturnAsStream"})
    tasks: list[float] = []
    try:
        yield tasks
    finally:
        cdp.send("Tracing.end")
        while "stream" not in done:
            page.wait_for_timeout(50)
        parts = []
        while True:
            chunk = cdp.send("IO.read", {"handle": done["stream"], "size": 1 << 22})
            parts.append(chunk["data"])
            if chunk.get("eof"):
                break
        trace = json.loads("".join(parts))
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        main = {
            (e["pid"], e["tid"])
            for e in events
            if e.get("name") == "thread_name" and e.get("args", {}).get("name") == "CrRendererMain"
        }
        tasks.extend(
            e["tdur"] / 1000
            for e in events
            if e.get("ph") == "X" and "tdur" in e and (e["pid"], e["tid"]) in main and e["name"].endswith("RunTask")
        )


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
    expect(page.get_by_test_id("run-status")).to_have_text("Done")
    page.get_by_test_id("replay-open").click()
    expect(page.get_by_test_id("now-caption")).to_contain_text(f"Replay · operation 1 of {total}")
    page.get_by_test_id("replay-speed").select_option("full")
    busy = _oversubscribed()
    with _main_thread_tasks(page) as cpu:
        started = page.evaluate("performance.now()")
        page.get_by_test_id("replay-play").click()
        page.wait_for_function(
            "(n) => { const r = rvHost.view.replayState; return r.at === n && !r.playing && r.frame; }",
            arg=total,
            timeout=180_000,
        )
        ended = page.evaluate("performance.now()")
    busy = busy or _oversubscribed()
    long_tasks = [round(t["ms"]) for t in page.evaluate("rvHost.stats.longTasks") if t["at"] + t["ms"] >= started]
    seconds = (ended - started) / 1000
    print(
        f"\nreplayed {total} operations at full speed in {seconds:.1f} s ({total / seconds:.0f} frames/s); "
        f"long tasks (wall clock) {long_tasks}; main-thread tasks {len(cpu)}, the longest "
        f"{max(cpu, default=0):.1f} ms of CPU; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    assert cpu and max(cpu) <= LONG_TASK_MS, sorted(cpu)[-5:]
    if not busy:  # the acceptance bound as a person's browser measures it
        assert all(ms <= LONG_TASK_MS * slowness() for ms in long_tasks), long_tasks  # wall clock: scaled

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
