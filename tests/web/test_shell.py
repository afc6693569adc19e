"""The shell in a real browser: zero state, a task from compose to history and the result modal, the
toggles, and the server-unavailable banner."""

from __future__ import annotations

import json
import re

from playwright.sync_api import Page, expect
from tests.web.harness import Shots, UiService, allow_console_errors, call, finish, turn

SUMMARY = "Coder printed hello for the lead"


def _two_role_script(ui_service: UiService) -> None:
    ui_service.script(
        [
            turn("lead", call("agent", role="coder", task="print hello")),
            turn("coder", call("run_shell", command="echo hello")),
            turn("coder", finish("printed hello"), last="hello"),
            turn(
                "lead",
                finish("All **done**: the coder printed `hello`.", artifacts=["notes/hello.txt"]),
                last="printed hello",
            ),
        ],
        summary=SUMMARY,
    )


def test_zero_state_shows_compose_with_the_resolved_defaults(page: Page, shots: Shots) -> None:
    page.goto("/")
    expect(page).to_have_title("UI Test Orchestrator")
    expect(page.get_by_test_id("screen-compose")).to_be_visible()
    for hidden in ("screen-watch", "screen-history", "screen-queue"):
        expect(page.get_by_test_id(hidden)).to_be_hidden()
    expect(page.get_by_test_id("nav-compose")).to_have_attribute("aria-current", "page")
    expect(page.get_by_test_id("compose-effort")).to_have_value("standard")
    expect(page.get_by_test_id("compose-loglevel")).to_have_value("full")
    expect(page.get_by_test_id("compose-mode")).to_have_attribute("data-mode", "start")
    expect(page.get_by_test_id("queue-badge")).to_be_hidden()
    expect(page.get_by_test_id("server-banner")).to_be_hidden()
    # An empty task is refused in the page, before any request.
    page.get_by_test_id("compose-submit").click()
    expect(page.get_by_test_id("compose-error")).to_have_text("Write a task first.")
    shots.save(page, "compose")


def test_a_task_runs_from_compose_to_the_result_modal_and_history(
    page: Page, ui_service: UiService, shots: Shots
) -> None:
    _two_role_script(ui_service)
    page.goto("/")
    page.get_by_test_id("compose-task").fill("Print hello through the coder")
    page.get_by_test_id("compose-effort").select_option("thorough")
    page.get_by_test_id("compose-submit").click()

    # The run starts at once (idle service), the page follows it, and its result pops up once.
    modal = page.get_by_test_id("result-modal")
    expect(modal).to_be_visible()
    expect(modal.get_by_test_id("result-status")).to_have_text("Done")
    summary = modal.get_by_test_id("result-summary")
    expect(summary).to_contain_text("All done: the coder printed hello.")
    expect(summary.locator("strong")).to_have_text("done")  # sanitized Markdown, not raw text
    expect(modal.get_by_test_id("result-artifacts")).to_have_text("notes/hello.txt")
    expect(page.get_by_test_id("screen-watch")).to_be_visible()
    shots.save(page, "result-modal")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    modal.get_by_test_id("result-copy-raw").click()
    expect(modal.get_by_test_id("result-copy-status")).to_have_text("Copied.")
    raw = json.loads(page.evaluate("navigator.clipboard.readText()"))
    assert raw["status"] == "success" and raw["result"]["artifacts"] == ["notes/hello.txt"]
    modal.get_by_test_id("result-close").click()
    expect(modal).to_be_hidden()

    (run,) = ui_service.runs()
    assert run["status"] == "success" and run["effort"] == "thorough"
    expect(page.get_by_test_id("watch-run-id")).to_have_text(run["runId"])
    expect(page.get_by_test_id("watch-status")).to_have_text("Done")
    expect(page.get_by_test_id("watch-interrupt")).to_be_hidden()
    page.get_by_test_id("view-mode-sequence").click()
    expect(page.get_by_test_id("view-mode-sequence")).to_have_attribute("aria-pressed", "true")
    expect(page.get_by_test_id("view-mode-flow")).to_have_attribute("aria-pressed", "false")
    page.get_by_test_id("view-mode-flow").click()
    expect(page.get_by_test_id("view-mode-flow")).to_have_attribute("aria-pressed", "true")
    shots.save(page, "watch")

    # History: the run with its one-line summary (the model's line replaces the task-only one).
    page.get_by_test_id("nav-history").click()
    row = page.locator(f'[data-testid="history-row"][data-run-id="{run["runId"]}"]')
    expect(row.get_by_test_id("history-summary")).to_have_text(SUMMARY)
    expect(row.get_by_test_id("history-status")).to_have_text("Done")
    expect(row.get_by_test_id("history-effort")).to_have_text("thorough")
    row.get_by_test_id("history-expand").click()
    expect(row.get_by_test_id("history-task")).to_have_text("Print hello through the coder")
    shots.save(page, "history")

    # Continue → compose with the continuation chip; the result modal never reopens for this run.
    row.get_by_test_id("history-continue").click()
    expect(page.get_by_test_id("screen-compose")).to_be_visible()
    expect(page.get_by_test_id("compose-continuation")).to_contain_text(run["runId"])
    expect(page.get_by_test_id("compose-continue")).to_have_value(run["runId"])
    page.get_by_test_id("compose-continue-clear").click()
    expect(page.get_by_test_id("compose-continuation")).to_be_hidden()

    # Open the run from history → the watch screen pinned to it.
    page.get_by_test_id("nav-history").click()
    row.get_by_test_id("history-open").click()
    expect(page).to_have_url(re.compile(f"#watch/{run['runId']}$"))
    expect(page.get_by_test_id("watch-run-id")).to_have_text(run["runId"])
    expect(modal).to_be_hidden()
    ui_service.wait_idle()


def test_theme_and_tier_toggles_persist(page: Page) -> None:
    page.goto("/")
    html = page.locator("html")
    start = html.get_attribute("data-theme")
    assert start in ("light", "dark")
    page.get_by_test_id("theme-toggle").click()
    other = "dark" if start == "light" else "light"
    expect(html).to_have_attribute("data-theme", other)
    expect(page.get_by_test_id("theme-toggle")).to_have_attribute("aria-pressed", str(other == "dark").lower())
    tier = page.get_by_test_id("tier-select")
    expect(tier).to_have_value("detailed")
    tier.select_option("whimsical")
    mute = page.get_by_test_id("mute-toggle")
    mute.click()
    expect(mute).to_have_attribute("aria-pressed", "true")
    page.reload()
    expect(page.locator("html")).to_have_attribute("data-theme", other)
    expect(page.get_by_test_id("tier-select")).to_have_value("whimsical")
    expect(page.get_by_test_id("mute-toggle")).to_have_attribute("aria-pressed", "true")


def test_the_banner_shows_while_the_server_is_unreachable_and_clears(page: Page) -> None:
    allow_console_errors(page, r"Failed to load resource: net::ERR_FAILED")
    page.goto("/")
    banner = page.get_by_test_id("server-banner")
    expect(page.get_by_test_id("screen-compose")).to_be_visible()
    expect(banner).to_be_hidden()
    page.route("**/api/**", lambda route: route.abort())
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("Server unavailable")
    page.unroute("**/api/**")
    expect(banner).to_be_hidden()


def test_api_errors_are_shown_with_their_code_and_the_task_is_kept(page: Page) -> None:
    allow_console_errors(page, r"status of 409")
    page.route(
        "**/api/runs",
        lambda route: (
            route.fulfill(status=409, json={"ok": False, "error": "run_id_collision"})
            if route.request.method == "POST"
            else route.continue_()
        ),
    )
    page.goto("/")
    page.get_by_test_id("compose-task").fill("A task that collides")
    page.get_by_test_id("compose-task").press("Control+Enter")  # the keyboard submit
    expect(page.get_by_test_id("compose-error")).to_contain_text("[run_id_collision]")
    expect(page.get_by_test_id("compose-task")).to_have_value("A task that collides")
    expect(page.get_by_test_id("screen-compose")).to_be_visible()


def test_project_settings_save_and_seed_the_compose_selectors(page: Page, ui_service: UiService, shots: Shots) -> None:
    page.set_viewport_size({"width": 390, "height": 844})  # and the narrow layout
    page.goto("/")
    panel = page.get_by_test_id("settings-panel")
    panel.locator("summary").click()
    expect(page.get_by_test_id("settings-effort")).to_have_value("standard")
    expect(page.get_by_test_id("settings-loglevel")).to_have_value("")
    page.get_by_test_id("settings-effort").select_option("quick")
    page.get_by_test_id("settings-loglevel").select_option("standard")
    page.get_by_test_id("settings-save").click()
    expect(page.get_by_test_id("settings-status")).to_contain_text("Saved: effort quick, log level standard.")
    assert ui_service.json("/api/settings") == {"effort": "quick", "logLevel": "standard"}
    # Untouched compose selectors follow the new chain at once, and after a reload.
    expect(page.get_by_test_id("compose-effort")).to_have_value("quick")
    expect(page.get_by_test_id("compose-loglevel")).to_have_value("standard")
    shots.save(page, "compose-narrow", full_page=True)
    page.reload()
    expect(page.get_by_test_id("compose-effort")).to_have_value("quick")
    expect(page.get_by_test_id("compose-loglevel")).to_have_value("standard")
    response = ui_service.http.put("/api/settings", json={"effort": "standard"})
    assert response.status_code == 200
