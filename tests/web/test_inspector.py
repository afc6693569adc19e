"""Issue 18, problems 6 and 7, in real Chromium against a real ``serve``: tool results by type under their
calls (terminal blocks with exit badges and plain stderr, a file view, a diff for a write, a search
table), the operation card's "Transcript" opening at the operation's turn, and the live text of a turn
the page started watching half way through."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from tests.helpers import REPO
from tests.web.harness import UI_ROLES, Shots, UiService, call, finish, start_ui_service, turn
from tests.web.runview_page import mount, open_host

ROLES = {**UI_ROLES, "coder": ["run_shell", "read_file", "write_file", "search_text", "ask_human", "finish"]}
ORIGINAL = "# Greeting\nprint('Hello wrld')\nprint('bye')\n"
FIXED = ORIGINAL.replace("wrld", "world")
STDERR = "boom: tests/test_greeting.py failed\nsee the log"
#: The live turn: reasoning of six lines, then text, streamed slowly (about six seconds).
REASONING = "\n".join(f"Thought {n}: weighing the greeting." for n in range(1, 7))
LIVE_TEXT = "FIRST-WORDS of the coder's slow reply. " + "It keeps writing about the greeting. " * 8
SLOW = {"chunkChars": 5, "chunkDelayMs": 60}


@pytest.fixture(scope="module")
def ui_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiService]:
    """This module's server: the coder can also read, write and search files."""
    with start_ui_service(tmp_path_factory.mktemp("ui-inspector"), roles=ROLES) as service:
        yield service


def _script() -> list[dict[str, Any]]:
    return [
        turn("lead", call("agent", role="coder", task="Fix the greeting")),
        turn(
            "coder",
            call("run_shell", command="echo building"),
            call("run_shell", command=f"printf '{STDERR}' >&2; exit 1"),
        ),
        turn("coder", call("read_file", path="greeting.py"), call("search_text", pattern="wrld")),
        turn("coder", call("write_file", path="greeting.py", content=FIXED)),
        turn("coder", finish("Fixed the greeting")),
        turn("lead", finish("The greeting is fixed"), last="Fixed the greeting"),
    ]


def _finished_run(ui_service: UiService) -> str:
    (ui_service.workspace / "greeting.py").write_text(ORIGINAL)
    ui_service.script(_script())
    run_id = ui_service.http.post("/api/runs", json={"task": "Fix the greeting"}).json()["runId"]
    ui_service.run_status(run_id, "success")
    ui_service.wait_idle()
    return run_id


def test_tool_results_by_type_under_their_calls_and_the_transcript_opens_at_the_operation(
    ui_service: UiService, page: Any, shots: Shots
) -> None:
    """Issue 18, problem 6: each result under its call, by type; stderr as text; "Transcript" opens at
    the operation's turn."""
    run_id = _finished_run(ui_service)
    model = ui_service.json(f"/api/runs/{run_id}/flow")
    kinds = {p["id"]: p["kind"] for p in model["participants"]}
    tool_returns = [o for o in model["operations"] if o["kind"] == "return" and kinds[o["source"]] == "tool"]
    failing = next(o for o in tool_returns if o.get("note") == "exit 1")

    open_host(page)
    page.set_viewport_size({"width": 1440, "height": 900})
    mount(page, run_id)
    expect(page.get_by_test_id("run-status")).to_have_class(re.compile(r"\bstatus-success\b"))
    page.evaluate("rvHost.view.setMode('sequence')")
    page.locator(f'.seq-row[data-op="{failing["id"]}"]').click()

    # The operation card: the failing shell call as a terminal block, stderr as plain text.
    card = page.get_by_test_id("operation-card")
    result = card.get_by_test_id("operation-result").get_by_test_id("tool-result")
    expect(result).to_have_attribute("data-view", "terminal")
    expect(result.get_by_test_id("tool-exit")).to_have_text("exit 1")
    expect(result.get_by_test_id("tool-exit")).to_have_class("tr-badge sev-warn")
    stderr = result.get_by_test_id("tool-stderr")
    assert stderr.inner_text() == STDERR  # real text: its newline is a line break, no quotes, no "\n"
    shots.save(page, "inspector-opcard-terminal")

    # "Transcript" opens the coder's transcript at the turn that made the call, highlighted.
    card.get_by_test_id("card-open-transcript").first.click()
    inspector = page.get_by_test_id("inspector")
    transcript = inspector.get_by_test_id("inspector-transcript")
    focused = transcript.locator('.rv-focus[data-focus="1"]')
    expect(focused).to_have_count(1)
    expect(focused).to_be_in_viewport()
    calls = focused.get_by_test_id("transcript-tool-call")
    expect(calls).to_have_count(2)
    expect(focused.locator(".rv-call.rv-focus")).to_contain_text("exit 1")  # the operation's own call
    # each result under its call: exit 0 green, exit 1 amber with its stderr
    expect(calls.nth(0).get_by_test_id("tool-exit")).to_have_class("tr-badge sev-ok")
    expect(calls.nth(0).get_by_test_id("tool-stdout")).to_have_text("building")
    expect(calls.nth(1).get_by_test_id("tool-exit")).to_have_text("exit 1")
    expect(calls.nth(1).get_by_test_id("tool-stderr")).to_contain_text("boom: tests/test_greeting.py failed")
    expect(focused.get_by_test_id("tool-result").first).not_to_contain_text("null")
    shots.save(page, "inspector-focused-turn")

    # The next turn does not repeat those results: only compact references to them.
    turns = transcript.get_by_test_id("transcript-turn")
    expect(turns).to_have_count(4)
    expect(transcript.get_by_test_id("transcript-tool-result")).to_have_count(0)
    refs = turns.nth(1).get_by_test_id("transcript-result-ref")
    expect(refs).to_have_count(2)
    expect(refs.nth(1)).to_contain_text("⚠ exit 1")

    # A read is a file view with line numbers; a search a table.
    read = turns.nth(1).locator('[data-testid=tool-result][data-view="file"]')
    expect(read.get_by_test_id("tool-path")).to_contain_text("greeting.py")
    lines = read.get_by_test_id("tool-file-lines").locator(".tr-line")
    expect(lines).to_have_count(3)
    expect(lines.nth(1)).to_contain_text("2print('Hello wrld')")
    table = turns.nth(1).get_by_test_id("tool-table")
    expect(table.locator("tbody tr")).to_have_count(1)
    expect(table.locator("tbody tr")).to_contain_text("greeting.py2print('Hello wrld')")

    # A write is a diff against what the read saw: one line changed.
    write = turns.nth(2).locator('[data-testid=tool-result][data-view="write"]')
    diff = write.get_by_test_id("tool-diff")
    expect(diff.get_by_test_id("diff-del")).to_have_count(1)
    expect(diff.get_by_test_id("diff-del")).to_contain_text("print('Hello wrld')")
    expect(diff.get_by_test_id("diff-add")).to_contain_text("print('Hello world')")
    expect(diff).to_contain_text("+1 −1")
    write.scroll_into_view_if_needed()
    shots.save(page, "inspector-read-search-diff")

    # Jump to the problems and find text in the transcript.
    expect(inspector.get_by_test_id("inspector-problem-count")).to_have_text("1 problem")
    inspector.get_by_test_id("inspector-next-problem").click()
    current = transcript.locator(".rv-current")
    expect(current).to_have_attribute("data-view", "terminal")
    expect(current.get_by_test_id("tool-exit")).to_have_text("exit 1")
    expect(inspector.get_by_test_id("inspector-problem-count")).to_have_text("1 of 1")
    find = inspector.get_by_test_id("inspector-find")
    find.fill("hello world")
    find.press("Enter")
    expect(transcript.locator(".rv-current")).to_contain_text("write_file")
    expect(inspector.get_by_test_id("inspector-find-count")).to_contain_text("1 of")
    find.fill("no such text anywhere")
    find.press("Enter")
    expect(inspector.get_by_test_id("inspector-find-count")).to_have_text("no match")

    # At 1024×700 the results wrap inside the modal: nothing runs off its right edge.
    page.set_viewport_size({"width": 1024, "height": 700})
    transcript.get_by_test_id("tool-stderr").first.scroll_into_view_if_needed()
    overflow = "() => { const d = document.querySelector('.rv-modal'); return d.scrollWidth - d.clientWidth; }"
    assert page.evaluate(overflow) <= 0
    shots.save(page, "inspector-1024")
    page.set_viewport_size({"width": 1440, "height": 900})

    # The compact reference jumps back to the call it belongs to.
    refs.nth(0).get_by_role("button").click()
    expect(transcript.locator(".rv-call.rv-focus")).to_have_count(1)
    expect(turns.nth(0).locator(".rv-call.rv-focus")).to_contain_text("echo building")
    page.keyboard.press("Escape")
    expect(inspector).to_have_count(0)


#: True when the last characters of the element's text are inside its (scrolled) box.
TAIL_IN_VIEW = """(selector) => {
  const box = document.querySelector(selector);
  const node = box && box.firstChild;
  if (!node || node.nodeType !== Node.TEXT_NODE) return false;
  const range = document.createRange();
  range.setStart(node, Math.max(0, node.length - 3));
  range.setEnd(node, node.length);
  const r = range.getBoundingClientRect(), b = box.getBoundingClientRect();
  return r.height > 0 && r.top >= b.top - 1 && r.bottom <= b.bottom + 1;
}"""


def _live_script() -> list[dict[str, Any]]:
    return [
        turn("lead", call("agent", role="coder", task="Write slowly")),
        turn("coder", call("ask_human", question="Ready?")),
        turn("coder", call("run_shell", command="echo done"), content=LIVE_TEXT, reasoning=REASONING, **SLOW),
        turn("coder", finish("Written")),
        turn("lead", finish("All written"), last="Written"),
    ]


def test_a_page_opened_mid_turn_shows_the_whole_partial_from_its_first_characters(
    ui_service: UiService, page: Any, shots: Shots, tmp_path: Path
) -> None:
    """Issue 18, problem 7: the page subscribes after the turn's first tokens were streamed; the stream's
    catch-up gives it everything so far, so the inspector's in-flight box shows the text from its first
    characters, and the reasoning box shows all of its lines."""
    ui_service.script(_live_script())
    run_id = ui_service.http.post("/api/runs", json={"task": "Write slowly"}).json()["runId"]
    question = ui_service.wait_for(ui_service.questions, what="the coder's question")[0]
    requests_before = len(ui_service.sim_requests())
    ui_service.http.post("/api/answer", json={"id": question["id"], "answer": "Yes"})
    # The slow turn has started streaming before the page exists.
    ui_service.wait_for(lambda: len(ui_service.sim_requests()) > requests_before or None, what="the slow turn")

    frames: list[dict[str, Any]] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(json.loads(payload))))
    open_host(page)
    mount(page, run_id)
    # the run view's floating box follows the reasoning's tail: its newest line is the one in view
    expect(page.get_by_test_id("live-partial").locator(".rv-partial-reasoning")).to_contain_text("Thought 6")
    # (the box shows once the flow graph has placed it beside the coder's node: wait for that, not a turn)
    page.wait_for_function(TAIL_IN_VIEW, arg="[data-testid=live-partial] .rv-partial-reasoning")
    page.locator('.fg-node[data-pid="role:coder:1"]').click()
    live = page.get_by_test_id("inspector-live")
    expect(live.locator(".rv-partial-text")).to_contain_text("FIRST-WORDS of the coder")
    reasoning = live.locator(".rv-partial-reasoning")
    expect(reasoning).to_contain_text("Thought 6")
    box = reasoning.bounding_box()
    assert box is not None and box["height"] > 60  # every line, not the first two
    page.wait_for_function(TAIL_IN_VIEW, arg="[data-testid=inspector-live] .rv-partial-reasoning")
    shots.save(page, "inspector-live-mid-turn")

    deltas = [f for f in frames if f.get("type") == "delta"]
    # the catch-up came first, but for what the run streamed between the ack and it: that is queued live
    # before it and is part of its text, which its reset replaces whole (``service/hub.py``)
    first = next(i for i, d in enumerate(deltas) if d.get("reset") and "since" in d)
    assert all(not d.get("reset") for d in deltas[:first]), deltas[: first + 1]
    # opening the inspector on the live run asked for it again (a re-subscribe), for partials that
    # might have started listening late
    assert [f["type"] for f in frames].count("subscribed") >= 2
    assert len([d for d in deltas if "since" in d and d["field"] == "reasoning"]) >= 2
    assert deltas[first]["field"] == "reasoning" and deltas[first]["text"].startswith("Thought 1")
    ui_service.run_status(run_id, "success")
    ui_service.wait_idle()


RENDER = """async () => {
  const { renderToolResult, renderDiff, commandVerdict } = await import("/static/toolresult.js");
  const host = document.getElementById("host");
  const long = "x".repeat(40);
  const views = {
    pending: { callId: "p", tool: "run_shell", kind: null, severity: "ok", note: "", message: null, index: null,
               callIndex: 3, clipped: false,
               body: { view: "terminal", commands: [{ command: "sleep 9", exitCode: null }] } },
    clipped: { callId: "c", tool: "run_shell", kind: "success", severity: "fail", note: "exit 127: command not found",
               message: null, index: 9, callIndex: 8, clipped: true,
               body: { view: "terminal", commands: [{ command: "nope", exitCode: 127, stdout: long.slice(0, 10),
                       stdoutChars: 40, stderr: "", stderrChars: 0 }] } },
    plain: { callId: "x", tool: "fetch_url", kind: "not_found", severity: "warn", note: "not_found",
             message: "no such page", index: 5, callIndex: 4, clipped: false,
             body: { view: "plain", text: "no such page", chars: 12 } },
  };
  const full = { ...views.clipped, body: { ...views.clipped.body, commands: [{ ...views.clipped.body.commands[0],
                 stdout: long, stdoutChars: 40 }] } };
  for (const [name, view] of Object.entries(views)) {
    const node = renderToolResult(view, { onShowAll: async () => full });
    node.id = `r-${name}`;
    host.appendChild(node);
  }
  const unknown = renderDiff({ path: "n.txt", known: false, note: "The previous content of n.txt is unknown",
    previousIndex: null, added: 2, removed: 0, clipped: false,
    lines: [{ op: "+", text: "a", new: 1 }, { op: "+", text: "b", new: 2 }] });
  unknown.id = "r-diff";
  host.appendChild(unknown);
  return [commandVerdict({ exitCode: 0 }).severity, commandVerdict({ exitCode: 2 }).note,
          commandVerdict({ exitCode: null, timedOut: true }).note];
}"""


def test_the_renderers_pending_clipped_plain_and_an_unknown_previous_content(ui_service: UiService, page: Any) -> None:
    """Issue 18, problem 6: toolresult.js on its own — a running call has no exit badge yet, a clipped
    one swaps in the whole text on "Show all", an error is plain text, and a write whose previous
    content is unknown shows every line as added with the note."""
    open_host(page)
    verdicts = page.evaluate(RENDER)
    assert verdicts == ["ok", "exit 2", "timeout"]
    pending = page.locator("#r-pending")
    expect(pending.get_by_test_id("tool-status")).to_have_text("… waiting for the result")
    expect(pending.get_by_test_id("tool-exit")).to_have_count(0)
    expect(pending).to_contain_text("$ sleep 9")
    clipped = page.locator("#r-clipped")
    expect(clipped.get_by_test_id("tool-exit")).to_have_class("tr-badge sev-fail")
    expect(clipped).to_contain_text("showing 10 of 40 characters")
    clipped.get_by_test_id("tool-show-all").click()
    whole = page.locator("[data-testid=tool-result][data-call-id=c]")
    expect(whole.get_by_test_id("tool-stdout")).to_have_text("x" * 40)
    expect(whole.get_by_test_id("tool-show-all")).to_have_count(0)
    plain = page.locator("#r-plain")
    expect(plain.get_by_test_id("tool-status")).to_have_text("⚠ not_found")
    expect(plain.get_by_test_id("tool-plain")).to_have_text("no such page")
    diff = page.locator("#r-diff")
    expect(diff.get_by_test_id("diff-add")).to_have_count(2)
    expect(diff).to_contain_text("+2 −0 · The previous content of n.txt is unknown")


LONG_RUN = "run-20260101-000007"


def _synthetic() -> Any:
    spec = importlib.util.spec_from_file_location(
        "bench_log_window_synthetic", REPO / "bench" / "log_window" / "synthetic.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


OPEN_AT = """async ([runId, instanceId, focusIndex]) => {
  const { openInspector } = await import("/static/inspector.js");
  const get = async (path) => (await fetch(path, { cache: "no-store" })).json();
  const config = await get("/api/config");
  openInspector({ runId, config, api: { get } }, { instanceId, role: "worker", focusIndex });
}"""


def test_focus_index_loads_older_pages_to_reach_an_early_turn(ui_service: UiService, page: Any, shots: Shots) -> None:
    """Issue 18, problem 6: the inspector contract ``openInspector(ctx, {…, focusIndex})`` opens at the
    turn containing that log event even when it lies pages before the newest one."""
    _synthetic().write_synthetic_run(ui_service.workspace, LONG_RUN, 2_500)
    view = ui_service.json(f"/api/runs/{LONG_RUN}")
    worker = view["roleTree"]["children"][0]["children"][0]
    base = f"/api/runs/{LONG_RUN}/log?instance={worker['roleId']}"
    total = ui_service.json(f"{base}&limit=0")["total"]
    assert total > 120  # more than two pages of 50
    window = ui_service.json(f"{base}&offset=4&limit=30")["events"]
    # an event inside a turn's span (a tool event, not one of the instance's own), early in the log
    turn_event = next(a for a, b in pairwise(window) if b["index"] - a["index"] >= 2)
    target = turn_event["index"] + 1
    open_host(page)
    page.evaluate(OPEN_AT, [LONG_RUN, worker["roleId"], target])
    focused = page.get_by_test_id("inspector-transcript").locator('.rv-focus[data-focus="1"]')
    expect(focused).to_have_attribute("data-index", str(turn_event["index"]))
    expect(focused).to_be_in_viewport()
    assert page.get_by_test_id("inspector-transcript").locator(".rv-turn-row").count() >= total - 6
    shots.save(page, "inspector-focus-older-pages")
