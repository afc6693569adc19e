"""A hostile web page against a real ``serve`` in real Chromium, with the victim signed in (the token
cookie set, as after following the printed link).

The attacker's pages come from another loopback port — the same *site* as the server, so Chromium even
sends the SameSite=Strict cookie along; only the Origin check stands between them. Each attack fails,
starts no run, queues nothing and never reaches the active run: a no-cors text/plain fetch, a top-level
form post, a form posted into a hidden iframe, a JSON fetch, the live stream over a WebSocket, a plan
modification for a guessed (here: known) run id, framing the UI, and DNS rebinding (Chromium resolves
``evil.example`` to loopback, so requests carry ``Host: evil.example``).

Also: the sign-in flow in the browser, and the CSP-violation detector the whole suite relies on.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, Page, expect
from tests.web.harness import CHROMIUM, CHROMIUM_ARGS, UiService, finish, record_errors, turn

ATTACK = "ATTACKER-TASK rm -rf ~"


class Attacker:
    """A tiny HTTP server on its own loopback port serving the attack pages (``/<name>.html``)."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        pages = self.pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = pages.get(self.path.lstrip("/"), "").encode()
                self.send_response(200 if body else 404)
                self.send_header("content-type", "text/html; charset=utf-8")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def page(self, name: str, body: str) -> str:
        self.pages[f"{name}.html"] = f"<!doctype html><html><body>{body}</body></html>"
        return f"{self.origin}/{name}.html"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


@pytest.fixture
def attacker() -> Iterator[Attacker]:
    served = Attacker()
    try:
        yield served
    finally:
        served.close()


@pytest.fixture
def victim(browser: Browser, ui_service: UiService) -> Iterator[Page]:
    """A signed-in browser tab (the token cookie set) that visits the attacker's pages."""
    context = browser.new_context()
    context.add_cookies([ui_service.auth_cookie()])
    try:
        yield context.new_page()
    finally:
        context.close()


def _script_results(page: Page) -> dict[str, Any]:
    page.wait_for_function("() => window.done === true", timeout=20_000)
    return page.evaluate("window.results")


def _no_trace_of_the_attack(ui_service: UiService, run_ids_before: list[str]) -> None:
    assert [r["runId"] for r in ui_service.runs()] == run_ids_before
    assert all(ATTACK not in item["task"] for item in ui_service.queue())
    for run_id in run_ids_before:
        log = (ui_service.workspace / ".orchestration" / "runs" / run_id / "log.jsonl").read_text()
        assert ATTACK not in log
    assert all(ATTACK not in json.dumps(r) for r in ui_service.sim_requests())


def test_a_foreign_page_cannot_start_steer_or_watch_a_run(
    victim: Page, attacker: Attacker, ui_service: UiService
) -> None:
    slow = {"content": "working on it " * 40, "chunkChars": 2, "chunkDelayMs": 40}
    ui_service.script([turn("lead", finish("legit work done"), **slow)])
    run_id = ui_service.http.post("/api/runs", json={"task": "legitimate work"}).json()["runId"]
    runs_before = [r["runId"] for r in ui_service.runs()]
    target = ui_service.base_url
    body = json.dumps({"task": ATTACK})
    steer = json.dumps({"kind": "plan_modification", "message": ATTACK})

    scripted = attacker.page(
        "scripted",
        f"""<script>
        window.results = {{}};
        const target = {json.dumps(target)};
        async function attempt(name, url, init) {{
          try {{
            const response = await fetch(url, {{credentials: "include", ...init}});
            results[name] = response.type === "opaque" ? "opaque" : response.status;
          }} catch (error) {{ results[name] = "blocked"; }}
        }}
        (async () => {{
          const plain = {{method: "POST", mode: "no-cors", headers: {{"content-type": "text/plain"}}}};
          await attempt("noCorsRun", target + "/api/runs", {{...plain, body: {json.dumps(body)}}});
          await attempt("noCorsQueue", target + "/api/queue", {{...plain, body: {json.dumps(body)}}});
          const steerUrl = target + "/api/runs/{run_id}/interrupt";
          await attempt("noCorsSteer", steerUrl, {{...plain, body: {json.dumps(steer)}}});
          const asJson = {{method: "POST", headers: {{"content-type": "application/json"}}}};
          await attempt("jsonRun", target + "/api/runs", {{...asJson, body: {json.dumps(body)}}});
          await attempt("jsonSteer", steerUrl, {{...asJson, body: {json.dumps(steer)}}});
          await attempt("read", target + "/api/runs/{run_id}", {{}});
          results.ws = await new Promise((resolve) => {{
            const socket = new WebSocket(target.replace("http", "ws") + "/ws/stream");
            const seen = [];
            socket.onopen = () => socket.send(JSON.stringify({{type: "subscribe", runId: "{run_id}"}}));
            socket.onmessage = (event) => seen.push(event.data);
            socket.onclose = (event) => resolve({{code: event.code, seen}});
          }});
          window.done = true;
        }})();
        </script>""",
    )
    issued: list[str] = []  # requests the page sent to the server, and how each ended for the page
    failed: list[str] = []
    victim.on("request", lambda r: issued.append(f"{r.method} {r.url}") if r.url.startswith(target) else None)
    victim.on("requestfailed", lambda r: failed.append(f"{r.method} {r.url} {r.failure}"))
    victim.goto(scripted)
    results = _script_results(victim)
    # every attack left the browser; no answer reached the page (the server's answers carry
    # Cross-Origin-Resource-Policy, so even an opaque no-cors response is dropped), and the
    # server-side check below shows each was refused
    for path in ("/api/runs", "/api/queue", f"/api/runs/{run_id}/interrupt"):
        assert f"POST {target}{path}" in issued, issued
    assert {results[k] for k in ("noCorsRun", "noCorsQueue", "noCorsSteer", "jsonRun", "jsonSteer", "read")} == {
        "blocked"
    }, results
    assert sum("ERR_BLOCKED_BY_RESPONSE" in f for f in failed) == 3, failed  # the server answered the no-cors ones
    assert results["ws"] == {"code": 1006, "seen": []}  # the handshake was refused: no subscription, no text

    form = (
        f'<form id="f" method="post" enctype="text/plain" action="{target}/api/queue">'
        f'<input name=\'{{"task": "{ATTACK}", "x": "\' value=\'"}}\'></form>'
    )
    top_level = attacker.page("form", form + "<script>document.getElementById('f').submit()</script>")
    with victim.expect_response(f"{target}/api/queue") as landed:
        victim.goto(top_level)
    assert landed.value.status == 403
    assert "forbidden_origin" in landed.value.text()

    framed = attacker.page(
        "iframe",
        '<iframe name="sink" style="display:none"></iframe>'
        + form.replace('id="f"', 'id="f" target="sink"')
        + "<script>document.getElementById('f').submit()</script>",
    )
    with victim.expect_response(f"{target}/api/queue") as landed:
        victim.goto(framed)
    assert landed.value.status == 403

    ui_service.run_status(run_id, "success", seconds=60)
    _no_trace_of_the_attack(ui_service, runs_before)


def test_the_ui_cannot_be_framed(victim: Page, attacker: Attacker, ui_service: UiService) -> None:
    messages: list[str] = []
    victim.on("console", lambda message: messages.append(message.text))
    frame_page = attacker.page("frame", f'<iframe id="ui" src="{ui_service.base_url}/"></iframe>')
    with victim.expect_response(f"{ui_service.base_url}/") as framed:
        victim.goto(frame_page)
    assert framed.value.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in framed.value.headers["content-security-policy"]
    victim.wait_for_load_state("load")
    children = [frame for frame in victim.frames if frame.parent_frame is not None]
    assert children, "the attacker's iframe exists"
    for frame in children:  # Chromium shows its error page instead: the UI never rendered inside
        assert not frame.url.startswith(ui_service.base_url) or "app-title" not in frame.content()
        assert frame.evaluate("document.querySelector('[data-testid=app-title]')") is None


def test_dns_rebinding_is_refused(browser: Browser, ui_service: UiService) -> None:
    """Chromium resolves evil.example to loopback (a rebinding attacker's DNS): every request to the
    server then carries ``Host: evil.example`` and is refused, the page and the API alike."""
    port = ui_service.base_url.rsplit(":", 1)[1]
    rebound = browser.browser_type.launch(
        executable_path=str(CHROMIUM),
        args=[*CHROMIUM_ARGS, "--host-resolver-rules=MAP evil.example 127.0.0.1"],
        headless=True,
    )
    try:
        page = rebound.new_page()
        for path in ("/", "/api/runs", "/static/app.js"):
            response = page.goto(f"http://evil.example:{port}{path}")
            assert response is not None and response.status == 403, path
            assert "forbidden_host" in response.text()
    finally:
        rebound.close()


def test_sign_in_through_the_printed_link(browser: Browser, ui_service: UiService) -> None:
    context = browser.new_context(base_url=ui_service.base_url)
    try:
        page = context.new_page()
        errors = record_errors(page)
        response = page.goto("/")
        assert response is not None and response.status == 401
        expect(page.get_by_test_id("signin")).to_contain_text("orchestrator token")
        page.goto(f"/?token={ui_service.token}")
        expect(page.get_by_test_id("app-title")).to_be_visible()
        landed = urlsplit(page.url)  # the token left the address bar (the app may add its #route)
        assert (landed.path, landed.query) == ("/", "") and ui_service.token not in page.url
        assert page.evaluate("document.cookie") == ""  # HttpOnly: no script can read it
        cookie = next(c for c in context.cookies() if c["name"].startswith("orchestrator_token_"))
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
        expect(page.get_by_test_id("live-state")).to_have_text("live")  # the WebSocket handshake carried the cookie
        assert [e for e in errors if "401" not in e] == []
    finally:
        context.close()


def test_the_csp_detector_sees_a_violation(browser: Browser, ui_service: UiService) -> None:
    """The suite's guard works: an inline script injected into the UI is blocked and reported."""
    context = browser.new_context(base_url=ui_service.base_url)
    context.add_cookies([ui_service.auth_cookie()])
    try:
        page = context.new_page()
        errors = record_errors(page)
        response = page.goto("/")
        assert response is not None and "script-src 'self'" in response.headers["content-security-policy"]
        page.evaluate(
            "() => { const s = document.createElement('script'); s.textContent = 'window.pwned = 1';"
            " document.body.append(s); }"
        )
        page.wait_for_function("() => window.__cspViolations > 0")
        assert page.evaluate("window.pwned") is None
        assert any("CSP violation" in e or "Content Security Policy" in e for e in errors), errors
    finally:
        context.close()


def test_a_cookie_planted_from_another_local_port_does_not_lock_the_user_out(
    victim: Page, attacker: Attacker, ui_service: UiService
) -> None:
    # A page on another loopback port shares the cookie jar's host (cookies ignore ports): its
    # document.cookie can plant same-named cookies with longer Paths, which Chromium then sends before
    # the real one. The real one must still count, for the API and for the WebSocket.
    target = ui_service.base_url
    name = ui_service.auth_cookie()["name"]
    plant = attacker.page(
        "plant",
        f'<script>document.cookie = "{name}=tossed; Path=/api"; document.cookie = "{name}=tossed; Path=/ws";'
        "window.results = {}; window.done = true;</script>",
    )
    victim.goto(plant)
    _script_results(victim)
    tossed = [c for c in victim.context.cookies() if c["name"] == name and c["value"] == "tossed"]
    assert {c["path"] for c in tossed} == {"/api", "/ws"}  # the plant took: Chromium sends these first

    ui = victim.goto(target + "/")
    assert ui is not None and ui.status == 200  # the app, not the sign-in page
    outcome = victim.evaluate(
        """async () => {
          const api = (await fetch("/api/queue")).status;
          const ws = await new Promise((resolve) => {
            const socket = new WebSocket(location.origin.replace("http", "ws") + "/ws/stream");
            socket.onopen = () => socket.send(JSON.stringify({type: "ping"}));
            socket.onmessage = (event) => { resolve(event.data); socket.close(); };
            socket.onclose = (event) => resolve("closed " + event.code);
          });
          return {title: document.title, api, ws};
        }"""
    )
    assert outcome["api"] == 200 and outcome["ws"] == '{"type":"pong"}', outcome
    assert "access link" not in outcome["title"], outcome
