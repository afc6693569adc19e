"""The inbox in a real browser (issue 18, problem 5): a question parked before anything was written opens
the answer modal by itself, like a live one, and is answered there; the parked run then stops saying it
waits, links forward to the run that continued it, and the continuation links back."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect
from tests.web.harness import Shots, UiService, call, finish, turn


def _script(ui_service: UiService) -> None:
    ui_service.script(
        [
            # The lead asks before any write-capable role started: the run parks (needs_input).
            turn("lead", call("ask_human", question="Which **region**?", context="Deploy target."), last="Deploy it"),
            turn("lead", finish("Deployed to eu-west."), last="eu-west"),
        ]
    )


def test_a_parked_question_is_answered_from_the_inbox_and_the_runs_link_both_ways(
    page: Page, ui_service: UiService, shots: Shots
) -> None:
    """Issue 18, problem 5: parked question → inbox modal → answer → continuation linked both ways."""
    _script(ui_service)
    page.goto("/#history")
    expect(page.get_by_test_id("screen-history")).to_be_visible()
    response = ui_service.http.post("/api/runs", json={"task": "Deploy it"})
    assert response.status_code == 201, response.text
    parked_id = response.json()["runId"]

    # Parked before anything was written: the inbox opens by itself, with the answer field focused.
    inbox = page.get_by_test_id("inbox-modal")
    expect(inbox).to_be_visible()
    card = inbox.get_by_test_id("question-card")
    expect(card).to_have_attribute("data-kind", "parked")
    expect(card.get_by_test_id("question-text")).to_have_text("Which region?")
    expect(card.get_by_test_id("question-origin")).to_contain_text("Deploy it")
    expect(card.get_by_test_id("question-answer")).to_be_focused()
    expect(page.get_by_test_id("inbox-count")).to_have_text("1")
    shots.save(page, "inbox-parked-question")

    # Later, then the watch screen's own "Answer the question" opens the same card.
    inbox.get_by_test_id("inbox-close").click()
    page.goto(f"/#watch/{parked_id}")
    expect(page.get_by_test_id("watch-status")).to_have_text("Needs your answer")
    page.get_by_test_id("watch-answer").click()
    expect(card.get_by_test_id("question-answer")).to_be_focused()
    card.get_by_test_id("question-answer").fill("eu-west")
    card.get_by_test_id("question-send").click()
    expect(inbox).to_be_hidden()
    expect(page.get_by_test_id("answer-sent")).to_contain_text("eu-west")

    # The answer starts the continuation; it finishes (its result pops up once).
    ui_service.wait_idle()
    continuation = next(r for r in ui_service.runs() if r.get("continuesFrom") == parked_id)
    cont_id = continuation["runId"]
    parked = next(r for r in ui_service.runs() if r["runId"] == parked_id)
    assert parked["status"] == "needs_clarification" and parked["continuedBy"] == [cont_id]
    result = page.get_by_test_id("result-modal")
    expect(result).to_be_visible()
    result.get_by_test_id("result-close").click()

    # The parked run no longer says it waits: "Answered", and a link forward.
    expect(page.get_by_test_id("watch-run-id")).to_have_text(parked_id)
    expect(page.get_by_test_id("watch-status")).to_have_text("Answered")
    expect(page.get_by_test_id("run-status")).to_have_text("Answered")
    expect(page.get_by_test_id("now-caption")).to_have_text(f"Answered — continued in {cont_id}")
    expect(page.get_by_test_id("screen-watch")).not_to_contain_text("Waiting for")
    expect(page.get_by_test_id("watch-answer")).to_have_count(0)
    forward = page.get_by_test_id("watch-continued-link")
    expect(forward).to_have_text(cont_id)
    expect(page.get_by_test_id("inbox-count")).to_be_hidden()
    shots.save(page, "watch-answered-continued")

    # Forward, then back.
    forward.click()
    expect(page).to_have_url(re.compile(f"#watch/{cont_id}$"))
    expect(page.get_by_test_id("watch-run-id")).to_have_text(cont_id)
    expect(page.get_by_test_id("watch-status")).to_have_text("Done")
    back = page.get_by_test_id("watch-continues-from")
    expect(back).to_have_text(parked_id)
    back.click()
    expect(page.get_by_test_id("watch-run-id")).to_have_text(parked_id)

    # History: the continuation grouped under its origin.
    page.get_by_test_id("nav-history").click()
    rows = page.get_by_test_id("history-row")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_have_attribute("data-run-id", parked_id)
    expect(rows.nth(1)).to_have_attribute("data-run-id", cont_id)
    expect(rows.nth(1)).to_have_attribute("data-depth", "1")
    expect(rows.nth(1)).to_have_attribute("data-thread", parked_id)
    expect(rows.nth(0).get_by_test_id("history-status")).to_have_text("Answered")
    shots.save(page, "history-thread")
