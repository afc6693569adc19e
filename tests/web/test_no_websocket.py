"""The live stream is optional: with ``/ws/stream`` refused, a task still runs end to end in the page,
with no error surface (polling carries everything)."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect
from tests.web.harness import UiService, allow_console_errors, call, finish, turn

#: Fallback when ``page.route_web_socket`` is missing: every WebSocket fails before opening.
_FAILING_SOCKET = """
(() => {
  window.__socketAttempts = 0;
  class RefusedSocket extends EventTarget {
    constructor(url) {
      super();
      window.__socketAttempts += 1;
      this.url = String(url);
      this.readyState = 0;
      setTimeout(() => {
        this.readyState = 3;
        const error = new Event("error");
        if (this.onerror) this.onerror(error);
        this.dispatchEvent(error);
        const close = new CloseEvent("close", { code: 1006, wasClean: false });
        if (this.onclose) this.onclose(close);
        this.dispatchEvent(close);
      }, 5);
    }
    send() { throw new DOMException("not open", "InvalidStateError"); }
    close() {}
  }
  RefusedSocket.CONNECTING = 0; RefusedSocket.OPEN = 1; RefusedSocket.CLOSING = 2; RefusedSocket.CLOSED = 3;
  window.WebSocket = RefusedSocket;
})();
"""


def _block_stream(page: Page) -> list[str]:
    """Refuse every stream connection; returns the list the attempts are recorded in."""
    attempts: list[str] = []
    if hasattr(page, "route_web_socket"):

        def refuse(ws: Any) -> None:
            attempts.append(ws.url)
            ws.close(code=1011, reason="blocked by the test")

        page.route_web_socket("**/ws/stream", refuse)
    else:  # pragma: no cover - older Playwright
        page.add_init_script(_FAILING_SOCKET)
        attempts.append("init-script")
    return attempts


def test_a_run_completes_in_the_page_without_the_stream(page: Page, ui_service: UiService) -> None:
    allow_console_errors(page, r"WebSocket connection to .*/ws/stream.* failed")
    attempts = _block_stream(page)
    ui_service.script(
        [
            turn("lead", call("agent", role="coder", task="count to three")),
            turn("coder", call("run_shell", command="echo 1 2 3")),
            turn("coder", finish("counted: 1 2 3"), last="1 2 3"),
            turn("lead", finish("Counted to **three**."), last="counted"),
        ]
    )
    page.goto("/")
    page.get_by_test_id("compose-task").fill("Count to three")
    page.get_by_test_id("compose-submit").click()

    result = page.get_by_test_id("result-modal")
    expect(result).to_be_visible()
    expect(result.get_by_test_id("result-summary")).to_have_text("Counted to three.")
    result.get_by_test_id("result-close").click()
    expect(page.get_by_test_id("watch-status")).to_have_text("Done")
    assert attempts, "the page never tried the stream"

    # No error surface anywhere: no banner, no error notice, the live marker simply off.
    expect(page.get_by_test_id("server-banner")).to_be_hidden()
    expect(page.locator(".toast.tone-error")).to_have_count(0)
    expect(page.get_by_test_id("live-state")).not_to_have_class("live-state on")
    (run,) = [r for r in ui_service.runs() if r["task"] == "Count to three"]
    assert run["status"] == "success"
    ui_service.wait_idle()
