"""The run view in a real browser against a real ``serve`` on the sim model.

The run view is mounted on a bare host page (``runview_page.py``: the real ``/`` document with the
host script standing in for the shell) that polls like the shell does. Screenshots of the flow view,
the sequence view and the inspector go to the test's ``tmp_path`` and ``tests/web/artifacts/`` (see
``Shots``).
"""

from __future__ import annotations

import itertools
import json
import re
import time
from typing import Any

import msgspec
from playwright.sync_api import expect
from tests.flow.fixtures import SCENARIOS
from tests.flow.scenarios import scenario_frame
from tests.web.harness import Shots, UiService, call, finish, turn
from tests.web.runview_page import mount, open_host

CODER_TEXT = "The coder writes the greeting file now. " * 4
SCENARIO_EVENTS = {scenario.id: scenario.events for scenario in SCENARIOS}
SLOW = {"chunkChars": 4, "chunkDelayMs": 45}  # about two seconds of streamed text


def _script() -> list[dict[str, Any]]:
    """lead → coder; the coder asks a question (the run waits for the test), then streams a slow reply
    with a shell call, then finishes; the lead finishes."""
    return [
        turn("lead", call("agent", role="coder", task="Write the **greeting** file"), content="Planning the work."),
        turn("coder", call("ask_human", question="Which greeting?")),
        turn("coder", call("run_shell", command="echo hi"), content=CODER_TEXT, reasoning="Thinking it over.", **SLOW),
        turn("coder", finish("Greeting written to `greeting.txt`"), content="Done."),
        turn("lead", finish("All done"), content="Wrapping up."),
    ]


def _ops(page: Any) -> int:
    return int(page.evaluate("rvHost.stats.work.at(-1).ops"))


def test_a_live_run_in_the_flow_and_sequence_views_and_the_inspector(
    ui_service: UiService, page: Any, shots: Shots
) -> None:
    ui_service.script(_script())
    run_id = ui_service.http.post("/api/runs", json={"task": "Say hello"}).json()["runId"]
    question = ui_service.wait_for(ui_service.questions, what="the coder's question")[0]

    open_host(page)
    mount(page, run_id)
    graph = page.get_by_test_id("flow-graph")
    # Paused on the question: the chain by depth is operator → lead → coder → the answering operator.
    for pid in ("human:root", "role:lead:1", "role:coder:1", "human:answerer:1"):
        expect(graph.locator(f'.fg-node[data-pid="{pid}"]')).to_have_count(1)
    expect(page.locator('.fg-node.active[data-pid="human:answerer:1"]')).to_have_count(1)
    expect(page.get_by_test_id("now-caption")).not_to_be_empty()
    expect(page.get_by_test_id("cost-strip")).to_contain_text("tool calls")
    types = page.get_by_test_id("flow-types")
    expect(types).to_contain_text("Lead")
    expect(types).not_to_contain_text("Shell")
    ops_paused = _ops(page)
    shots.save(page, "runview-flow-question")

    ui_service.http.post("/api/answer", json={"id": question["id"], "answer": "Hello, world"})
    # Live tokens appear under the in-flight row (the coder's), placed below its node.
    partial = page.get_by_test_id("live-partial")
    expect(partial).to_contain_text("The coder writes the greeting")
    expect(partial).to_have_class("rv-partial placed")
    coder = graph.locator('.fg-node[data-pid="role:coder:1"]').bounding_box()
    box = partial.bounding_box()
    assert coder is not None and box is not None and box["y"] >= coder["y"] + coder["height"] - 1
    shots.save(page, "runview-flow-live")

    expect(page.get_by_test_id("run-status")).to_have_text("Done", timeout=20_000)
    expect(page.get_by_test_id("now-caption")).to_have_text("Done")
    expect(types).to_contain_text("Shell")  # the graph grew a tool type ...
    assert _ops(page) > ops_paused  # ... and operations
    # every call returned: issue 26, the graph draws the whole role tree as it ran (operator, lead, coder)
    expect(graph).to_have_attribute("data-picture", "tree")
    expect(graph.locator(".fg-node")).to_have_count(3)
    expect(graph.locator(".fg-edge.anim")).to_have_count(0)
    shots.save(page, "runview-flow-done")

    page.evaluate("rvHost.view.setMode('sequence')")
    sequence = page.get_by_test_id("sequence-view")
    total = _ops(page)
    expect(sequence.locator(".seq-row")).to_have_count(total)
    # Issue 18, problem 3: a column per participant of the run, not per Guild role; tools sit in their
    # caller's lane, not in a column of their own.
    expect(sequence.locator(".seq-col")).to_have_text(["Operator", "Lead", "Coder"])
    expect(sequence.locator(".seq-row.tool")).to_have_count(2)  # the shell call and its return
    page.get_by_test_id("sequence-roles-only").check()
    expect(sequence.locator(".seq-row")).to_have_count(total - 2)  # the shell call and its return
    page.get_by_test_id("sequence-roles-only").uncheck()
    expect(sequence.locator(".seq-row")).to_have_count(total)
    shots.save(page, "runview-sequence")

    page.evaluate("rvHost.view.setTier('friendly')")
    expect(sequence.locator(".seq-head")).to_contain_text("You")
    page.evaluate("rvHost.view.setTier('detailed')")

    # The operation card: the delegation's details are its task, as sanitized Markdown.
    sequence.locator('.seq-row[data-op="op-2"]').click()
    card = page.get_by_test_id("operation-card")
    expect(card).to_contain_text("Lead delegates to Coder")
    expect(card.get_by_test_id("operation-details").locator("strong")).to_have_text("greeting")
    expect(card).to_contain_text(re.compile(r"Elapsed\s*\d+\.\d+ s"))  # to the millisecond (problem 8)

    # The inspector: the coder's transcript, its tool calls and results, and one turn on the wire.
    card.get_by_test_id("card-open-transcript").last.click()
    inspector = page.get_by_test_id("inspector")
    transcript = inspector.get_by_test_id("inspector-transcript")
    expect(transcript.get_by_test_id("transcript-turn")).to_have_count(3)
    expect(transcript.get_by_test_id("transcript-tool-call").first).to_contain_text("ask_human")
    # each result under its call, by type (issue 18, problem 6): the answer, the shell's stdout as text
    expect(transcript.get_by_test_id("tool-result").first).to_contain_text("Hello, world")
    expect(transcript.get_by_test_id("tool-stdout")).to_contain_text("hi")
    expect(transcript).not_to_contain_text('"stdout"')
    expect(transcript.get_by_test_id("transcript-finish")).to_contain_text("greeting.txt")
    expect(inspector.get_by_test_id("inspector-budget")).to_contain_text("Last prompt")
    transcript.get_by_test_id("wire-expander").first.locator("summary").click()
    wire = transcript.get_by_test_id("wire-body").first
    expect(wire.get_by_test_id("wire-message")).to_have_count(2)
    expect(wire).to_contain_text("You are the coder.")
    expect(wire).to_contain_text("Write the **greeting** file")  # the raw request, as sent
    shots.save(page, "runview-inspector")
    page.keyboard.press("Escape")
    expect(inspector).to_have_count(0)
    ui_service.wait_idle()


def _frame(scenario: str, n: int) -> dict[str, Any]:
    """Frame ``n`` of a synthetic scenario, as the flow endpoint's JSON would carry it."""
    return msgspec.to_builtins(scenario_frame(scenario, n))


def test_interrupt_stacks_rows_marks_and_loop_backs(ui_service: UiService, page: Any, shots: Shots) -> None:
    """Scenario frames through the real adapter, computed here and handed to the page: preempting
    stacks get their own rows below main, paused rows never animate, observe lines cross into the
    paused rows; same-column calls loop back."""
    open_host(page)
    page.evaluate(
        """async () => {
          const { createRunView } = await import('/static/runview.js');
          const get = async (p) => (await fetch(p)).json();
          const config = await get('/api/config');
          window.demo = createRunView(document.getElementById('host'), {
            runId: 'demo', config, api: { get }, stream: null, getTier: () => 'detailed' });
        }"""
    )
    frames = len(SCENARIO_EVENTS["three-stacks"])
    # The first frame with all three stacks live (main and the loop check paused, the inquiry active).
    for n in range(frames):
        model = _frame("three-stacks", n)
        if len(model["stacks"]) == 3 and model["activeStack"] == "interrupt-2-stack":
            break
    page.evaluate("model => window.demo.render(model, null)", model)
    rows = page.locator(".fg-row")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_contain_text("Main")
    expect(rows.nth(1)).to_contain_text("Interrupt 1")
    expect(rows.nth(2)).to_contain_text("Inquiry 2")
    expect(page.locator(".fg-row.paused")).to_have_count(2)
    for edge in page.locator(".fg-edge.anim").all():
        assert edge.get_attribute("data-stack") == "interrupt-2-stack"
    expect(page.locator(".fg-mark").first).to_be_attached()
    shots.save(page, "runview-flow-interrupts")

    page.evaluate("window.demo.setMode('sequence')")
    page.evaluate("model => window.demo.render(model, null)", _same_column_model())
    expect(page.locator(".seq-row")).to_have_count(3)
    expect(page.locator(".seq-row.loop")).to_have_count(2)  # a lead delegating to another lead, and back
    expect(page.locator(".seq-row.kind-observe")).to_have_count(0)
    page.evaluate("model => window.demo.render(model, null)", _frame("three-stacks", frames - 1))
    expect(page.locator(".seq-row.kind-observe").first).to_be_attached()


def _same_column_model() -> dict[str, Any]:
    def op(n: int, kind: str, src: str, dst: str, lifecycle: str = "settled") -> dict[str, Any]:
        metrics = {"tokens": 10 * n, "cachedPromptTokens": 0, "elapsedSeconds": n} if kind == "call" else None
        return {
            "id": f"op-{n}", "kind": kind, "stack": "main", "source": src, "destination": dst,
            "startedAt": f"2026-01-01T00:00:0{n}.000Z",
            "settledAt": None if lifecycle == "in_flight" else f"2026-01-01T00:00:0{n}.500Z",
            "lifecycle": lifecycle, "outcome": "success" if kind == "return" else None, "metrics": metrics,
        }  # fmt: skip

    return {
        "participants": [
            {"id": "human:root", "role": "human", "kind": "human"},
            {"id": "role:lead:1", "role": "lead", "kind": "role"},
            {"id": "role:lead:2", "role": "lead", "kind": "role"},
        ],
        "operations": [
            op(1, "call", "human:root", "role:lead:1"),
            op(2, "call", "role:lead:1", "role:lead:2"),
            op(3, "return", "role:lead:2", "role:lead:1", "in_flight"),
        ],
        "status": "running",
        "stacks": [{"id": "main", "root": "human:root"}],
        "activeStack": "main",
        "activeParticipant": "role:lead:1",
    }


def _pump_until(page: Any, probe: Any, what: str, seconds: float = 12.0) -> None:
    """Poll ``probe`` while letting Playwright dispatch its route callbacks (bounded)."""
    deadline = time.monotonic() + seconds
    while not probe():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        page.wait_for_timeout(30)


def test_the_stream_reconnects_with_capped_backoff_and_stays_silent(ui_service: UiService, page: Any) -> None:
    """A socket closed at once is retried 500 ms, 1 s, 2 s … apart with no page error (the page fixture
    fails the test on any console or page error); a subscription ack resets the delay to 500 ms."""
    attempts: list[float] = []
    ack = {"on": False}

    def handle(ws: Any) -> None:
        attempts.append(time.monotonic())
        if not ack["on"]:
            ws.close()
            return

        def on_message(message: str | bytes) -> None:
            body = json.loads(message)
            ws.send(json.dumps({"type": "subscribed", "runId": body["runId"]}))
            ws.close()

        ws.on_message(on_message)

    page.route_web_socket("**/ws/stream", handle)
    open_host(page)
    page.evaluate(
        "import('/static/stream.js').then((m) => { window.s = m.createStream({}); window.s.subscribe('run-x'); })"
    )
    _pump_until(page, lambda: len(attempts) >= 3, "three refused connection attempts")
    ack["on"] = True  # from the fourth attempt on, the server acknowledges the subscription
    _pump_until(page, lambda: len(attempts) >= 6, "three acknowledged attempts")
    gaps = [round(b - a, 2) for a, b in itertools.pairwise(attempts)]
    # refused: 0.5 s, 1 s, 2 s; after an ack the next retry is 0.5 s again
    assert 0.35 <= gaps[0] <= 1.0 and 0.8 <= gaps[1] <= 1.8 and 1.7 <= gaps[2] <= 3.2, gaps
    assert all(0.35 <= gap <= 1.0 for gap in gaps[3:5]), gaps
    page.evaluate("window.s.close()")
