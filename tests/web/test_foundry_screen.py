"""The Foundry screen in a real browser: the workspace's searches from ``GET /api/foundry``, newest first,
each with its verdict, the seed's and the best candidate's scores with 95 % intervals, and its candidates;
an empty workspace says how to start one."""

from __future__ import annotations

import os

from playwright.sync_api import Page, expect
from tests.foundry.foundry_fixtures import write_search
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
