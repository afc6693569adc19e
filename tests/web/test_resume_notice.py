"""The resume notice in a real browser: a service killed while a question waited restarts, resumes the run
from its checkpoint and asks the same question again; the page says so (fed by ``/api/config``
``resumed``) until the operator dismisses it, and the dismissal is remembered."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect
from tests.web.harness import UiService, call, finish, start_ui_service, summary_turn, turn

ASK = turn("coder", call("ask_human", question="Which colour?"))


@pytest.fixture(scope="module")
def ui_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiService]:
    directory = tmp_path_factory.mktemp("ui-resume")
    script = {"turns": [turn("lead", call("agent", role="coder", task="paint it")), ASK, summary_turn()]}
    with start_ui_service(directory, script=script) as first:  # killed on exit, the question still waiting
        first.http.post("/api/runs", json={"task": "paint the fence"}).raise_for_status()
        first.wait_for(first.questions, what="the question")
    after = {
        "turns": [turn("coder", finish("painted blue"), last="blue"), turn("lead", finish("done")), summary_turn()]
    }
    with start_ui_service(directory, script=after) as restarted:
        yield restarted


def test_the_page_announces_the_resumed_run_and_its_question(page: Page, ui_service: UiService) -> None:
    resumed = ui_service.json("/api/config")["resumed"]
    run_id = resumed["runId"]
    page.goto("/")
    notice = page.get_by_test_id("resume-notice")
    expect(notice).to_contain_text(f"resumed run {run_id} from its checkpoint (interrupted at ")
    expect(notice).to_contain_text("It asks again: Which colour?")
    inbox = page.get_by_test_id("inbox-modal")  # the question asked again opens the inbox by itself
    expect(inbox.get_by_test_id("question-text")).to_have_text("Which colour?")
    inbox.get_by_test_id("inbox-close").click()
    notice.get_by_role("button", name="Dismiss").click()
    expect(notice).to_have_count(0)
    page.reload()
    card = inbox.get_by_test_id("question-card")
    card.get_by_test_id("question-answer").fill("blue")
    card.get_by_test_id("question-send").click()
    assert ui_service.run_status(run_id, "success")["result"]["summary"] == "done"
    expect(page.get_by_test_id("resume-notice")).to_have_count(0)  # dismissed: not shown again
