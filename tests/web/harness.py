"""Browser test harness: a real ``orchestrator serve`` on a real sim model, driven by Playwright (sync API).

Everything is real except the model, which is the scripted sim (``python -m orchestrator sim-model``)
running as its own process. Chromium is Debian's ``/usr/bin/chromium``; ``playwright install`` is never run.

Fixtures (``tests/web/conftest.py``)
------------------------------------

``ui_service`` (module scope) -> :class:`UiService`
    A temp workspace, a test Guild (:data:`UI_ROLES`: ``lead`` delegates to ``coder``, which can run
    shell commands, so it is write-capable and its ``ask_human`` reaches ``/api/questions``; an
    ``inquiry_responder`` handles operator inquiries) and a deployment pointing at a sim-model
    subprocess; then a ``serve`` subprocess on a free port. Both processes are killed when the module
    ends. Use ``ui_service.base_url``, ``ui_service.workspace``, ``ui_service.http`` (an ``httpx.Client``)
    and ``ui_service.script(turns)`` to load the sim script for the next run (replaces the script and
    resets its consumption; a reusable turn answering the run-list summarizer is appended). Tests in
    one module share the server, so each test must leave it idle (``ui_service.wait_idle()``).

``browser`` (session scope)
    One headless Chromium for the session.

``page`` (function scope) -> Playwright ``Page``
    A fresh context and page with ``base_url`` set (``page.goto("/")``), default timeout 15 s. Console
    errors and page errors are recorded; the test fails at teardown if any occurred. A test expecting
    some (e.g. a blocked WebSocket) calls ``allow_console_errors(page, pattern, ...)`` with regexes.

``shots`` (function scope) -> :class:`Shots`
    ``shots.save(page, "compose")`` writes ``<tmp_path>/compose.png`` and copies it to the (git-ignored)
    ``tests/web/artifacts/``, the run's screenshot artifacts; env ``UI_ARTIFACTS=0`` turns the copy off.

Script helpers: :func:`turn`, :func:`call`, :func:`finish` build sim turns matched on a role's system
prompt (``You are the <role>.``) and optionally the last input's text.

Waiting is on conditions, never fixed sleeps: :meth:`UiService.wait_for` polls a probe (bounded) and
fails with the server's stderr; in the page, use Playwright's auto-waiting ``expect``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
from tests.engine.harness import call, finish, turn
from tests.helpers import REPO, write_deployment, write_guild
from tests.slowness import budget

__all__ = [
    "ARTIFACTS",
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "EXPECT_TIMEOUT_MS",
    "UI_ROLES",
    "Shots",
    "UiService",
    "allow_console_errors",
    "allow_sanitizer_parse_reports",
    "call",
    "finish",
    "start_ui_service",
    "summary_turn",
    "turn",
]

T = TypeVar("T")

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ARTIFACTS = REPO / "tests" / "web" / "artifacts"
START_SECONDS = 20.0
WAIT_SECONDS = 20.0
#: Playwright's default timeout for actions and ``expect`` in these tests: 15 s on a quiet machine.
EXPECT_TIMEOUT_MS = int(budget(15) * 1000)

#: The test Guild: ``lead`` (entry) delegates; ``coder`` is write-capable (run_shell), so its questions
#: are live ``/api/questions`` entries; ``lead`` asking before any coder starts parks a queued run.
UI_ROLES: dict[str, list[str]] = {
    "lead": ["agent", "ask_human", "finish"],
    "coder": ["run_shell", "ask_human", "finish"],
    "inquiry_responder": ["read_run_log", "finish"],
}

#: What the sim says when the service asks for a run's one-line summary.
SUMMARY_MARK = "one-line summaries"


def summary_turn(line: str = "Sim summary of the run") -> dict[str, Any]:
    """A reusable turn answering only the run-list summarizer's requests."""
    return {"expect": {"systemContains": SUMMARY_MARK}, "reusable": True, "content": line}


def _child_env(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    env.update(
        {
            "ORCHESTRATOR_LLM_BACKOFF_SECONDS": "0.01",
            "ORCHESTRATOR_STALL_HEADERS_SECONDS": "20",
            "ORCHESTRATOR_STALL_IDLE_SECONDS": "20",
            "ORCHESTRATOR_TITLE": "UI Test Orchestrator",
        }
    )
    env.update(extra or {})
    return env


def _wait_port(process: subprocess.Popen[bytes], port_file: Path, log: Path, what: str) -> int:
    deadline = time.monotonic() + budget(START_SECONDS)
    while not port_file.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{what} did not start (exit {process.returncode}):\n{_tail(log)}")
        time.sleep(0.03)
    return int(port_file.read_text())


def _tail(path: Path, chars: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except FileNotFoundError:
        return ""


def _kill(process: subprocess.Popen[bytes] | None) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGKILL)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - a SIGKILLed child always exits
        pass


class UiService:
    """A running ``serve`` + sim pair: URLs, workspace, a sync HTTP client and condition polling."""

    def __init__(
        self, base_url: str, sim_root: str, workspace: Path, directory: Path, server_log: Path, token: str
    ) -> None:
        self.base_url = base_url
        self.sim_root = sim_root
        self.workspace = workspace
        self.directory = directory
        self.server_log = server_log
        self.token = token
        self.http = httpx.Client(base_url=base_url, timeout=20, headers={"Authorization": f"Bearer {token}"})

    def auth_cookie(self) -> dict[str, Any]:
        """The cookie ``GET /?token=…`` would set, for a Playwright context's ``add_cookies``."""
        port = self.base_url.rsplit(":", 1)[1]
        return {
            "name": f"orchestrator_token_{port}",
            "value": self.token,
            "url": self.base_url,
            "httpOnly": True,
            "sameSite": "Strict",
        }

    # --- the sim ------------------------------------------------------------------------------------

    def set_script(self, script: Mapping[str, Any]) -> None:
        """Replace the sim's whole script (resets consumption, the request record and id counters)."""
        response = httpx.post(f"{self.sim_root}/_sim/script", json=dict(script), timeout=10)
        assert response.status_code == 200, response.text

    def script(self, turns: list[dict[str, Any]], *, summary: str = "Sim summary of the run", **fields: Any) -> None:
        """Load ``turns`` for the next run(s), plus a reusable summarizer turn answering ``summary``."""
        self.set_script({"turns": [*turns, summary_turn(summary)], **fields})

    def sim_requests(self) -> list[dict[str, Any]]:
        response = httpx.get(f"{self.sim_root}/_sim/requests", timeout=10)
        response.raise_for_status()
        return response.json()

    # --- the service --------------------------------------------------------------------------------

    def stderr(self) -> str:
        return _tail(self.server_log)

    def json(self, path: str, **kwargs: Any) -> Any:
        response = self.http.get(path, **kwargs)
        assert response.status_code == 200, (path, response.status_code, response.text)
        return response.json()

    def queue(self) -> list[dict[str, Any]]:
        return self.json("/api/queue")

    def runs(self) -> list[dict[str, Any]]:
        return self.json("/api/runs")

    def wait_for(self, probe: Callable[[], T | None], *, seconds: float = WAIT_SECONDS, what: str = "condition") -> T:
        """Poll ``probe`` until it returns something truthy (bounded by ``seconds`` on a quiet machine, scaled
        by the run's slowness); fail with the server's stderr."""
        deadline = time.monotonic() + budget(seconds)
        while True:
            value = probe()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; server stderr:\n{self.stderr()}")
            time.sleep(0.05)

    def wait_idle(self, seconds: float = WAIT_SECONDS) -> None:
        """Until no queue item is waiting or active (every dispatched run settled)."""
        self.wait_for(
            lambda: not any(i["status"] in ("waiting", "active") for i in self.queue()),
            seconds=seconds,
            what="the queue to settle",
        )

    def run_status(self, run_id: str, *statuses: str, seconds: float = WAIT_SECONDS) -> dict[str, Any]:
        """Wait until the run's view has one of ``statuses``; return the view."""

        def probe() -> dict[str, Any] | None:
            response = self.http.get(f"/api/runs/{run_id}")
            view = response.json() if response.status_code == 200 else None
            return view if view is not None and view["status"] in statuses else None

        return self.wait_for(probe, seconds=seconds, what=f"{run_id} to reach {statuses}")

    def active_run_id(self, seconds: float = WAIT_SECONDS) -> str:
        """The run id of the active queue item, once it has one."""

        def probe() -> str | None:
            return next((i.get("runId") for i in self.queue() if i["status"] == "active" and i.get("runId")), None)

        return self.wait_for(probe, seconds=seconds, what="an active run")

    def questions(self) -> list[dict[str, Any]]:
        return self.json("/api/questions")


@contextmanager
def start_ui_service(
    directory: Path,
    *,
    roles: Mapping[str, list[str]] | None = None,
    executor: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    script: Mapping[str, Any] | None = None,
) -> Iterator[UiService]:
    """Start the sim and ``serve`` subprocesses under ``directory`` (in parallel: the sim's port is reserved
    first, and ``serve`` tolerates a model that is not up yet); kill both on exit."""
    directory.mkdir(parents=True, exist_ok=True)
    workspace = directory / "ws"
    workspace.mkdir(exist_ok=True)
    script_path = directory / "sim-script.json"
    script_path.write_text(json.dumps(script or {"turns": [summary_turn()]}))
    guild = write_guild(directory / "guild", roles or UI_ROLES)
    sim_log, server_log = directory / "sim.log", directory / "server.log"
    sim_port, server_port = directory / "sim.port", directory / "server.port"
    child_env = _child_env(env)
    processes: list[subprocess.Popen[bytes]] = []
    service: UiService | None = None

    def spawn(args: list[str], log_path: Path) -> subprocess.Popen[bytes]:
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "orchestrator", *args],
                cwd=REPO, env=child_env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            )  # fmt: skip
        processes.append(process)
        return process

    try:
        for attempt in range(3):
            sim_port.unlink(missing_ok=True)
            server_port.unlink(missing_ok=True)
            port = _free_port()
            sim_root = f"http://127.0.0.1:{port}"
            executor_fields = {"inquiryHandlerRole": "inquiry_responder", **(executor or {})}
            deployment = write_deployment(directory / "deployment.json", f"{sim_root}/v1", **executor_fields)
            sim = spawn(["sim-model", "--script", str(script_path), "--port", str(port),
                         "--port-file", str(sim_port)], sim_log)  # fmt: skip
            server = spawn(["serve", "--workspace", str(workspace), "--port", "0", "--port-file", str(server_port),
                            "--guild", str(guild), "--deployment", str(deployment)], server_log)  # fmt: skip
            try:
                _wait_port(sim, sim_port, sim_log, "sim-model")
            except AssertionError:
                if attempt == 2 or sim.poll() is None:
                    raise
                _kill(server)  # the reserved port was taken meanwhile: try another
                continue
            served = _wait_port(server, server_port, server_log, "serve")
            token = child_env.get("ORCHESTRATOR_TOKEN") or (workspace / ".orchestration" / "token").read_text().strip()
            service = UiService(f"http://127.0.0.1:{served}", sim_root, workspace, directory, server_log, token)
            break
        assert service is not None
        yield service
    finally:
        if service is not None:
            service.http.close()
        for process in processes:
            _kill(process)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --- console-error policing -----------------------------------------------------------------------------

_ALLOWED = "_ui_allowed_console_errors"


def allow_console_errors(page: Any, *patterns: str) -> None:
    """Let console errors matching any of ``patterns`` (regexes) pass the ``page`` fixture's check."""
    getattr(page, _ALLOWED).extend(re.compile(p) for p in patterns)


def record_errors(page: Any) -> list[str]:
    """Start recording console errors and page errors of ``page``; returns the live list."""
    errors: list[str] = []
    setattr(page, _ALLOWED, [])

    def on_console(message: Any) -> None:
        if message.type == "error":
            errors.append(f"console: {message.text} @ {message.location.get('url', '')}")

    page.on("console", on_console)
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    # every Content-Security-Policy violation fails the test too (Chromium also logs most as console errors)
    page.add_init_script(_CSP_LISTENER)
    return errors


_CSP_LISTENER = """
document.addEventListener("securitypolicyviolation", (e) => {
  const where = `${e.sourceFile}:${e.lineNumber}`;
  console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${where}`);
  window.__cspViolations = (window.__cspViolations || 0) + 1;
});
"""


_SANITIZER_PARSE = "_ui_sanitizer_parse_reports_allowed"
#: What Chromium reports while the sanitizer's inert DOMParser reads hostile markup (see below).
_INERT_PARSE_REPORTS = (
    re.compile(
        r"CSP violation: (script-src-attr|style-src-attr|style-src-elem) blocked inline at \S+/static/markdown\.js:"
    ),
    re.compile(
        r"^console: (Executing inline event handler|Applying inline style) violates .* @ \S+/static/markdown\.js$"
    ),
)


def allow_sanitizer_parse_reports(page: Any) -> None:
    """For the hostile-Markdown tests only: the sanitizer parses untrusted HTML in an inert DOMParser
    document, which inherits the page's CSP, so Chromium reports every inline handler and style in the
    *input* as blocked (they never run, and the sanitizer drops them). Those reports — and only those,
    from ``markdown.js`` — pass; any other CSP violation still fails the test."""
    setattr(page, _SANITIZER_PARSE, True)


def unexpected_errors(page: Any, errors: list[str]) -> list[str]:
    allowed: list[re.Pattern[str]] = getattr(page, _ALLOWED, [])
    inert = _INERT_PARSE_REPORTS if getattr(page, _SANITIZER_PARSE, False) else ()
    unexpected = []
    for error in errors:
        if any(p.search(error) for p in inert):
            continue
        if "CSP violation" in error or "Content Security Policy" in error or not any(p.search(error) for p in allowed):
            unexpected.append(error)
    return unexpected


class Shots:
    """Screenshots under the test's ``tmp_path``, copied to :data:`ARTIFACTS` unless ``UI_ARTIFACTS=0``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def save(self, page: Any, name: str, *, full_page: bool = False) -> Path:
        path = self.directory / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        if os.environ.get("UI_ARTIFACTS", "1") != "0":
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, ARTIFACTS / path.name)
        return path
