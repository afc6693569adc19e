"""The first five minutes, second pass (issue 26, items 5–9), in real Chromium on a real ``serve``:

5. a finished run's flow graph draws the whole role tree as it ran (instances, outcomes), not one
   dashed operator box — also once a replay reaches its last operation;
6. Watch, History and the call tree fit a 390 px phone (no sideways scroll, the top bar in two rows,
   waterfall tick labels apart), and still fit at 1024 and 1440 px;
7. the waterfall has a legend, and its slowest path is not drawn in the failure colour;
8. one source per number: a running role's chip and node agree; a replay's strip counts the frame and its
   badge says "Replay" under the header's "Done", with the call tree kept; an open question reads
   "Waiting for you";
9. the shell polls ``/flow?since=<cursor>``: after the first answer only deltas, merged into exactly the
   model a full poll gives (the merge, ``flowdelta.js``, checked against the server's full answers).

Screenshots go to ``tests/web/artifacts/`` (``first-minutes-again-*``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from playwright.sync_api import Page, expect
from tests.flow.logs import at, done, interrupt, log, start, tcall, tresult, usage
from tests.web.harness import Shots, UiService, call, finish, turn

from orchestrator.flow import FlowState, finalize, fold
from orchestrator.flow.delta import flow_answer

WIDTHS = (1440, 1024, 390)
#: no transition still moving (a node sliding to its place), so a screenshot shows the picture as it stays
SETTLED = (
    "() => document.getAnimations()"
    ".every((a) => a.playState !== 'running' || a.effect.getTiming().iterations === Infinity)"
)


def _tree_script() -> list[dict[str, Any]]:
    return [
        turn("lead", call("agent", role="coder", task="Run the tests")),
        turn("coder", call("run_shell", command="exit 1")),
        turn("coder", finish("The tests fail", status="error")),
        turn("lead", call("agent", role="coder", task="Try again"), last="The tests fail"),
        turn("coder", call("run_shell", command="echo fixed")),
        turn("coder", finish("Fixed"), last="fixed"),
        turn("lead", finish("All done"), last="Fixed"),
    ]


def _finished_run(ui_service: UiService) -> str:
    ui_service.script(_tree_script())
    run_id = ui_service.http.post("/api/runs", json={"task": "Fix the tests"}).json()["runId"]
    ui_service.run_status(run_id, "success")
    ui_service.wait_idle()
    return str(run_id)


def _fits(page: Page) -> dict[str, int]:
    return page.evaluate(
        """() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth,
                    bar: document.querySelector('.topbar').getBoundingClientRect().height })"""
    )


def _ticks_apart(page: Page) -> bool:
    return page.evaluate(
        """() => { const boxes = [...document.querySelectorAll('.ct-tick')].map((t) => t.getBoundingClientRect());
                   return boxes.every((b, i) => i === 0 || boxes[i - 1].right <= b.left + 1); }"""
    )


def test_a_finished_run_opens_on_its_whole_tree_with_a_legend_at_every_width(
    page: Page, ui_service: UiService, shots: Shots
) -> None:
    """Items 5, 6 and 7."""
    run_id = _finished_run(ui_service)
    tree = ui_service.http.get(f"/api/runs/{run_id}/tree").json()
    lead, failed, second = tree["nodes"]
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 860})
        page.goto(f"/#watch/{run_id}")
        expect(page.get_by_test_id("watch-status")).to_have_text("Done")
        graph = page.get_by_test_id("flow-graph")
        expect(graph).to_have_attribute("data-picture", "tree")
        nodes = graph.get_by_test_id("flow-tree-node")
        expect(nodes).to_have_count(3)
        expect(nodes.nth(0)).to_have_attribute("data-instance", lead["instanceId"])
        expect(nodes.nth(1)).to_have_attribute("data-instance", failed["instanceId"])
        expect(nodes.nth(1)).to_have_class(re.compile(r"\bfailed\b"))
        expect(nodes.nth(1)).to_contain_text("✖")
        expect(nodes.nth(2)).to_have_attribute("data-instance", second["instanceId"])
        expect(nodes.nth(2)).to_contain_text("#2")
        expect(nodes.nth(2)).not_to_have_class(re.compile(r"\bfailed\b"))
        expect(graph.locator(".tree-edge.err")).to_have_count(1)  # only the edge into the failed coder

        legend = page.get_by_test_id("call-tree-legend")
        expect(legend).to_be_visible()
        for word in ("model", "tool", "human", "other", "slowest path", "context"):
            expect(legend).to_contain_text(word)
        colours = page.evaluate(
            """() => { const bar = document.querySelector('.ct-row.slowest .ct-bar');
                       const probe = document.createElement('span'); probe.style.color = 'var(--rv-bad)';
                       document.querySelector('.rv').appendChild(probe);
                       const bad = getComputedStyle(probe).color; probe.remove();
                       return { slow: getComputedStyle(bar).outlineColor, bad }; }"""
        )
        assert colours["slow"] != colours["bad"], colours

        page.wait_for_function("() => document.querySelectorAll('.ct-tick').length > 1")
        page.wait_for_function(SETTLED)
        shots.save(page, f"first-minutes-again-finished-{width}", full_page=True)
        fits = _fits(page)
        assert fits["scroll"] <= fits["client"], (width, fits)
        assert fits["bar"] <= 100, (width, fits)  # at most two rows, also on a phone
        assert _ticks_apart(page), width

        page.goto("/#history")
        expect(page.get_by_test_id("history-open").first).to_be_visible()
        fits = _fits(page)
        assert fits["scroll"] <= fits["client"], (width, fits)
        shots.save(page, f"first-minutes-again-history-{width}")

    page.goto(f"/#watch/{run_id}")
    page.get_by_test_id("flow-graph").get_by_test_id("flow-tree-node").nth(1).click()
    expect(page.get_by_test_id("inspector")).to_contain_text(failed["instanceId"])


def test_replay_counts_the_frame_and_ends_on_the_whole_tree(page: Page, ui_service: UiService, shots: Shots) -> None:
    """Items 5 and 8: during a replay the strip counts the frame, the badge says "Replay" (the header keeps
    "Done"), the call tree stays with the frame's moment marked; at the end the whole tree is drawn."""
    run_id = _finished_run(ui_service)
    page.set_viewport_size({"width": 1024, "height": 800})
    page.goto(f"/#watch/{run_id}/replay")
    expect(page.get_by_test_id("watch-status")).to_have_text("Done")
    badge = page.get_by_test_id("run-status")
    expect(badge).to_have_text("Replay")
    play = page.get_by_test_id("replay-play")
    expect(play).to_have_text("Play")  # a short run's replay has played to its end
    scrubber = page.get_by_test_id("replay-scrubber")
    scrubber.press("Home")  # operation 1: the operator has called the lead
    strip = page.get_by_test_id("cost-strip")
    expect(strip).to_have_attribute("data-source", "frame")
    expect(strip).to_contain_text("At this operation")
    expect(strip).to_contain_text("0 tool calls")  # no tool has run yet
    expect(page.get_by_test_id("call-tree")).to_be_visible()
    expect(page.locator(".ct-row .ct-cursor").first).to_be_visible()
    expect(page.locator(".ct-row.future")).to_have_count(2)  # the coders had not started yet
    expect(badge).to_have_attribute("title", re.compile("Running"))
    shots.save(page, "first-minutes-again-replay-frame")

    scrubber.press("End")
    expect(page.get_by_test_id("flow-graph")).to_have_attribute("data-picture", "tree")
    expect(strip).to_contain_text("2 tool calls")
    page.get_by_test_id("replay-exit").click()
    expect(badge).to_have_text("Done")
    expect(strip).to_have_attribute("data-source", "run")
    shots.save(page, "first-minutes-again-replay-end")


def _question(ui_service: UiService, text: str) -> dict[str, Any]:
    return ui_service.wait_for(
        lambda: next((q for q in ui_service.questions() if q.get("question") == text), None), what=text
    )


def test_a_live_run_waiting_for_an_answer_says_so_and_polls_deltas(
    page: Page, ui_service: UiService, shots: Shots
) -> None:
    """Items 8 and 9: "Waiting for you" while a question is open; a running role's chip and its node show
    the same time; the shell's flow polls after the first are ``?since=`` deltas of a few operations."""
    ui_service.script(
        [
            turn("lead", call("agent", role="coder", task="Find the port")),
            turn("coder", call("run_shell", command="echo 8080")),
            turn("coder", call("ask_human", question="Which host?"), last="8080"),
            turn("coder", finish("localhost:8080"), last="localhost"),
            turn("lead", finish("Found it"), last="localhost:8080"),
        ]
    )
    flows: list[tuple[str, int, Any]] = []

    def seen(response: Any) -> None:
        if "/api/runs/" in response.url and "/flow" in response.url and response.status == 200:
            body = response.body()
            flows.append((response.url, len(body), json.loads(body)))

    page.on("response", seen)
    run_id = ui_service.http.post("/api/runs", json={"task": "Find the port"}).json()["runId"]
    question = _question(ui_service, "Which host?")
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(f"/#watch/{run_id}")
    expect(page.get_by_test_id("watch-status")).to_have_text("Waiting for you")
    inbox = page.get_by_test_id("inbox-modal")
    expect(inbox).to_be_visible()  # the question opened the inbox by itself; answer later
    inbox.get_by_role("button", name="Later").click()
    expect(inbox).to_be_hidden()
    expect(page.get_by_test_id("run-status")).to_have_text("Waiting for you")

    # one number per thing: the coder's chip and its node read the same time (from the same poll)
    page.wait_for_function(
        """() => { const chip = [...document.querySelectorAll('[data-testid=flow-types] .fg-chip')]
                     .find((c) => /coder/i.test(c.textContent));
                   const node = [...document.querySelectorAll('.fg-node.kind-role')]
                     .find((n) => /coder/i.test(n.textContent));
                   if (!chip || !node) return false;
                   const last = (text) => text.split(' · ').at(-1).trim();
                   const a = last(chip.querySelector('.fg-chip-cost').textContent);
                   const b = last(node.querySelector('.fg-sub').textContent);
                   window.__pair = [a, b];
                   return a === b && !/^0\\.000/.test(a); }"""
    )
    page.wait_for_function(SETTLED)
    shots.save(page, "first-minutes-again-waiting-390", full_page=True)
    fits = _fits(page)
    assert fits["scroll"] <= fits["client"], fits

    page.wait_for_function(  # (waiting in the page also delivers the response events)
        "() => performance.getEntriesByType('resource').filter((e) => /\\/flow\\?since=/.test(e.name)).length >= 4"
    )
    assert len(flows) >= 3, flows
    assert "since=" in flows[0][0] and flows[0][2]["delta"] is False
    for url, size, answer in flows[1:]:
        assert re.search(r"since=[0-9a-f]+\.\d+\.\d+\.\d+", url), url
        assert answer["delta"] is True
        assert size < flows[0][1], (size, flows[0][1])
        assert len(answer["operations"]) <= 3  # the open calls only: nothing happened in between
    ui_service.http.post("/api/answer", json={"id": question["id"], "answer": "localhost"})
    ui_service.run_status(run_id, "success")
    expect(page.get_by_test_id("watch-status")).to_have_text("Done")
    expect(page.get_by_test_id("flow-graph")).to_have_attribute("data-picture", "tree")
    ui_service.wait_idle()


def _log() -> list[dict[str, Any]]:
    entries = [start("lead"), usage("lead", 100)]
    for k in range(6):
        entries += [tcall("lead", "read_file"), tresult("lead", "read_file", kind="success" if k % 3 else "error")]
    entries += [start("coder", depth=1), tcall("coder", "run_shell"), tresult("coder", "run_shell"), interrupt()]
    entries += [start("inquiry_responder", depth=0), done("inquiry_responder"), done("coder", depth=1)]
    entries += [tcall("lead", "glob_files"), tresult("lead", "glob_files"), done("lead")]
    return log(*entries)


def test_the_pages_merge_of_deltas_is_the_full_model(page: Page, ui_service: UiService) -> None:
    """Item 9: ``flowdelta.js`` merges the server's deltas (windowed or not, cut anywhere, a later "now")
    into exactly the full answer of the same moment."""
    events = _log()
    cases = []
    for window in (None, 4):
        state = FlowState()
        steps = []
        cursor = None
        for k, event in enumerate(events):
            fold(state, event)
            if k % 3 and k != len(events) - 1:
                continue
            status = "success" if k == len(events) - 1 else "running"
            model = finalize(state, status, at(200 + k), window=window)
            full = flow_answer(state, model, "g", "")
            delta = flow_answer(state, model, "g", cursor) if cursor else full
            steps.append({"full": full, "answer": delta})
            cursor = full["cursor"]
        cases.append(steps)
    page.goto("/#history")
    merged = page.evaluate(
        """async (cases) => {
          const { applyFlowDelta } = await import("/static/flowdelta.js");
          return cases.map((steps) => { let held = null;
            return steps.map(({ answer }) => { held = applyFlowDelta(held, answer); return held && held.model; }); });
        }""",
        cases,
    )
    cursor_fields = {"cursor", "delta", "since", "participantPositions", "livePositions", "windowStart"}
    for steps, got in zip(cases, merged, strict=True):
        assert any(s["answer"]["delta"] for s in steps)
        for step, model in zip(steps, got, strict=True):
            assert model == {k: v for k, v in step["full"].items() if k not in cursor_fields}
    assert any(s["full"]["operationsOmitted"] for s in cases[1])
