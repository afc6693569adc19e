"""The history screen in a real browser (issue 18, problem 11): rows are links that look it, summaries are
plain one-line text, each row shows its start date and time and its duration, a continuation is grouped
under the run it continues, and nothing overflows at 1024×700. Also: loop checks are listed with the
interrupts."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from tests.web.harness import UI_ROLES, Shots, UiService, call, finish, start_ui_service, turn

LONG = "Refactor" + "everything" * 30  # one unbreakable word, far wider than a 1024 px row
#: A loop check every 2 tool calls on `quick` (everyToolCalls 1 × the quick factor 2).
LOOP_CHECKS = {"handlerRole": "loop_detector", "everyToolCalls": 1, "everyTokens": 10_000_000}


@pytest.fixture(scope="module")
def ui_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiService]:
    """The usual service plus a loop-check handler role (single-turn runs never reach its cadence)."""
    roles = {**UI_ROLES, "loop_detector": ["trigger_interrupt", "finish"]}
    with start_ui_service(
        tmp_path_factory.mktemp("ui"), roles=roles, executor={"interruptTriggers": LOOP_CHECKS}
    ) as service:
        yield service


def _run(ui_service: UiService, task: str, summary: str, **body: Any) -> str:
    ui_service.script([turn("lead", finish(f"Did: {task[:20]}"))], summary=summary)
    response = ui_service.http.post("/api/runs", json={"task": task, **body})
    assert response.status_code == 201, response.text
    run_id = response.json()["runId"]
    ui_service.run_status(run_id, "success")
    ui_service.wait_for(
        lambda: next((r["summary"] for r in ui_service.runs() if r["runId"] == run_id), None), what="the summary"
    )
    return run_id


def test_history_rows_are_dated_timed_grouped_links_that_fit_1024(
    page: Page, ui_service: UiService, shots: Shots
) -> None:
    """Issue 18, problem 11: date, duration, plain summary, grouping, clickable rows, no overflow at 1024."""
    origin = _run(ui_service, "Build the thing", "**Built** the `thing` — see [the docs](http://example.com)")
    follow = _run(ui_service, "Polish the thing", "Polished it", continuesFrom=origin)
    other = _run(ui_service, LONG, LONG)

    page.set_viewport_size({"width": 1024, "height": 700})
    page.goto("/#history")
    rows = page.get_by_test_id("history-row")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_have_attribute("data-run-id", other)  # the newest thread first
    expect(rows.nth(1)).to_have_attribute("data-run-id", origin)  # then the thread of origin + continuation
    expect(rows.nth(2)).to_have_attribute("data-run-id", follow)
    expect(rows.nth(1)).to_have_attribute("data-depth", "0")
    expect(rows.nth(2)).to_have_attribute("data-depth", "1")

    first = rows.nth(1)
    expect(first.get_by_test_id("history-summary")).to_have_text("Built the thing — see the docs")
    expect(first.get_by_test_id("history-status")).to_have_text("Done")
    expect(first.get_by_test_id("history-when")).to_have_text(re.compile(r"^(Today|Yesterday) \d\d:\d\d$"))
    expect(first.get_by_test_id("history-duration")).to_have_text(re.compile(r"^(< 1s|\d+s)$"))
    offsets = page.evaluate(
        """() => {
          const rows = [...document.querySelectorAll('[data-testid="history-row"]')];
          return { scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth,
            rights: rows.map((r) => r.getBoundingClientRect().right),
            lefts: rows.map((r) => r.getBoundingClientRect().left),
            cursor: getComputedStyle(rows[0].querySelector('[data-testid="history-open"]')).cursor };
        }"""
    )
    assert offsets["scroll"] <= offsets["client"], offsets
    assert max(offsets["rights"]) <= offsets["client"], offsets
    assert offsets["lefts"][2] > offsets["lefts"][1], offsets  # the continuation is indented
    assert offsets["cursor"] == "pointer"
    shots.save(page, "history-1024")

    # The whole row is a link, reachable and opened by the keyboard.
    link = first.get_by_test_id("history-open")
    expect(link).to_have_attribute("href", f"#watch/{origin}")
    link.focus()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(f"#watch/{origin}$"))
    expect(page.get_by_test_id("watch-run-id")).to_have_text(origin)
    expect(page.get_by_test_id("watch-continued-link")).to_have_text(follow)
    ui_service.wait_idle()


def test_the_history_helpers(page: Page) -> None:
    """Issue 18, problem 11: plain summaries, readable start times, durations and threads, as pure functions."""
    page.goto("/#history")
    out = page.evaluate(
        """async () => {
          const { plainLine, startedAt, runDuration, threads } = await import("/static/history.js");
          const now = new Date(2026, 11, 2, 15, 30);
          const run = (runId, continuesFrom = null) => ({ runId, continuesFrom });
          return {
            plain: [plainLine("# **Fixed** the _parser_ in `lex.py`\\nmore"), plainLine("- see [docs](http://x) and <https://y>"),
              plainLine("a * b * c"), plainLine("snake_case_name stays"), plainLine("x".repeat(300)).length],
            when: [startedAt(new Date(2026, 11, 2, 14, 2).toISOString(), now),
              startedAt(new Date(2026, 11, 1, 9, 15).toISOString(), now),
              startedAt(new Date(2026, 10, 28, 9, 5).toISOString(), now),
              startedAt(new Date(2025, 11, 1, 9, 15).toISOString(), now), startedAt("nonsense", now),
              startedAt(null, now)],
            took: [runDuration({ startTime: "2026-01-01T00:00:00Z", endTime: "2026-01-01T00:02:05Z" }),
              runDuration({ startTime: "2026-01-01T00:00:00Z", endTime: "2026-01-01T00:00:00.400Z" }),
              runDuration({ startTime: "2026-01-01T00:00:00Z", status: "running" }, Date.parse("2026-01-01T00:00:09Z")),
              runDuration({ startTime: "2026-01-01T00:00:00Z", status: "error" })],
            threads: threads([run("r5"), run("r4", "r1"), run("r3"), run("r2", "r1"), run("r1"), run("r6", "gone"),
              run("r7", "r4")]).map((t) => [t.run.runId, t.depth, t.thread]),
          };
        }"""
    )
    assert out["plain"] == [
        "Fixed the parser in lex.py", "see docs and https://y", "a * b * c", "snake_case_name stays", 160
    ]  # fmt: skip
    assert out["when"] == ["Today 14:02", "Yesterday 09:15", "28 Nov 09:05", "1 Dec 2025 09:15", "", ""]
    assert out["took"] == ["2m 05s", "< 1s", "9s", ""]
    assert out["threads"] == [
        ["r1", 0, "r1"], ["r2", 1, "r1"], ["r4", 1, "r1"], ["r7", 2, "r1"],
        ["r6", 0, "r6"], ["r5", 0, "r5"], ["r3", 0, "r3"],
    ]  # fmt: skip


def test_a_loop_check_is_listed_with_the_interrupts_and_its_verdict_reaches_the_inbox(
    page: Page, ui_service: UiService, shots: Shots
) -> None:
    """Issue 18, problems 11 and 5: a real loop check in the interrupt history, its verdict as inbox news."""
    ui_service.script(
        [
            turn("lead", call("agent", role="coder", task="go round in circles"), last="Circle"),
            turn("coder", call("run_shell", command="sleep 2")),
            turn("coder", call("run_shell", command="echo same")),
            turn(
                "loop_detector", call("trigger_interrupt", targetRole="coder-1-2", action="redirect", reason="Try ls.")
            ),
            turn("loop_detector", finish("redirected")),
            turn("coder", finish("took the hint"), last="Try ls."),
            turn("lead", finish("Out of the circle."), last="took the hint"),
        ]
    )
    page.goto("/#watch")
    run_id = ui_service.http.post("/api/runs", json={"task": "Circle", "effort": "quick"}).json()["runId"]
    expect(page.get_by_test_id("watch-run-id")).to_have_text(run_id)  # watching before the verdict arrives
    result = page.get_by_test_id("result-modal")
    expect(result).to_be_visible()
    result.get_by_test_id("result-close").click()
    entry = page.get_by_test_id("interrupt-history").locator('[data-testid="interrupt-entry"][data-kind="loop_check"]')
    expect(entry).to_have_attribute("data-state", "decided")
    expect(entry.get_by_test_id("interrupt-state")).to_have_text("Redirected")
    expect(entry.get_by_test_id("interrupt-message-text")).to_have_text("Checked coder-1-2 for a loop")
    expect(entry.get_by_test_id("interrupt-reason")).to_have_text("Try ls.")
    expect(page.get_by_test_id("watch-main")).not_to_have_class(re.compile(r"\bside-empty\b"))
    shots.save(page, "watch-loop-check")

    expect(page.get_by_test_id("inbox-count")).to_have_text("1")
    page.get_by_test_id("inbox-open").click()
    notice = page.get_by_test_id("inbox-modal").get_by_test_id("inbox-notice")
    expect(notice).to_have_attribute("data-kind", "loop_check")
    expect(notice).to_contain_text("Loop check on coder-1-2: Redirected")
    expect(notice.get_by_test_id("inbox-notice-body")).to_have_text("Try ls.")
    shots.save(page, "inbox-loop-verdict")
    notice.get_by_test_id("inbox-dismiss").click()
    expect(page.get_by_test_id("inbox-empty")).to_be_visible()
    page.get_by_test_id("inbox-close").click()
    ui_service.wait_idle()


def test_loop_checks_render_in_the_interrupt_history(page: Page, shots: Shots) -> None:
    """Issue 18, problem 11: the interrupt history lists loop checks (checking, then the verdict and reason)."""
    page.goto("/#history")
    out = page.evaluate(
        """async () => {
          const { interruptHistory } = await import("/static/steer.js");
          const at = "2026-01-01T00:00:00Z";
          const list = interruptHistory({ status: "running", interrupts: [
            { kind: "loop_check", index: 4, at, target: "coder-1-2", handler: "lc", state: "decided",
              verdict: "redirect", reason: "Try listing the folder first.", resolvedAt: at },
            { kind: "inquiry", index: 7, askedAt: at, message: "How far?", state: "waiting", answer: null },
            { kind: "loop_check", index: 9, at, target: "coder-1-3", handler: "lc", state: "checking", verdict: null,
              reason: null, resolvedAt: null },
          ] });
          document.querySelector('[data-testid="screen-history"]').append(list);
          return [...list.querySelectorAll('[data-testid="interrupt-entry"]')].map((e) => ({
            kind: e.dataset.kind, state: e.dataset.state,
            badge: e.querySelector('[data-testid="interrupt-state"]').textContent,
            text: e.querySelector('[data-testid="interrupt-message-text"]').textContent,
            reason: e.querySelector('[data-testid="interrupt-reason"]')?.textContent ?? null }));
        }"""
    )
    assert out == [
        {"kind": "loop_check", "state": "decided", "badge": "Redirected", "text": "Checked coder-1-2 for a loop",
         "reason": "Try listing the folder first."},
        {"kind": "inquiry", "state": "waiting", "badge": "Waiting", "text": "How far?", "reason": None},
        {"kind": "loop_check", "state": "checking", "badge": "Checking", "text": "Checking coder-1-3 for a loop…",
         "reason": None},
    ]  # fmt: skip
    shots.save(page, "interrupts-loop-checks")
