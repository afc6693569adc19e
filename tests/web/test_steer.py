"""Steering in a real browser: a question answered through the inbox (the run continues and finishes), an
operator inquiry answered by the handler (one answer card, an inbox notice, the interrupt history), and a
plan modification with its target and aborted roles in the history."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect
from tests.web.harness import Shots, UiService, call, finish, turn


def _submit(page: Page, task: str) -> None:
    page.goto("/")
    page.get_by_test_id("compose-task").fill(task)
    page.get_by_test_id("compose-submit").click()
    expect(page.get_by_test_id("screen-watch")).to_be_visible()


def _shell_started(ui_service: UiService, run_id: str) -> bool:
    events: list[dict[str, Any]] = ui_service.json(f"/api/runs/{run_id}/log", params={"limit": 500})["events"]
    return any(e["type"] == "tool_call" and e["payload"].get("tool") == "run_shell" for e in events)


def test_a_question_and_an_inquiry_are_answered_from_the_page(page: Page, ui_service: UiService, shots: Shots) -> None:
    ui_service.script(
        [
            turn("lead", call("agent", role="coder", task="store the data")),
            turn("coder", call("ask_human", question="Which **database**?", context="The storage layer needs one.")),
            turn("inquiry_responder", finish("The coder is **waiting** for the database answer.")),
            turn("coder", finish("used postgres"), last="postgres"),
            turn("lead", finish("Stored in *postgres*."), last="used postgres"),
        ]
    )
    _submit(page, "Store the data somewhere sensible")
    run_id = ui_service.active_run_id()

    # The question opens the inbox by itself, rendered as Markdown.
    modal = page.get_by_test_id("inbox-modal")
    expect(modal).to_be_visible()
    card = modal.get_by_test_id("question-card")
    expect(card.get_by_test_id("question-text")).to_have_text("Which database?")
    expect(card.get_by_test_id("question-text").locator("strong")).to_have_text("database")
    expect(card.get_by_test_id("question-answer")).to_be_focused()
    shots.save(page, "questions-modal")
    modal.get_by_test_id("inbox-close").click()

    # An inquiry while the question is open: it waits for the run's next safe point.
    expect(page.get_by_test_id("watch-run-id")).to_have_text(run_id)
    page.get_by_test_id("watch-interrupt").click()
    interrupt = page.get_by_test_id("interrupt-modal")
    expect(interrupt).to_be_visible()
    expect(interrupt.get_by_test_id("interrupt-kind-inquiry")).to_be_checked()
    interrupt.get_by_test_id("interrupt-send").click()  # empty: refused in the page
    expect(interrupt.get_by_test_id("interrupt-error")).to_have_text("Write a message first.")
    interrupt.get_by_test_id("interrupt-message").fill("How far along is it?")
    shots.save(page, "interrupt-modal")
    interrupt.get_by_test_id("interrupt-send").click()
    expect(interrupt).to_be_hidden()
    entry = page.get_by_test_id("interrupt-history").get_by_test_id("interrupt-entry")
    expect(entry).to_have_attribute("data-state", "waiting")
    expect(entry.get_by_test_id("interrupt-message-text")).to_have_text("How far along is it?")

    # Answer the question from the header button; the inquiry is handled, the run finishes.
    page.get_by_test_id("inbox-open").click()
    expect(modal).to_be_visible()
    modal.get_by_test_id("question-answer").fill("postgres")
    modal.get_by_test_id("question-send").click()
    expect(modal).to_be_hidden()

    answer_card = page.get_by_test_id("inquiry-answer-card")
    expect(answer_card).to_have_count(1)
    expect(answer_card.get_by_test_id("inquiry-answer-text")).to_have_text(
        "The coder is waiting for the database answer."
    )
    expect(answer_card.locator("strong").last).to_have_text("waiting")
    expect(entry).to_have_attribute("data-state", "answered")
    expect(entry.get_by_test_id("interrupt-answer")).to_have_text("The coder is waiting for the database answer.")
    shots.save(page, "inquiry-answer")

    result = page.get_by_test_id("result-modal")
    expect(result).to_be_visible()
    expect(result.get_by_test_id("result-summary")).to_have_text("Stored in postgres.")
    result.get_by_test_id("result-close").click()
    view = ui_service.run_status(run_id, "success")
    assert view["questionHistory"][0]["answer"] == "postgres"
    assert view["interrupts"][0]["state"] == "answered"
    expect(answer_card).to_have_count(1)  # shown once, not once per poll

    # The answer is in the inbox too, as news (counted until the inbox is opened).
    expect(page.get_by_test_id("inbox-count")).to_have_text("1")
    page.get_by_test_id("inbox-open").click()
    notice = modal.get_by_test_id("inbox-notice")
    expect(notice).to_have_attribute("data-kind", "inquiry")
    expect(notice.get_by_test_id("inbox-notice-body")).to_have_text("The coder is waiting for the database answer.")
    expect(page.get_by_test_id("inbox-count")).to_be_hidden()
    modal.get_by_test_id("inbox-close").click()
    ui_service.wait_idle()


def test_a_plan_modification_shows_its_target_and_aborted_roles(
    page: Page, ui_service: UiService, shots: Shots
) -> None:
    ui_service.script(
        [
            turn("lead", call("agent", role="coder", task="long job")),
            turn("coder", call("run_shell", command="sleep 30")),
            turn("lead", finish("Re-planned on the fast path."), last="[Operator plan modification"),
        ]
    )
    _submit(page, "A long job")
    run_id = ui_service.active_run_id()
    ui_service.wait_for(lambda: _shell_started(ui_service, run_id), what="the coder's command")

    page.get_by_test_id("watch-interrupt").click()
    interrupt = page.get_by_test_id("interrupt-modal")
    interrupt.get_by_test_id("interrupt-kind-plan").check()
    interrupt.get_by_test_id("interrupt-message").fill("Use the fast path")
    interrupt.get_by_test_id("interrupt-send").click()
    expect(interrupt).to_be_hidden()

    result = page.get_by_test_id("result-modal")
    expect(result).to_be_visible()
    expect(result.get_by_test_id("result-summary")).to_have_text("Re-planned on the fast path.")
    result.get_by_test_id("result-close").click()

    entry = page.get_by_test_id("interrupt-history").get_by_test_id("interrupt-entry")
    expect(entry).to_have_attribute("data-kind", "plan_modification")
    expect(entry.get_by_test_id("interrupt-message-text")).to_have_text("Use the fast path")
    expect(entry.get_by_test_id("interrupt-target")).to_have_text("lead lead-0-1")
    expect(entry.get_by_test_id("interrupt-aborted")).to_have_text("coder-1-2")
    expect(page.get_by_test_id("watch-interrupt")).to_be_hidden()  # the run is over
    page.get_by_test_id("theme-toggle").click()
    shots.save(page, "watch-plan-modification")
    ui_service.wait_idle()
