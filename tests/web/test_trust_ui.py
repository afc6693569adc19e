"""A queue item the service did not accept itself, in a real browser: it waits under "Not from this
service" with the reason, nothing runs it, and the Confirm button makes it run."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect
from tests.web.harness import UiService, finish, start_ui_service, summary_turn, turn

PLANTED = {"id": "planted-1", "task": "the planted task", "status": "waiting", "queuedAt": "2026-01-01T00:00:00.000Z"}


@pytest.fixture(scope="module")
def ui_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiService]:
    directory = tmp_path_factory.mktemp("ui-trust")
    (directory / "ws" / ".orchestration").mkdir(parents=True)
    (directory / "ws" / ".orchestration" / "queue.json").write_text(json.dumps({"items": [PLANTED]}))
    script = {"turns": [turn("lead", finish("planted task confirmed and done")), summary_turn()]}
    with start_ui_service(directory, script=script) as service:
        yield service


def test_a_planted_item_waits_for_the_operator_and_runs_once_confirmed(page: Page, ui_service: UiService) -> None:
    page.goto("/#queue")
    unconfirmed = page.get_by_test_id("queue-unconfirmed")
    expect(unconfirmed.get_by_test_id("queue-task")).to_have_text(["the planted task"])
    expect(unconfirmed.get_by_test_id("queue-foreign")).to_contain_text("Not from this service")
    expect(page.get_by_test_id("queue-running").get_by_test_id("queue-item")).to_have_count(0)
    assert ui_service.runs() == [] and ui_service.queue()[0]["status"] == "unconfirmed"

    unconfirmed.get_by_test_id("queue-confirm").click()
    ui_service.wait_for(lambda: ui_service.queue()[0]["status"] == "done", what="the confirmed item to run")
    expect(page.get_by_test_id("queue-unconfirmed")).to_have_count(0)
    expect(page.get_by_test_id("queue-recent").get_by_test_id("queue-task")).to_have_text(["the planted task"])
    assert ui_service.queue()[0]["resultSummary"] == "planted task confirmed and done"
