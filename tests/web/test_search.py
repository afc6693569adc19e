"""Issue 18, problem 6 ("no search, no jump to errors") and the "Search and jump" build bullet, in real
Chromium against a real ``serve``.

The runs are written into the served workspace: a scripted story in the engine's event shapes
(``tests/flow/script.py``: a coder whose shell exits 1 and whose read finds nothing, a question, an
operator inquiry and a loop check) and the bench's synthetic run of ~2,000 operations. The run view is
mounted on the bare host page (``runview_page.py``), which polls like the shell and offers "Show all".
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

from playwright.sync_api import expect
from tests.flow.script import Script
from tests.helpers import REPO
from tests.web.harness import Shots, UiService
from tests.web.runview_page import mount, open_host

from orchestrator.engine.runfolder import RunMeta, runs_root, write_meta

STORY_RUN = "run-20260101-000101"
LONG_RUN = "run-20260101-000102"


def _story() -> list[dict[str, Any]]:
    s = Script()
    lead = s.start("lead", "Fix the failing date test.")
    s.think(lead)
    s.reply(lead, 900, 40)
    coder = s.start("coder", "Make tests/test_dates.py pass.", lead)
    s.think(coder)
    s.reply(coder, 1200, 30)
    s.tool_call(coder, "run_shell", command="pytest -q tests/test_dates.py")
    s.tool_result(coder, "run_shell", {"command": "pytest", "exitCode": 1, "stderr": "AssertionError: boom\n"})
    s.think(coder)
    s.reply(coder, 1400, 30)
    s.tool_call(coder, "read_file", path="src/dates_missing.py")
    s.tool_result(coder, "read_file", error=("not_found", "no such file: src/dates_missing.py"))
    s.think(coder)
    s.reply(coder, 1500, 30)
    s.ask(coder, "q-1", "Should dates be stored in UTC?", "The test compares local times.")
    s.answer("q-1", "Yes, UTC everywhere.")
    s.interrupt("inquiry", "inquiry_responder", coder, "What is the coder doing right now?")
    helper = s.start("inquiry_responder", "The operator asks: What is the coder doing right now?")
    s.think(helper)
    s.reply(helper, 700, 20)
    s.finish(helper, "It is fixing the date parser.")
    resolved = {"trigger": "inquiry", "handler": "inquiry_responder", "target": coder.role_id, "action": "answered"}
    s.emit("interrupt_resolved", {**resolved, "summary": "It is fixing the date parser."})
    s.think(coder)
    s.reply(coder, 1600, 30)
    s.tool(coder, "run_shell", {"command": "pytest", "exitCode": 0}, command="pytest -q")
    s.finish(coder, "Dates are parsed as UTC; the test passes.")
    s.think(lead)
    s.reply(lead, 1000, 20)
    s.finish(lead, "The date test passes.")
    return s.events


def _meta(run_dir: Path, status: str = "success") -> None:
    write_meta(
        run_dir,
        RunMeta(
            run_id=run_dir.name,
            task="Fix the failing date test.",
            status=status,
            effort="standard",
            log_level="standard",
            guild_path="guild",
            start_time="2026-01-01T09:00:00.000Z",
            end_time="2026-01-01T09:01:00.000Z",
        ),
    )


def _story_run(ui_service: UiService) -> str:
    run_dir = runs_root(ui_service.workspace) / STORY_RUN
    if not run_dir.exists():
        run_dir.mkdir(parents=True)
        (run_dir / "log.jsonl").write_text("".join(json.dumps(e) + "\n" for e in _story()))
        _meta(run_dir)
    return STORY_RUN


def _long_run(ui_service: UiService) -> str:
    if not (runs_root(ui_service.workspace) / LONG_RUN).exists():
        spec = importlib.util.spec_from_file_location("bench_synthetic", REPO / "bench" / "log_window" / "synthetic.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        module.write_synthetic_run(ui_service.workspace, LONG_RUN, 4_100)
    return LONG_RUN


def test_search_finds_a_file_path_and_a_click_jumps_to_its_call(ui_service: UiService, page: Any, shots: Shots) -> None:
    """Issue 18, problem 6: server-side search over the run; a hit opens its operation and its turn."""
    run_id = _story_run(ui_service)
    open_host(page)
    mount(page, run_id)
    page.evaluate("rvHost.view.setMode('sequence')")
    expect(page.get_by_test_id("run-status")).to_have_text("Done")
    page.keyboard.press("/")  # focuses the search box
    box = page.get_by_test_id("search-input")
    expect(box).to_be_focused()
    box.fill("src/dates_missing.py")
    hits = page.get_by_test_id("search-results").get_by_test_id("search-hit")
    expect(hits).to_have_count(2)  # the read's arguments and its not_found result
    expect(hits.first).to_contain_text("read_file")
    expect(hits.first).to_contain_text("path: src/dates_missing.py")
    expect(hits.last).to_have_class(re.compile(r"sev-warn"))
    expect(hits.first.locator("mark")).to_have_text("src/dates_missing.py")
    answer = ui_service.json(f"/api/runs/{run_id}/search", params={"q": "src/dates_missing.py"})
    call_op = answer["hits"][0]["operationId"]
    shots.save(page, "search-results")

    hits.first.click()
    card = page.get_by_test_id("operation-card")
    expect(card).to_have_attribute("data-op", call_op)
    expect(card).to_contain_text("Read file")
    expect(page.locator(f"[data-testid=sequence-view] .seq-row.focused[data-op='{call_op}']")).to_be_visible()
    inspector = page.get_by_test_id("inspector")
    expect(inspector).to_be_visible()
    expect(inspector).to_contain_text("coder")
    shots.save(page, "search-jump")
    page.keyboard.press("Escape")
    expect(inspector).to_be_hidden()


def test_n_and_p_cycle_the_landmarks_in_order(ui_service: UiService, page: Any, shots: Shots) -> None:
    """Issue 18, problem 6: `n` / `p` jump to the next / previous error, question or interrupt."""
    run_id = _story_run(ui_service)
    marks = ui_service.json(f"/api/runs/{run_id}/search", params={"landmarks": "1"})["landmarks"]
    assert [m["category"] for m in marks] == ["warn", "warn", "question", "interrupt"]
    flow = ui_service.json(f"/api/runs/{run_id}/flow")
    ops = {op["id"]: op for op in flow["operations"]}
    assert [ops[m["operationId"]]["severity"] for m in marks[:2]] == ["warn", "warn"]
    open_host(page)
    mount(page, run_id)
    page.evaluate("rvHost.view.setMode('sequence')")
    indicator = page.get_by_test_id("landmark-indicator")
    expect(indicator).to_have_text(f"– of {len(marks)} problems")
    card = page.get_by_test_id("operation-card")
    page.locator("body").click(position={"x": 2, "y": 2})
    for number, mark in enumerate(marks, start=1):
        page.keyboard.press("n")
        expect(card).to_have_attribute("data-op", mark["operationId"])
        expect(indicator).to_have_text(f"{number} of {len(marks)} problems")
        row = page.locator(f"[data-testid=sequence-view] .seq-row.focused[data-op='{mark['operationId']}']")
        expect(row).to_be_visible()
        expect(page.get_by_test_id("inspector")).to_be_visible()
        if number == 1:
            shots.save(page, "landmark-first")
    page.keyboard.press("n")  # wraps to the first
    expect(card).to_have_attribute("data-op", marks[0]["operationId"])
    for mark in reversed(marks):  # p goes back, wrapping to the last
        page.keyboard.press("p")
        expect(card).to_have_attribute("data-op", mark["operationId"])
    # the stepper buttons do the same; the question landmark lands on the answerer call
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("inspector")).to_be_hidden()
    page.get_by_test_id("landmark-next").click()
    expect(card).to_have_attribute("data-op", marks[1]["operationId"])
    assert ops[marks[2]["operationId"]]["destination"].startswith("human:answerer")
    assert ops[marks[2]["operationId"]]["kind"] == "call"
    shots.save(page, "landmark-question")


def test_copy_link_and_the_address_name_the_operation(ui_service: UiService, page: Any, browser: Any) -> None:
    """Issue 18, problem 6: linkable operations (``#watch/<run>/op-N``)."""
    run_id = _story_run(ui_service)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=ui_service.base_url)
    open_host(page)
    mount(page, run_id)
    expect(page.get_by_test_id("run-status")).to_have_text("Done")
    page.evaluate("history.replaceState(null, '', '#watch')")  # as the shell's watch screen
    history = page.evaluate("history.length")
    page.evaluate("rvHost.view.focusOperation('op-4')")
    card = page.get_by_test_id("operation-card")
    expect(card).to_have_attribute("data-op", "op-4")
    page.wait_for_function("(id) => location.hash === `#watch/${id}/op-4`", arg=run_id)
    assert page.evaluate("history.length") == history  # replaceState: no entry per jump
    inspector = page.get_by_test_id("inspector")
    expect(inspector).to_be_visible()  # opened at the located event's turn (a link has no hit to tell)
    page.keyboard.press("Escape")
    expect(inspector).to_be_hidden()
    card.get_by_test_id("card-copy-link").click()
    expect(card.get_by_test_id("card-copy-link")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == f"{ui_service.base_url}/#watch/{run_id}/op-4"


def test_focus_operation_lands_outside_the_window_of_a_long_run(ui_service: UiService, page: Any, shots: Shots) -> None:
    """Issue 18, problem 6 on a run of more than 1,000 operations: a jump to an operation the windowed
    flow answer left out asks for the whole model and still lands on it."""
    run_id = _long_run(ui_service)
    windowed = ui_service.json(f"/api/runs/{run_id}/flow")
    assert windowed["operationsTotal"] > 1_000 and windowed["operationsOmitted"] > 0
    target = "op-7"
    assert target not in {op["id"] for op in windowed["operations"]}
    found = ui_service.json(f"/api/runs/{run_id}/search", params={"q": "tests/test_step_3.py", "limit": "5"})
    assert found["hits"] and all("test_step_3.py" in hit["snippet"] for hit in found["hits"])
    open_host(page)
    mount(page, run_id, interval_ms=300)
    page.evaluate("rvHost.view.setMode('sequence')")
    expect(page.get_by_test_id("omitted-note")).to_be_visible()
    page.evaluate(f"rvHost.view.focusOperation('{target}')")
    row = page.locator(f"[data-testid=sequence-view] .seq-row.focused[data-op='{target}']")
    expect(row).to_be_visible()
    expect(page.get_by_test_id("omitted-note")).to_be_hidden()
    expect(page.get_by_test_id("operation-card")).to_have_attribute("data-op", target)
    expect(page.get_by_test_id("inspector")).to_be_visible()
    shots.save(page, "focus-long-run")


def test_the_shell_watch_screen_searches_and_jumps_at_1024(ui_service: UiService, page: Any, shots: Shots) -> None:
    """Issue 18, problem 6 in the real shell at 1024×700: `n` jumps to the first landmark and the address
    names it (``#watch/<run>/op-N``, replaced, not pushed)."""
    run_id = _story_run(ui_service)
    marks = ui_service.json(f"/api/runs/{run_id}/search", params={"landmarks": "1"})["landmarks"]
    page.set_viewport_size({"width": 1024, "height": 700})
    page.goto(f"/#watch/{run_id}")
    expect(page.get_by_test_id("run-status")).to_have_text("Done")
    indicator = page.get_by_test_id("landmark-indicator")
    expect(indicator).to_have_text(f"– of {len(marks)} problems")
    history = page.evaluate("history.length")
    page.keyboard.press("n")
    expect(page.get_by_test_id("operation-card")).to_have_attribute("data-op", marks[0]["operationId"])
    expect(indicator).to_have_text(f"1 of {len(marks)} problems")
    page.wait_for_function("(hash) => location.hash === hash", arg=f"#watch/{run_id}/{marks[0]['operationId']}")
    assert page.evaluate("history.length") == history
    expect(page.get_by_test_id("inspector")).to_be_visible()
    page.keyboard.press("Escape")
    page.keyboard.press("/")
    expect(page.get_by_test_id("search-input")).to_be_focused()
    page.keyboard.type("is:ques")  # a half-typed filter says what it takes (no 400 round trip)
    expect(page.get_by_test_id("search-results")).to_contain_text("is: takes problem, error, warn")
    page.keyboard.type("tion utc")
    expect(page.get_by_test_id("search-hit")).to_have_count(1)
    expect(page.get_by_test_id("search-hit")).to_contain_text("Should dates be stored in UTC?")
    shots.save(page, "search-shell-1024")
    page.keyboard.press("n")  # typed into the box, not a jump
    expect(page.get_by_test_id("search-input")).to_have_value("is:question utcn")
    expect(page.get_by_test_id("search-results")).to_contain_text("No matches.")
