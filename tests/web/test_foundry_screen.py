"""The Foundry screen in a real browser: the workspace's searches from ``GET /api/foundry``, newest first,
each with its verdict, the seed's and the best candidate's scores with 95 % intervals, and its candidates;
an empty workspace says how to start one; each run of a candidate opens in the run view (issue 24)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from playwright.sync_api import Page, expect
from tests.foundry.foundry_fixtures import sim_run_archive, write_search
from tests.web.harness import Shots, UiService


def test_the_foundry_screen_lists_searches_with_intervals(page: Page, ui_service: UiService, shots: Shots) -> None:
    searches = ui_service.workspace / "benchmarks" / ".results"
    for folder in searches.glob("*"):
        for path in sorted(folder.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        folder.rmdir()
    page.goto("/#foundry")
    expect(page.get_by_test_id("screen-foundry")).to_be_visible()
    expect(page.get_by_test_id("nav-foundry")).to_have_attribute("aria-current", "page")
    expect(page.get_by_test_id("foundry-empty")).to_contain_text("orchestrator foundry SUITE_DIR")

    older = write_search(searches / "20260101-000000", improved=False)
    os.utime(older / "summary.json", (1_000_000, 1_000_000))
    write_search(searches / "20260102-000000")
    page.reload()
    cards = page.get_by_test_id("foundry-search")
    expect(cards).to_have_count(2)
    newest = cards.nth(0)
    expect(newest).to_contain_text("benchmarks/.results/20260102-000000")
    expect(newest.get_by_test_id("foundry-verdict")).to_contain_text("is better than the seed")
    expect(newest.get_by_test_id("foundry-seed")).to_have_text("0.00 [0.00, 0.49] · 0/4")
    expect(newest.get_by_test_id("foundry-best")).to_have_text("1.00 [0.51, 1.00] · 4/4")
    rows = newest.get_by_test_id("foundry-candidate")
    expect(rows).to_have_count(2)
    expect(rows.nth(1)).to_contain_text("prompt:prompts/orchestrator.md")
    expect(rows.nth(1)).to_contain_text("best")
    expect(cards.nth(1).get_by_test_id("foundry-verdict")).to_contain_text("no candidate is better than the seed")
    # the interval bar spans low..high of the track
    track = newest.get_by_test_id("foundry-best-bar").bounding_box()
    span = newest.get_by_test_id("foundry-best-bar").locator(".fd-range").bounding_box()
    assert track is not None and span is not None
    assert abs(span["x"] - (track["x"] + 0.51 * track["width"])) < 3
    assert abs(span["x"] + span["width"] - (track["x"] + track["width"])) < 3
    shots.save(page, "foundry-1024", full_page=True)
    # the fifth screen button keeps the top bar one row from 900 px up, and nothing overflows
    page.set_viewport_size({"width": 900, "height": 700})
    sizes = page.evaluate(
        """() => ({
          bar: document.querySelector(".topbar").getBoundingClientRect().height,
          inbox: document.querySelector('[data-testid="inbox-open"]').getBoundingClientRect().height,
          scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth,
        })"""
    )
    assert sizes["bar"] < 2 * sizes["inbox"], sizes
    assert sizes["scroll"] <= sizes["client"], sizes
    shots.save(page, "foundry-900")


def test_the_matrix_lineage_diffs_and_plot_fit_at_390_px(page: Page, ui_service: UiService, shots: Shots) -> None:
    searches = ui_service.workspace / "benchmarks" / ".results"
    for folder in searches.glob("*"):
        for path in sorted(folder.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        folder.rmdir()
    folder = write_search(searches / "20260103-000000", improved=False)
    seed_id = json.loads((folder / "summary.json").read_text())["candidates"][0]["id"]
    (folder / "cache" / seed_id / "bench_0" / "3.json").write_text('{"status": "error"}')
    page.goto("/#foundry")
    card = page.get_by_test_id("foundry-search")
    cells = card.get_by_test_id("foundry-matrix").get_by_test_id("foundry-cell")
    expect(cells).to_have_count(2)
    expect(cells.nth(0)).to_contain_text("✓0 ✗3 !1")
    expect(cells.nth(0)).to_contain_text("[0.00, 0.49]")
    expect(cells.nth(1)).to_contain_text("✓1 ✗3 !0")
    expect(cells.nth(1)).to_contain_text("[0.05, 0.70]")
    nodes = card.get_by_test_id("foundry-lineage").get_by_test_id("foundry-node")
    expect(nodes).to_have_count(2)
    expect(nodes.nth(0)).to_have_attribute("data-depth", "0")
    expect(nodes.nth(1)).to_have_attribute("data-depth", "1")
    # the child sits inside its parent's item, indented further right
    assert nodes.nth(0).locator("[data-testid=foundry-node]").count() == 1
    root_box, child_box = nodes.nth(0).bounding_box(), nodes.nth(1).bounding_box()
    assert root_box is not None and child_box is not None and child_box["x"] > root_box["x"] + 5
    # the child's changed prompt opens as a diff against its parent's text
    diff = card.get_by_test_id("foundry-candidate").nth(1).get_by_test_id("foundry-diff")
    expect(diff.locator("pre")).to_be_hidden()
    diff.locator("summary").click()
    expect(diff.locator("pre")).to_contain_text("+You are the orchestrator. Always write done.txt")
    expect(diff.locator("pre")).to_contain_text("-You are the orchestrator.")
    # the plot: a point per candidate in evaluation order, the better one drawn higher
    points = card.get_by_test_id("foundry-plot").locator("[data-testid=foundry-point]")
    expect(points).to_have_count(2)
    seed_y, child_y = (float(points.nth(i).get_attribute("cy") or "nan") for i in (0, 1))
    seed_x, child_x = (float(points.nth(i).get_attribute("cx") or "nan") for i in (0, 1))
    assert child_y < seed_y and child_x > seed_x
    shots.save(page, "foundry-matrix-1024", full_page=True)
    for width in (1024, 390):
        page.set_viewport_size({"width": width, "height": 800})
        sizes = page.evaluate(
            "() => ({scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth})"
        )
        assert sizes["scroll"] <= sizes["client"], (width, sizes)
    shots.save(page, "foundry-matrix-390", full_page=True)


def test_a_running_search_shows_its_progress_and_updates_live(page: Page, ui_service: UiService, shots: Shots) -> None:
    searches = ui_service.workspace / "benchmarks" / ".results"
    for folder in searches.glob("*"):
        for path in sorted(folder.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        folder.rmdir()
    folder = write_search(searches / "20260104-000000")
    finished = json.loads((folder / "summary.json").read_text())
    (folder / "summary.json").write_text(json.dumps(finished | {"status": "running", "metricCalls": 6}))
    page.goto("/#foundry")
    card = page.get_by_test_id("foundry-search")
    expect(card.get_by_test_id("foundry-status")).to_have_text("running")
    bar = card.get_by_test_id("foundry-progress")
    expect(bar).to_contain_text("running: 6/20 metric calls")
    expect(bar).to_have_attribute("aria-valuenow", "6")
    shots.save(page, "foundry-running")
    # the search goes on and ends: the screen follows without a reload
    (folder / "summary.json").write_text(json.dumps(finished | {"status": "running", "metricCalls": 10}))
    expect(bar).to_contain_text("running: 10/20 metric calls", timeout=10_000)
    (folder / "summary.json").write_text(json.dumps(finished))
    expect(card.get_by_test_id("foundry-status")).to_have_text("finished", timeout=10_000)
    expect(card.get_by_test_id("foundry-progress")).to_have_count(0)


def test_a_run_of_a_candidate_opens_in_the_run_view(
    page: Page, ui_service: UiService, shots: Shots, tmp_path: Path
) -> None:
    searches = ui_service.workspace / "benchmarks" / ".results"
    for folder in searches.glob("*"):
        for path in sorted(folder.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        folder.rmdir()
    write_search(searches / "20260105-000000", archive=sim_run_archive(tmp_path))
    page.goto("/#foundry")
    cells = page.get_by_test_id("foundry-cell")
    expect(cells).to_have_count(2)
    seed_cell, child_cell = cells.nth(0), cells.nth(1)
    expect(seed_cell.get_by_test_id("foundry-run")).to_have_text(["✗0", "✗1", "✗2", "✗3"])
    runs = child_cell.get_by_test_id("foundry-run")
    expect(runs).to_have_text(["✓0", "✓1", "✓2", "✓3"])
    shots.save(page, "foundry-runs")

    runs.nth(1).click()
    expect(page).to_have_url(
        re.compile(r"#watch/foundry~benchmarks~\.results~20260105-000000~[0-9a-f]+~bench_0~1~run-")
    )
    expect(page.get_by_test_id("watch-foundry")).to_contain_text("bench_0 · repeat 1")
    expect(page.get_by_test_id("watch-task")).to_have_text("Write the file out_0.txt.")
    for control in ("watch-interrupt", "watch-stop", "watch-next"):
        expect(page.get_by_test_id(control)).to_be_hidden()
    rows = page.get_by_test_id("call-tree").get_by_test_id("call-tree-row")
    expect(rows).to_have_count(1)
    expect(rows.nth(0)).to_have_attribute("data-role", "orchestrator")
    rows.nth(0).click()
    inspector = page.get_by_test_id("inspector")
    turns = inspector.get_by_test_id("inspector-transcript").get_by_test_id("transcript-turn")
    expect(turns.first).to_be_visible()
    expect(inspector.get_by_test_id("inspector-transcript")).to_contain_text("echo ok > out_0.txt")
    shots.save(page, "foundry-run-inspector")
    page.keyboard.press("Escape")
    expect(inspector).to_have_count(0)

    page.get_by_test_id("replay-open").click()
    expect(page.get_by_test_id("replay-bar")).to_be_visible()
    expect(page.get_by_test_id("replay-position")).to_contain_text("Operation 1 of")
    shots.save(page, "foundry-run-replay")
    page.set_viewport_size({"width": 390, "height": 800})  # the long id wraps: nothing overflows sideways
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    page.set_viewport_size({"width": 1280, "height": 860})
    page.get_by_test_id("watch-foundry-link").click()
    expect(page.get_by_test_id("foundry-search")).to_have_count(1)
