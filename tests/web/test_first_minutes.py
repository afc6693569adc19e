"""The first five minutes in a real browser (issue 18, problem 10): ``orchestrator demo`` prints a link
that lands on its run's replay route; nothing takes the keyboard from a field being typed in (a question
and a finished run wait as toasts); statuses read as plain words; at 1024×700 the run view gets the width
an empty interrupts sidebar used to take; the keyboard crosses the top bar left to right."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from itertools import pairwise
from pathlib import Path

import httpx
from playwright.sync_api import Browser, Page, Route, expect
from tests.helpers import REPO
from tests.web.harness import (
    EXPECT_TIMEOUT_MS,
    Shots,
    UiService,
    _child_env,
    _kill,
    _tail,
    call,
    finish,
    record_errors,
    turn,
    unexpected_errors,
)

LINK = re.compile(r"watch the demo run (run-[0-9-]+): open (\S+)")


def _demo_link(workspace: Path, log: Path, process: subprocess.Popen[bytes]) -> tuple[str, str]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = LINK.search(_tail(log, 20000))
        if found:
            return found.group(1), found.group(2)
        assert process.poll() is None, f"demo exited {process.returncode}:\n{_tail(log)}"
        time.sleep(0.1)
    raise AssertionError(f"the demo printed no replay link:\n{_tail(log)}")


def test_the_demo_link_lands_on_its_runs_replay(browser: Browser, tmp_path: Path, shots: Shots) -> None:
    """Issue 18, problem 10: `demo` opens on the demo run (its replay route), not on an empty form."""
    workspace, log = tmp_path / "demo-ws", tmp_path / "demo.log"
    workspace.mkdir()
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "orchestrator", "demo", "--workspace", str(workspace), "--host", "127.0.0.1",
             "--port", "0"],
            cwd=REPO, env=_child_env(None), stdin=subprocess.DEVNULL, stdout=out, stderr=out,
        )  # fmt: skip
    try:
        run_id, link = _demo_link(workspace, log, process)
        assert link.endswith(f"#watch/{run_id}/replay") and "?token=" in link
        token = link.split("?token=", 1)[1].split("#", 1)[0]
        base = link.split("/?token=", 1)[0]

        def finished() -> bool:
            view = httpx.get(f"{base}/api/runs/{run_id}", headers={"Authorization": f"Bearer {token}"}, timeout=10)
            return view.status_code == 200 and view.json()["status"] != "running"

        deadline = time.monotonic() + 30
        while not finished():
            assert time.monotonic() < deadline, f"the demo run did not finish:\n{_tail(log)}"
            time.sleep(0.1)

        context = browser.new_context(viewport={"width": 1280, "height": 860})  # no cookie: the link signs in
        context.set_default_timeout(EXPECT_TIMEOUT_MS)
        page = context.new_page()
        errors = record_errors(page)
        try:
            page.goto(link)
            expect(page).to_have_url(re.compile(f"/#watch/{run_id}/replay$"))  # the sign-in redirect kept it
            expect(page.get_by_test_id("screen-watch")).to_be_visible()
            expect(page.get_by_test_id("watch-run-id")).to_have_text(run_id)
            status = page.get_by_test_id("run-status")
            expect(status).to_have_text(re.compile(r"^\s*Replay\s*$"))  # the badge says it is a replay
            # it plays 4 operations a wall-clock second: at full speed it reaches the end, where it stays on the
            # whole run; closing the replay shows the run's own status
            page.get_by_test_id("replay-speed").select_option("full")
            expect(status).to_have_attribute("title", re.compile(r"was: Done$"))
            page.get_by_test_id("replay-exit").click()
            expect(status).to_have_text("Done")
            expect(page.get_by_test_id("screen-compose")).to_be_hidden()
            shots.save(page, "demo-landing")
        finally:
            context.close()
        unexpected = unexpected_errors(page, errors)
        assert not unexpected, "browser console/page errors:\n" + "\n".join(unexpected)
    finally:
        _kill(process)


def test_routes_parse_and_pin_the_run(page: Page, ui_service: UiService) -> None:
    """Issue 18, problem 10: `#watch/<id>/replay` and `#watch/<id>/op-N` open the watch screen on that run
    and, once the run view has drawn it, call its `startReplay()` / `focusOperation("op-N")`."""
    page.route(re.compile(r".*/static/runview\.js$"), _recording_run_view)
    page.goto("/#history")
    parsed = page.evaluate(
        """async () => {
          const { parseHash, routeHash } = await import("/static/routes.js");
          const cases = ["#watch/run-1/replay", "#watch/run-1/op-12", "#watch/run-1/op-x", "#watch", "#history",
            "#nowhere", "#watch/run%2F1"];
          return { parsed: cases.map(parseHash),
            hashes: [routeHash({ screen: "watch", runId: "run-1", action: "op-3" }), routeHash({ screen: "queue" })] };
        }"""
    )
    assert parsed["parsed"] == [
        {"screen": "watch", "runId": "run-1", "action": "replay"},
        {"screen": "watch", "runId": "run-1", "action": "op-12"},
        {"screen": "watch", "runId": "run-1", "action": None},
        {"screen": "watch", "runId": None, "action": None},
        {"screen": "history", "runId": None, "action": None},
        None,
        {"screen": "watch", "runId": "run/1", "action": None},
    ]
    assert parsed["hashes"] == ["#watch/run-1/op-3", "#queue"]

    ui_service.script([turn("lead", finish("Done at once."))])
    response = ui_service.http.post("/api/runs", json={"task": "Quick one"})
    run_id = response.json()["runId"]
    ui_service.run_status(run_id, "success")
    for suffix in ("op-1", "replay"):
        page.goto(f"/#watch/{run_id}/{suffix}")
        expect(page.get_by_test_id("watch-run-id")).to_have_text(run_id)
        expect(page.get_by_test_id("run-status")).to_have_text("Done")
        assert page.url.endswith(f"#watch/{run_id}/{suffix}")
        # The run view's method was called once, after it had drawn the run (its badge already said Done).
        page.wait_for_function("() => (window.__routeCalls || []).length > 0")
        expected = ["focusOperation", "op-1", "Done"] if suffix == "op-1" else ["startReplay", None, "Done"]
        assert page.evaluate("window.__routeCalls.splice(0)") == [expected]
    ui_service.wait_idle()


#: Appended to the real runview.js: wraps createRunView so the view records the route's calls of the two
#: methods other modules own (the shell calls them only when present; here they are).
RECORDER = """
export function createRunView(root, ctx) {
  const view = realCreateRunView(root, ctx);
  const record = (name, arg) => (window.__routeCalls ||= []).push(
    [name, arg ?? null, root.querySelector('[data-testid="run-status"]')?.textContent ?? null]);
  view.startReplay = () => record("startReplay");
  view.focusOperation = (id) => record("focusOperation", id);
  return view;
}
"""


def _recording_run_view(route: Route) -> None:
    body = route.fetch().text()
    assert "export function createRunView(" in body
    body = body.replace("export function createRunView(", "function realCreateRunView(", 1) + RECORDER
    route.fulfill(status=200, content_type="text/javascript", body=body)


def test_typing_keeps_the_keyboard_while_a_question_and_a_result_arrive(
    page: Page, ui_service: UiService, shots: Shots
) -> None:
    """Issue 18, problem 10: neither the inbox nor the result modal takes focus from a field being typed in."""
    ui_service.script(
        [
            turn("lead", call("agent", role="coder", task="pick a colour"), last="Paint it"),
            turn("coder", call("ask_human", question="Which colour?")),
            turn("coder", call("run_shell", command="sleep 2"), last="blue"),
            turn("coder", finish("painted blue")),
            turn("lead", finish("Painted it blue."), last="painted blue"),
        ]
    )
    page.goto("/#compose")
    task = page.get_by_test_id("compose-task")
    task.click()
    page.keyboard.type("first half")
    run_id = ui_service.http.post("/api/runs", json={"task": "Paint it"}).json()["runId"]
    ui_service.wait_for(ui_service.questions, what="the question")

    # The question waits as a toast; the keyboard stays in the task field.
    expect(page.get_by_test_id("inbox-toast")).to_be_visible()
    expect(page.get_by_test_id("inbox-modal")).to_be_hidden()
    expect(task).to_be_focused()
    page.keyboard.type(" and more")
    expect(task).to_have_value("first half and more")
    shots.save(page, "typing-question-toast")

    # Leaving the field opens the inbox; answer there.
    page.keyboard.press("Tab")
    inbox = page.get_by_test_id("inbox-modal")
    expect(inbox).to_be_visible()
    expect(page.get_by_test_id("inbox-toast")).to_have_count(0)
    inbox.get_by_test_id("question-answer").fill("blue")
    inbox.get_by_test_id("question-send").click()
    expect(inbox).to_be_hidden()

    # Back to typing while the run finishes: the result waits as a toast too.
    task.click()
    page.keyboard.press("End")
    page.keyboard.type(", second half")
    ui_service.run_status(run_id, "success")
    toast = page.get_by_test_id("result-toast")
    expect(toast).to_be_visible()
    expect(toast).to_contain_text(f"{run_id}: Done")
    expect(page.get_by_test_id("result-modal")).to_be_hidden()
    expect(task).to_be_focused()
    page.keyboard.type("!")
    expect(task).to_have_value("first half and more, second half!")
    shots.save(page, "typing-result-toast")
    toast.get_by_test_id("result-toast-open").click()
    result = page.get_by_test_id("result-modal")
    expect(result).to_be_visible()
    expect(result.get_by_test_id("result-status")).to_have_text("Done")
    result.get_by_test_id("result-close").click()
    ui_service.wait_idle()


def test_at_1024_the_run_view_takes_the_width_of_an_empty_sidebar(
    page: Page, ui_service: UiService, shots: Shots
) -> None:
    """Issue 18, problem 11: at 1024×700 an empty interrupts sidebar goes under the run view; no overflow."""
    ui_service.script([turn("lead", finish("Nothing to interrupt."))])
    run_id = ui_service.http.post("/api/runs", json={"task": "A calm run"}).json()["runId"]
    ui_service.run_status(run_id, "success")
    page.set_viewport_size({"width": 1024, "height": 700})
    page.goto(f"/#watch/{run_id}")
    expect(page.get_by_test_id("run-status")).to_have_text("Done")
    expect(page.get_by_test_id("interrupt-history-empty")).to_be_visible()
    expect(page.get_by_test_id("watch-main")).to_have_class(re.compile(r"\bside-empty\b"))
    widths = page.evaluate(
        """() => ({
          view: document.querySelector('[data-testid="runview-root"]').getBoundingClientRect().width,
          main: document.querySelector('[data-testid="watch-main"]').getBoundingClientRect().width,
          scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth,
          bar: document.querySelector(".topbar").getBoundingClientRect().height,
          inbox: document.querySelector('[data-testid="inbox-open"]').getBoundingClientRect().height,
        })"""
    )
    assert widths["view"] >= 0.95 * widths["main"], widths
    assert widths["bar"] < 2 * widths["inbox"], widths  # the top bar stays one row
    assert widths["scroll"] <= widths["client"], widths
    shots.save(page, "watch-1024")
    ui_service.wait_idle()


def test_the_keyboard_follows_the_top_bar_left_to_right(page: Page) -> None:
    """Issue 18, problem 10: Tab order follows the picture — the skip link, the screens, then the toolbar."""
    page.goto("/#compose")
    expect(page.get_by_test_id("screen-compose")).to_be_visible()
    order = []
    for _ in range(10):
        page.keyboard.press("Tab")
        order.append(page.evaluate("document.activeElement.dataset.testid || document.activeElement.className"))
    assert order == [
        "skip-link", "nav-watch", "nav-history", "nav-compose", "nav-queue", "nav-foundry",
        "inbox-open", "tier-select", "mute-toggle", "theme-toggle",
    ]  # fmt: skip
    boxes = [page.get_by_test_id(testid).bounding_box() for testid in order[1:]]
    assert all(a is not None and b is not None and a["x"] < b["x"] for a, b in pairwise(boxes))
