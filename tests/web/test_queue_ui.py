"""The queue panel in a real browser, while a run holds the slot: add tasks from compose, reorder them
(buttons and drag), cancel and edit one, answer a parked item (its card opens in the inbox by itself, and
the row's "Answer…" opens it there too), re-queue an errored one — each checked against ``GET /api/queue``."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Locator, Page, Route, expect
from tests.web.harness import Shots, UiService, allow_console_errors, call, finish, turn


def _script(ui_service: UiService) -> None:
    ui_service.script(
        [
            turn("lead", call("agent", role="coder", task="store the data"), last="please block the slot"),
            turn("coder", call("ask_human", question="Which **database**?", context="storage layer")),
            turn("coder", finish("used postgres"), last="postgres"),
            turn("lead", finish("stored in postgres"), last="used postgres"),
            # Before any write-capable role started: the queued run parks (needs_input).
            turn("lead", call("ask_human", question="Which region for task three?"), last="task three"),
            turn("lead", finish("the edited task failed", status="error"), last="task one edited"),
        ],
        onExhausted="finish",  # every later request (continuations, the retry) finishes at once
    )


def _waiting(ui_service: UiService) -> list[str]:
    return [i["task"] for i in ui_service.queue() if i["status"] == "waiting"]


def _item(ui_service: UiService, task: str) -> dict[str, Any]:
    return next(i for i in ui_service.queue() if i["task"] == task)


def _row(page: Page, group: str, task: str) -> Locator:
    return (
        page.get_by_test_id(group)
        .get_by_test_id("queue-item")
        .filter(has=page.get_by_test_id("queue-task").get_by_text(task, exact=True))
    )


def test_the_queue_panel_drives_the_queue_while_a_run_holds_the_slot(
    page: Page, ui_service: UiService, shots: Shots
) -> None:
    _script(ui_service)
    page.goto("/")
    page.get_by_test_id("compose-task").fill("please block the slot")
    page.get_by_test_id("compose-submit").click()

    # The coder's question opens the inbox on its own; put it off for now.
    questions = page.get_by_test_id("inbox-modal")
    expect(questions).to_be_visible()
    page.get_by_test_id("inbox-close").click()
    expect(questions).to_be_hidden()
    expect(page.get_by_test_id("inbox-count")).to_have_text("1")

    # Compose is never disabled by the running run: tasks go to the queue.
    page.get_by_test_id("nav-compose").click()
    expect(page.get_by_test_id("compose-mode")).to_have_attribute("data-mode", "queue")
    for task in ("task one", "task two", "task three"):
        page.get_by_test_id("compose-task").fill(task)
        page.get_by_test_id("compose-submit").click()
        expect(page.get_by_test_id("compose-status")).to_contain_text(f'Queued "{task}"')
    assert _waiting(ui_service) == ["task one", "task two", "task three"]
    expect(page.get_by_test_id("queue-badge")).to_have_text("3")

    page.get_by_test_id("nav-queue").click()
    waiting = page.get_by_test_id("queue-waiting").get_by_test_id("queue-task")
    expect(waiting).to_have_text(["task one", "task two", "task three"])
    expect(page.get_by_test_id("queue-running").get_by_test_id("queue-task")).to_have_text(["please block the slot"])

    # The up/down buttons, from the keyboard: focus stays on the moved item's button.
    _row(page, "queue-waiting", "task one").get_by_test_id("queue-down").focus()
    page.keyboard.press("Enter")
    expect(waiting).to_have_text(["task two", "task one", "task three"])
    ui_service.wait_for(lambda: _waiting(ui_service) == ["task two", "task one", "task three"], what="the move")
    expect(_row(page, "queue-waiting", "task one").get_by_test_id("queue-down")).to_be_focused()
    _row(page, "queue-waiting", "task one").get_by_test_id("queue-up").click()
    expect(waiting).to_have_text(["task one", "task two", "task three"])
    ui_service.wait_for(lambda: _waiting(ui_service) == ["task one", "task two", "task three"], what="the move")

    # A refused move is rolled back, and the API's error is shown.
    allow_console_errors(page, r"status of 409")

    def refuse(route: Route) -> None:
        if route.request.method == "PATCH":
            route.fulfill(status=409, json={"ok": False, "error": "status_forbidden"})
        else:
            route.continue_()

    page.route("**/api/queue/*", refuse)
    _row(page, "queue-waiting", "task one").get_by_test_id("queue-down").click()
    expect(page.get_by_test_id("queue-error")).to_contain_text("[status_forbidden]")
    expect(waiting).to_have_text(["task one", "task two", "task three"])
    page.unroute("**/api/queue/*")

    # Drag: task three takes task one's place at the head.
    _row(page, "queue-waiting", "task three").drag_to(_row(page, "queue-waiting", "task one"))
    expect(waiting).to_have_text(["task three", "task one", "task two"])
    ui_service.wait_for(lambda: _waiting(ui_service) == ["task three", "task one", "task two"], what="the drag")

    # Remove (cancel) task two; it shows among the recent outcomes.
    _row(page, "queue-waiting", "task two").get_by_test_id("queue-remove").click()
    expect(waiting).to_have_text(["task three", "task one"])
    ui_service.wait_for(lambda: _item(ui_service, "task two")["status"] == "cancelled", what="the cancel")
    expect(_row(page, "queue-recent", "task two")).to_have_attribute("data-status", "cancelled")
    expect(page.get_by_test_id("queue-badge")).to_have_text("2")

    # Edit task one inline: text and effort.
    _row(page, "queue-waiting", "task one").get_by_test_id("queue-edit").click()
    editor = page.get_by_test_id("queue-edit-task")
    expect(editor).to_be_focused()
    editor.fill("task one edited")
    page.get_by_test_id("queue-edit-effort").select_option("quick")
    page.get_by_test_id("queue-edit-save").click()
    expect(waiting).to_have_text(["task three", "task one edited"])
    edited = ui_service.wait_for(
        lambda: next((i for i in ui_service.queue() if i["task"] == "task one edited"), None), what="the edit"
    )
    assert (edited["status"], edited["effort"]) == ("waiting", "quick")
    shots.save(page, "queue")

    # Answer the held question from the header; the slot frees and the queue drains.
    page.get_by_test_id("inbox-open").click()
    expect(questions).to_be_visible()
    questions.get_by_test_id("question-answer").fill("postgres")
    questions.get_by_test_id("question-send").click()
    expect(questions).to_be_hidden()

    # Task three parks before any write: its question opens the inbox by itself, like a live one.
    card = questions.locator('[data-testid="question-card"][data-kind="parked"]')
    expect(card.get_by_test_id("question-text")).to_have_text("Which region for task three?")
    page.get_by_test_id("inbox-close").click()
    parked = _row(page, "queue-needs-input", "task three")
    expect(parked.get_by_test_id("queue-question")).to_have_text("Which region for task three?")
    expect(page.get_by_test_id("queue-badge")).to_have_text("1")
    shots.save(page, "queue-needs-input")
    parked.get_by_test_id("queue-answer-open").click()  # the row's answer opens the same card
    expect(card.get_by_test_id("question-answer")).to_be_focused()
    card.get_by_test_id("question-answer").fill("eu-west")
    card.get_by_test_id("question-send").click()
    expect(questions).to_be_hidden()

    # The edited task errors: re-queue it.
    failed = _row(page, "queue-recent", "task one edited")
    expect(failed).to_have_attribute("data-status", "error")
    expect(failed.get_by_test_id("queue-item-error")).to_contain_text("the edited task failed")
    failed.get_by_test_id("queue-requeue").click()

    ui_service.wait_for(
        lambda: (
            {i["task"]: i["status"] for i in ui_service.queue()}
            == {
                "please block the slot": "done",
                "task one edited": "done",
                "task two": "cancelled",
                "task three": "done",
            }
        ),
        what="every item to settle",
    )
    three, retried = _item(ui_service, "task three"), _item(ui_service, "task one edited")
    assert three["answer"] == "eu-west" and three["continuesFrom"]
    assert retried["continuesFrom"]
    expect(page.get_by_test_id("queue-recent").get_by_test_id("queue-item")).to_have_count(4)
    expect(page.get_by_test_id("queue-badge")).to_be_hidden()

    # Results that finished while the queue showed: one modal, once the operator leaves the queue.
    page.get_by_test_id("nav-history").click()
    expect(page.get_by_test_id("result-modal")).to_be_visible()
    page.get_by_test_id("result-close").click()
    ui_service.wait_idle()


_HELPERS = """async () => {
  const q = await import("/static/queue.js");
  const steer = await import("/static/steer.js");
  const settings = await import("/static/settings.js");
  const item = (id, status, extra = {}) =>
    ({ id, task: `task ${id}`, status, queuedAt: "2026-01-01T00:00:00Z", ...extra });
  const settled = Array.from({ length: 10 }, (_, i) =>
    item(`s${i}`, i % 2 ? "done" : "error", { settledAt: `2026-01-01T00:00:${String(i).padStart(2, "0")}Z` }));
  const items = q.cleanQueue([
    item("w1", "waiting"), item("a", "active"), item("w2", "waiting"), item("n", "needs_input"),
    item("w3", "waiting"), ...settled, { id: 7, status: "waiting" }, item("x", "lost"), null,
  ]);
  const ids = (list) => list.map((i) => i.id);
  const groups = q.queueGroups(items);
  return {
    kept: items.length,
    moved: ids(q.moveWaiting(items, "w3", 0)).slice(0, 5),
    clamped: ids(q.moveWaiting(items, "w1", 99)).slice(0, 5),
    unknown: q.moveWaiting(items, "zz", 0) === items,
    badge: q.badgeCount(items),
    recent: ids(groups.recent),
    waiting: ids(groups.waiting),
    defaults: settings.resolveDefaults(null, null),
    chained: settings.resolveDefaults({ effort: "thorough", logLevel: null }, { logging: { level: "standard" } }),
    project: settings.resolveDefaults({ effort: "quick", logLevel: "full" }, { logging: { level: "standard" } }),
    undelivered: steer.undelivered(
      [{ kind: "inquiry", message: "a" }],
      [{ kind: "inquiry", message: "a" }, { kind: "inquiry", message: "a" },
        { kind: "plan_modification", message: "a" }],
    ).map((e) => e.kind),
  };
}"""


def test_the_pure_queue_helpers(page: Page) -> None:
    page.goto("/")
    result = page.evaluate(_HELPERS)
    assert result["kept"] == 15  # the malformed entries are dropped
    assert result["moved"] == ["w3", "a", "w1", "n", "w2"]  # only the waiting slots change
    assert result["clamped"] == ["w2", "a", "w3", "n", "w1"]
    assert result["unknown"] is True
    assert result["badge"] == 4
    assert result["recent"] == [f"s{i}" for i in range(9, 1, -1)]  # the 8 newest settled
    assert result["waiting"] == ["w1", "w2", "w3"]
    assert (result["defaults"]["effort"], result["defaults"]["logLevel"]) == ("standard", "full")
    assert (result["chained"]["effort"], result["chained"]["logLevel"]) == ("thorough", "standard")
    assert result["chained"]["logLevelSource"] == "deployment"
    assert (result["project"]["logLevel"], result["project"]["logLevelSource"]) == ("full", "project")
    assert result["undelivered"] == ["inquiry", "plan_modification"]
