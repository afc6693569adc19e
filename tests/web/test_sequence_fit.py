"""Issue 18, problems 3, 8, 9 and 11 (the sequence rows' Tab order), in real Chromium against a real ``serve``.

One scripted run of a Guild with eighteen roles that uses five of them (the coder twice): the sequence
view has a column per participant only, fits at 1024×700, keeps its headers and row numbers in view
while scrolling, draws tool calls in a lane beside their caller, numbers the coder's instances, shows
millisecond durations, spaces rows by time on request, labels rows with paths, commands and exit codes,
and tabs through its rows in order. Synthetic models check the flow graph's instance names and Tab
order and an eighteen-column layout; the bench's synthetic log checks a run of more than 1,000
operations.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect
from tests.helpers import REPO
from tests.web.harness import Shots, UiService, call, finish, start_ui_service, turn
from tests.web.runview_page import mount, open_host

#: Eighteen roles, like the default Guild; the run below uses five of them.
USED = {
    "lead": ["agent", "finish"],
    "planner": ["finish"],
    "coder": ["write_file", "read_file", "search_text", "run_shell", "finish"],
    "reviewer": ["finish"],
    "researcher": ["finish"],
}
UNUSED = [
    "architecture_lead", "architecture_reviewer", "style_lead", "style_reviewer", "security_lead",
    "security_reviewer", "acceptance_lead", "acceptance_reviewer", "loop_detector", "context_manager",
    "recovery", "tester",
]  # fmt: skip
ROLES = {**USED, **{name: ["finish"] for name in UNUSED}, "inquiry_responder": ["read_run_log", "finish"]}
SLOW = {"content": "Checking the file once more before running it. " * 2, "chunkChars": 4, "chunkDelayMs": 40}
PARTICIPANT_COLUMNS = ["Operator", "Lead", "Planner", "Coder ×2", "Reviewer", "Researcher"]
SYNTHETIC_RUN = "run-20260101-000003"


def _script() -> list[dict[str, Any]]:
    return [
        turn("lead", call("agent", role="planner", task="Plan the greeting feature in two steps")),
        turn("planner", finish("Plan: write the file, then review it")),
        turn("lead", call("agent", role="coder", task="Write greeting.txt and check it")),
        turn(
            "coder", call("write_file", path="greeting.txt", content="hello\n"), call("read_file", path="greeting.txt")
        ),
        turn("coder", call("run_shell", command="exit 3"), **SLOW),  # about a second of streamed text first
        turn("coder", finish("Greeting written")),
        turn("lead", call("agent", role="coder", task="Second pass: search for the greeting")),
        turn("coder", call("search_text", pattern="hello"), call("run_shell", command="echo ok")),
        turn("coder", finish("Found it")),
        turn("lead", call("agent", role="reviewer", task="Review greeting.txt")),
        turn("reviewer", finish("Looks good")),
        turn("lead", call("agent", role="researcher", task="Look for prior art")),
        turn("researcher", finish("Nothing relevant")),
        turn("lead", finish("All done")),
    ]


@pytest.fixture(scope="module")
def ui_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiService]:
    with start_ui_service(tmp_path_factory.mktemp("seqfit"), roles=ROLES) as service:
        yield service


@pytest.fixture(scope="module")
def run_id(ui_service: UiService) -> str:
    ui_service.script(_script())
    run = ui_service.http.post("/api/runs", json={"task": "Add a greeting"}).json()["runId"]
    ui_service.run_status(run, "success", seconds=40)
    ui_service.wait_idle()
    return str(run)


def _sequence(page: Any, run: str, *, width: int = 1024, height: int = 700) -> Any:
    page.set_viewport_size({"width": width, "height": height})
    open_host(page)
    mount(page, run)
    expect(page.get_by_test_id("run-status")).to_have_text("Done")
    page.evaluate("rvHost.view.setMode('sequence')")
    sequence = page.get_by_test_id("sequence-view")
    expect(sequence.locator(".seq-row").first).to_be_attached()
    return sequence


def _box(locator: Any) -> dict[str, float]:
    box = locator.bounding_box()
    assert box is not None
    return box


def test_columns_are_participants_and_fit_at_1024(ui_service: UiService, run_id: str, page: Any, shots: Shots) -> None:
    """Issue 18, problem 3: only the run's participants get columns (not eighteen Guild roles), the
    view fits 1024×700 without a horizontal scrollbar, tool rows sit in the caller's lane, the coder's
    two instances are told apart, and the headers stay visible after scrolling down."""
    assert len(ui_service.json("/api/config")["roles"]) == 18
    sequence = _sequence(page, run_id)
    expect(sequence.locator(".seq-col")).to_have_text(PARTICIPANT_COLUMNS)
    overflow = sequence.evaluate("(el) => el.scrollWidth - el.clientWidth")
    assert overflow <= 0, f"the sequence view overflows by {overflow}px at 1024 px"

    # Tool rows: a short stub starting at the coder's lifeline, never a far-right "tools" column.
    coder = _box(sequence.locator(".seq-col", has_text="Coder"))
    lifeline = coder["x"] + coder["width"] / 2
    tool_rows = sequence.locator(".seq-row.tool")
    expect(tool_rows).to_have_count(10)  # write, read, shell, search, shell: five calls, five returns
    for arrow in tool_rows.locator(".seq-arrow").all():
        box = _box(arrow)
        assert abs(box["x"] - lifeline) <= 2 and box["width"] <= 40, (box, lifeline)

    # Instance numbers: the coder ran twice.
    expect(sequence.locator(".seq-row", has_text="Lead delegates to Coder #2")).to_have_count(1)
    expect(sequence.locator(".seq-row", has_text="Coder #1 returns success to Lead")).to_have_count(1)
    shots.save(page, "sequence-fit-1024")

    # Sticky: after scrolling down, the header row is still at the top of the pane.
    scroll_height = sequence.evaluate("(el) => el.scrollHeight - el.clientHeight")
    assert scroll_height > 100, "the run should be taller than the pane"
    sequence.evaluate("(el) => { el.scrollTop = el.scrollHeight; }")
    page.wait_for_function(
        "() => { const s = document.querySelector('[data-testid=sequence-view]');"
        " return s.scrollTop > 100 && Math.abs(s.querySelector('.seq-head').getBoundingClientRect().top"
        " - s.getBoundingClientRect().top) <= 2; }"
    )
    expect(sequence.locator(".seq-col", has_text="Lead")).to_be_in_viewport()
    shots.save(page, "sequence-fit-scrolled")


def test_the_watch_screen_fits_the_sequence_at_1024(run_id: str, page: Any, shots: Shots) -> None:
    """Issue 18, problem 3 in the real shell: at 1024×700, beside the watch screen's side panel, the six
    participant columns still fit without a horizontal scrollbar (the labels' spare room shrinks first)."""
    page.set_viewport_size({"width": 1024, "height": 700})
    page.goto(f"/#watch/{run_id}")
    expect(page.get_by_test_id("watch-status")).to_have_text("Done")
    page.get_by_test_id("view-mode-sequence").click()
    sequence = page.get_by_test_id("sequence-view")
    expect(sequence.locator(".seq-col")).to_have_text(PARTICIPANT_COLUMNS)
    overflow = sequence.evaluate("(el) => el.scrollWidth - el.clientWidth")
    assert overflow <= 0, f"the sequence view overflows by {overflow}px in the watch screen at 1024 px"
    shots.save(page, "sequence-watch-1024")


def test_labels_say_what_and_durations_are_precise(run_id: str, page: Any, shots: Shots) -> None:
    """Issue 18, problems 9 and 8: rows name the path, command, pattern, task and exit code in every
    tier (the failure badge first), and call rows carry their duration to the millisecond."""
    sequence = _sequence(page, run_id)
    rows = sequence.locator(".seq-row")
    expect(rows.filter(has_text="Coder #1 calls Write file · greeting.txt")).to_have_count(1)
    expect(rows.filter(has_text="Coder #1 calls Read file · greeting.txt")).to_have_count(1)
    expect(rows.filter(has_text="Coder #1 calls Shell · exit 3")).to_have_count(1)  # the command
    expect(rows.filter(has_text="⚠ exit 3 · Shell returns error to Coder #1")).to_have_count(1)
    expect(rows.filter(has_text="Coder #2 calls Shell · echo ok")).to_have_count(1)
    expect(rows.filter(has_text="Shell returns success to Coder #2 · exit 0")).to_have_count(1)
    expect(rows.filter(has_text="Coder #2 calls Search text · hello")).to_have_count(1)
    expect(rows.filter(has_text="Lead delegates to Planner · Plan the greeting feature")).to_have_count(1)
    for tier in ("friendly", "whimsical"):
        page.evaluate(f"rvHost.view.setTier('{tier}')")
        expect(rows.filter(has_text="greeting.txt")).not_to_have_count(0)
        expect(rows.filter(has_text="echo ok")).to_have_count(1)
        expect(rows.filter(has_text=re.compile(r"^#\d+⚠ exit 3 · "))).to_have_count(1)  # the badge leads
    page.evaluate("rvHost.view.setTier('detailed')")

    durations = sequence.locator(".seq-row.kind-call .seq-dur").all_inner_texts()
    assert durations and all(re.fullmatch(r"\d+\.\d{3} s|\d+\.\d s|\d+ m \d\d s", d) for d in durations), durations
    assert any(d.startswith("0.") for d in durations), durations  # sub-second calls read e.g. "0.184 s"
    expect(sequence.locator(".seq-row.kind-return .seq-dur:visible")).to_have_count(0)
    shots.save(page, "sequence-labels")


def test_the_time_axis_spaces_rows_by_time(run_id: str, page: Any, shots: Shots) -> None:
    """Issue 18, problem 8: the time-axis toggle spaces rows by wall time (never closer than a row):
    the second of streamed text before the failing shell call opens a visible, labelled gap."""
    sequence = _sequence(page, run_id)
    tops = "(el) => [...el.querySelectorAll('.seq-row')].map((r) => [r.dataset.index | 0, parseFloat(r.style.top)])"
    even = dict(sequence.evaluate(tops))
    assert all(even[i] == 30 * i for i in even), even
    page.get_by_test_id("sequence-time-axis").check()
    expect(sequence.locator(".seq-gap:visible").first).to_contain_text("+1.")
    timed = dict(sequence.evaluate(tops))
    steps = [timed[i] - timed[i - 1] for i in sorted(timed) if i - 1 in timed]
    assert min(steps) >= 30, steps  # the minimum row height holds
    assert max(steps) >= 60, steps  # the slow turn's gap shows
    sequence.evaluate("(el) => { el.scrollTop = 0; }")
    shots.save(page, "sequence-time-axis")
    page.get_by_test_id("sequence-time-axis").uncheck()
    expect(sequence.locator(".seq-gap:visible")).to_have_count(0)


def test_rows_tab_in_order_and_enter_opens_the_card(run_id: str, page: Any, shots: Shots) -> None:
    """Issue 18, problem 11: Tab walks the sequence rows top to bottom (after the column headers, left
    to right), with a visible focus ring; Enter opens the operation card."""
    sequence = _sequence(page, run_id)
    sequence.evaluate("(el) => { el.scrollTop = 0; }")
    sequence.locator(".seq-col").first.focus()
    headers = [page.evaluate("document.activeElement.textContent")]
    for _ in PARTICIPANT_COLUMNS[1:]:
        page.keyboard.press("Tab")
        headers.append(page.evaluate("document.activeElement.textContent"))
    assert headers == PARTICIPANT_COLUMNS
    total = int(page.evaluate("rvHost.stats.work.at(-1).ops"))
    assert total > 20, total  # taller than the pane: rows enter the DOM as the focus moves down
    order = []
    for _ in range(total):
        page.keyboard.press("Tab")
        order.append(page.evaluate("document.activeElement.dataset.index"))
    assert order == [str(i) for i in range(total)], order
    ring = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert ring == "solid"
    expect(page.locator(".seq-row:focus")).to_be_in_viewport()
    shots.save(page, "sequence-focus")
    for _ in range(3):
        page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.dataset.index") == str(total - 4)
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("operation-card")).to_contain_text(f"op-{total - 3}")


def _role(pid: str) -> dict[str, Any]:
    return {"id": pid, "role": pid.split(":")[1], "kind": "role", "instanceId": None}


def _op(n: int, kind: str, src: str, dst: str, lifecycle: str = "settled") -> dict[str, Any]:
    return {
        "id": f"op-{n}", "kind": kind, "stack": "main", "source": src, "destination": dst,
        "startedAt": f"2026-01-01T00:00:{n:02d}.000Z", "settledAt": None if lifecycle == "in_flight" else "x",
        "lifecycle": lifecycle, "outcome": "success" if kind == "return" else None,
        "metrics": {"tokens": 0, "cachedPromptTokens": 0, "elapsedSeconds": 1, "elapsedMs": 1234}
        if kind == "call" else None,
        "severity": None, "note": None, "subject": None,
    }  # fmt: skip


def test_graph_instances_and_eighteen_columns(page: Any, shots: Shots) -> None:
    """Issue 18, problems 9 and 3: the flow graph names a role that ran twice "Coder #2" and keeps its
    nodes in the picture's (Tab) order; eighteen participant columns still work: the view scrolls
    sideways with the row numbers pinned."""
    page.set_viewport_size({"width": 1024, "height": 700})
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
    people = [{"id": "human:root", "role": "human", "kind": "human"}, _role("role:lead:1")]
    people += [_role("role:coder:1"), _role("role:coder:2")]
    ops = [_op(1, "call", "human:root", "role:lead:1"), _op(2, "call", "role:lead:1", "role:coder:1")]
    ops += [_op(3, "return", "role:coder:1", "role:lead:1"), _op(4, "call", "role:lead:1", "role:coder:2", "in_flight")]
    model = {
        "participants": people, "operations": ops, "status": "running",
        "stacks": [{"id": "main", "root": "human:root"}], "activeStack": "main", "activeParticipant": "role:coder:2",
    }  # fmt: skip
    page.evaluate("model => window.demo.render(model, null)", model)
    graph = page.get_by_test_id("flow-graph")
    expect(graph.locator('.fg-node[data-pid="role:coder:2"] .fg-title')).to_have_text("Coder #2")
    expect(graph.locator('.fg-node[data-pid="role:lead:1"] .fg-title')).to_have_text("Lead")
    expect(page.get_by_test_id("now-caption")).to_contain_text("Coder #2")
    focusables = graph.locator("[tabindex='0']").evaluate_all("els => els.map((e) => e.dataset.pid || e.dataset.op)")
    assert focusables == ["human:root", "op-1", "role:lead:1", "op-4", "role:coder:2"], focusables
    shots.save(page, "flowgraph-instances")

    roles = [f"role_{i:02d}" for i in range(18)]
    wide = {
        **model,
        "participants": [people[0], *(_role(f"role:{r}:1") for r in roles)],
        "operations": [_op(i + 1, "call", "human:root" if i == 0 else f"role:{roles[i - 1]}:1", f"role:{r}:1")
                       for i, r in enumerate(roles)],
        "activeParticipant": f"role:{roles[-1]}:1",
    }  # fmt: skip
    page.evaluate("window.demo.setMode('sequence')")
    page.evaluate("model => window.demo.render(model, null)", wide)
    sequence = page.get_by_test_id("sequence-view")
    # The earlier frame's columns keep their places (columns only ever append): 3 + 18 new ones.
    expect(sequence.locator(".seq-col")).to_have_count(21)
    expect(sequence.locator(".seq-col").nth(1)).to_have_text("Lead")
    expect(sequence.locator(".seq-col").nth(3)).to_have_text("Role 00")
    # the columns' width lands with the layout: scroll once the whole range is there (a scroll set before
    # it is clamped to the range of that moment, and stays there)
    page.wait_for_function(
        "() => { const el = document.querySelector('[data-testid=sequence-view]');"
        " return el.scrollWidth - el.clientWidth >= 600; }"
    )
    sequence.evaluate("(el) => { el.scrollLeft = 600; }")
    page.wait_for_function("() => document.querySelector('[data-testid=sequence-view]').scrollLeft >= 600")
    pane = _box(sequence)
    gutter = _box(sequence.locator(".seq-row .seq-gutter").first)
    assert abs(gutter["x"] - pane["x"]) <= 2, (gutter, pane)  # the row numbers stay at the left edge
    expect(sequence.locator(".seq-row .seq-gutter").first).to_have_text("#1")
    shots.save(page, "sequence-18-columns")
    # a new operation while the reader is scrolled sideways: the view stays where they put it
    more = {
        **wide,
        "operations": [*wide["operations"], _op(19, "return", f"role:{roles[-1]}:1", f"role:{roles[-2]}:1")],
    }
    page.evaluate("model => window.demo.render(model, null)", more)
    expect(sequence.locator(".seq-row")).to_have_count(19)
    assert sequence.evaluate("(el) => el.scrollLeft") >= 600


def _write_synthetic(workspace: Any) -> None:
    spec = importlib.util.spec_from_file_location(
        "bench_synthetic_seqfit", REPO / "bench" / "log_window" / "synthetic.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.write_synthetic_run(workspace, SYNTHETIC_RUN, 2_300)


def test_a_long_run_keeps_headers_row_numbers_and_no_blank_rows(ui_service: UiService, page: Any, shots: Shots) -> None:
    """Issue 18, problem 3 on more than 1,000 operations: scrolled to the middle, the headers are pinned,
    every row in the viewport is drawn with its number and a label (virtualized: few rows in the DOM)."""
    _write_synthetic(ui_service.workspace)
    total = ui_service.json(f"/api/runs/{SYNTHETIC_RUN}/flow?window=all")["operationsTotal"]
    assert total > 1_000, total
    page.set_viewport_size({"width": 1024, "height": 700})
    open_host(page)
    mount(page, SYNTHETIC_RUN, flow_query="?window=all")
    expect(page.get_by_test_id("run-status")).to_have_text("Done")
    page.evaluate("rvHost.view.setMode('sequence')")
    sequence = page.get_by_test_id("sequence-view")
    expect(sequence.locator(".seq-col")).to_have_text(["Operator", "Orchestrator", "Planner", "Worker ×8"])
    sequence.evaluate("(el) => { el.scrollTop = el.scrollHeight / 2; }")
    page.wait_for_function(
        """() => {
          const s = document.querySelector('[data-testid=sequence-view]');
          const want = Math.floor((s.scrollTop - 36) / 30);
          return [...s.querySelectorAll('.seq-row')].some((r) => Number(r.dataset.index) === want + 3);
        }"""
    )
    report = sequence.evaluate(
        """(el) => {
          const pane = el.getBoundingClientRect();
          const head = el.querySelector('.seq-head').getBoundingClientRect();
          const rows = [...el.querySelectorAll('.seq-row')];
          const seen = rows.map((r) => ({ r, box: r.getBoundingClientRect() }))
            .filter(({ box }) => box.top >= head.bottom - 1 && box.bottom <= pane.bottom + 1);
          return {
            headTop: head.top - pane.top, inDom: rows.length,
            visible: seen.map(({ r }) => Number(r.dataset.index)),
            numbers: seen.map(({ r }) => r.querySelector('.seq-gutter').textContent),
            labels: seen.map(({ r }) => r.querySelector('.seq-text').textContent),
          };
        }"""
    )
    assert abs(report["headTop"]) <= 2, report["headTop"]
    visible = report["visible"]
    assert len(visible) >= 10 and visible == list(range(visible[0], visible[0] + len(visible))), visible
    assert all(re.fullmatch(r"#\d+", n) for n in report["numbers"]), report["numbers"]
    assert all(label.strip() for label in report["labels"]), report["labels"]
    assert report["inDom"] < 120, report["inDom"]
    expect(sequence.locator(".seq-col", has_text="Worker")).to_be_in_viewport()
    shots.save(page, "sequence-long-run")


def test_layout_and_duration_helpers(page: Any) -> None:
    """Issue 18, problems 3 and 8: the pure helpers behind the view — append-only participant columns,
    the adaptive column layout, time-axis row positions and their bisection, millisecond durations."""
    open_host(page)
    result = page.evaluate(
        """async () => {
          const L = await import('/static/seqlayout.js');
          const { preciseDuration, instanceNumber } = await import('/static/labels.js');
          const p = (id, kind, role) => ({ id, kind, role });
          const first = L.growColumns([], [p('human:root', 'human', 'human'), p('role:lead:1', 'role', 'lead'),
            p('tool:read_file:1', 'tool', 'read_file'), p('role:coder:1', 'role', 'coder')]);
          const grown = L.growColumns(first, [p('role:coder:2', 'role', 'coder'),
            p('interrupt:1', 'interrupt', 'interrupt'), p('role:planner:1', 'role', 'planner')]);
          const same = L.growColumns(grown, [p('role:lead:2', 'role', 'lead')]) === grown;
          const ops = ['00.000', '00.100', '03.100', '03.100', 'garbage']
            .map((t) => ({ startedAt: `2026-01-01T00:00:${t}Z` }));
          const even = L.rowTops(ops, false);
          const timed = L.rowTops(ops, true);
          return {
            first, grown, same,
            narrow: L.columnLayout(660, 6), wide: L.columnLayout(2000, 4), crowded: L.columnLayout(900, 18),
            even: [...even.tops], timed: [...timed.tops], gaps: [...timed.gaps],
            at: [-5, 33, 34, 10_000].map((y) => L.rowAt(timed.tops, y)),
            durations: [0.4, 184, 2345, 65_000, 3_725_000, null].map(preciseDuration),
            numbers: ['role:coder:3', 'human:root'].map(instanceNumber),
          };
        }"""
    )
    assert result["first"] == ["human", "lead", "coder"]  # a tool has no column
    assert result["grown"] == ["human", "lead", "coder", "interrupt", "planner"] and result["same"]
    assert result["narrow"] == {"colW": 84, "tail": 98}  # fits 660 px: the tail gives way first
    assert result["wide"] == {"colW": 240, "tail": 120}
    assert result["crowded"] == {"colW": 84, "tail": 0}  # 18 columns scroll sideways
    assert result["even"] == [0, 30, 60, 90, 120, 150]
    # 100 ms adds 4 px, 3 s adds 120 px, no gap keeps the 30 px minimum, an unparsable time 30 px
    assert result["timed"] == [0, 34, 184, 214, 244, 274]
    assert result["gaps"] == [0, 100, 3000, 0, 0]
    assert result["at"] == [0, 0, 1, 4]
    assert result["durations"] == ["0.000 s", "0.184 s", "2.3 s", "1 m 05 s", "1 h 02 m", ""]
    assert result["numbers"] == ["3", ""]
