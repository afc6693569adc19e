"""Fixtures for the workflow server: ``orchestrator mcp`` as a real subprocess behind the official stdio client.

``McpProcess`` runs the SDK client (``stdio_client`` + ``ClientSession``) on its own trio loop in a
background thread, so one server process can serve a whole test module (spawning costs about a second);
tests are plain ``def`` functions that call ``mcp.call(tool, **args) -> Reply(is_error, text, parsed, meta)``.
The process gets a temp workspace, a temp key dir (``WORKFLOW_SERVER_KEY_DIR``), a temp ``TMPDIR`` and its
stderr (the JSON-lines log) in a file; it is always terminated (stdin closed, then killed if need be).

Fixtures: ``mcp`` (module-scoped, the repository's ``workflows/``), ``spawn_mcp`` (factory for a server with
another workflow dir or env, e.g. ``MIN_CHECKPOINT_RESPONSE_SECONDS``; stopped at test end).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import httpx2
import pytest
import trio
import yaml
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from tests.workflow.httpchild import http_token, spawn_http_server, stop_process, wait_listening

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / "workflows"
SEPARATOR = "\n\n---\n\n"
PINNED_DAY = "2031-06-15"  # the UTC day ``McpProcess.pinned_day`` holds the server's clock on


class Reply(NamedTuple):
    """One tool result: ``parsed`` is the JSON/YAML value (a ``(bundle, summary)`` pair for split texts)."""

    is_error: bool
    text: str
    parsed: Any
    meta: dict[str, Any]


def parse_text(text: str) -> Any:
    """JSON if it is JSON, else YAML (both halves when the text has the ``---`` separator), else ``None``."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        if SEPARATOR in text:
            head, _, tail = text.partition(SEPARATOR)
            return yaml.safe_load(head), yaml.safe_load(tail)
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


class _Calls:
    """``ok``/``err`` over a ``call(tool, **args) -> Reply`` (shared by the subprocess and in-process servers)."""

    def call(self, tool: str, **args: Any) -> Reply:
        raise NotImplementedError

    def ok(self, tool: str, **args: Any) -> Reply:
        """``call`` that asserts success (the error text is the failure message)."""
        reply = self.call(tool, **args)
        assert not reply.is_error, f"{tool} failed: {reply.text}"
        return reply

    def err(self, tool: str, **args: Any) -> str:
        """``call`` that asserts an ``isError`` result; returns its text."""
        reply = self.call(tool, **args)
        assert reply.is_error, f"{tool} unexpectedly succeeded: {reply.text[:500]}"
        return reply.text


def _reply(result: Any) -> Reply:
    text = "".join(getattr(item, "text", "") for item in result.content)
    return Reply(bool(result.is_error), text, parse_text(text), dict(result.meta or {}))


class InProcess(_Calls):
    """The whole call pipeline (``WorkflowMCP.dispatch``) in this process, on a temp workspace and key dir.

    ``controlled_clock``: the server's clock reads ``self.now`` (unix seconds), which the test moves.
    """

    def __init__(
        self, root: Path, workflow_dir: Path = WORKFLOWS, *, floor: str = "3", controlled_clock: bool = True
    ) -> None:
        from orchestrator.workflow.server import WorkflowMCP, build_state
        from orchestrator.workflow.serverconfig import load_workflow_settings
        from orchestrator.workflow.tools.runtime import JsonLog

        for name in ("ws", "tmp"):
            (root / name).mkdir(parents=True, exist_ok=True)
        env = {
            "HOME": str(root / "home"),
            "WORKFLOW_WORKSPACE": str(root / "ws"),
            "WORKFLOW_DIR": str(workflow_dir),
            "WORKFLOW_SERVER_KEY_DIR": str(root / "keys"),
            "WORKFLOW_SERVER_INSTALL_DIR": str(root / "install"),
            "TMPDIR": str(root / "tmp"),
            "MIN_CHECKPOINT_RESPONSE_SECONDS": floor,
            "WORKFLOW_CORPUS_RECHECK_SECONDS": "0",
        }
        self.planning = root / "ws" / ".engineering" / "artifacts" / "planning"
        self.now = 1_900_000_000.0
        state = build_state(load_workflow_settings(env, cwd=root), log=JsonLog(io.StringIO()), env=env)
        if controlled_clock:
            state.clock = lambda: self.now
        self.server = WorkflowMCP(state)

    def call(self, tool: str, **args: Any) -> Reply:
        return _reply(self.server.dispatch(tool, args))


class McpProcess(_Calls):
    """A running ``python -m orchestrator mcp`` and a client session to it (see the module docstring)."""

    def __init__(
        self,
        root: Path,
        *,
        workflow_dir: Path = WORKFLOWS,
        env: Mapping[str, str] | None = None,
        args: tuple[str, ...] = (),
        transport: str = "stdio",
        token: str | None = None,
    ) -> None:
        self.root = root
        self.transport = transport
        self.token = token  # the bearer token the HTTP client sends (None: the one the server generated)
        self.url: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self.workspace = root / "ws"
        self.key_dir = root / "keys"
        self.tmp_dir = root / "tmp"
        self.log_path = root / "server-stderr.jsonl"
        self.clock_offset = root / "clock-offset"  # absent: the server reads the wall clock unchanged
        self.planning = self.workspace / ".engineering" / "artifacts" / "planning"
        for folder in (self.workspace, self.tmp_dir):
            folder.mkdir(parents=True, exist_ok=True)
        full_env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(root / "home"),
            "PYTHONPATH": str(REPO / "src"),
            "WORKFLOW_WORKSPACE": str(self.workspace),
            "WORKFLOW_SERVER_KEY_DIR": str(self.key_dir),
            "WORKFLOW_SERVER_INSTALL_DIR": str(root / "install"),
            "TMPDIR": str(self.tmp_dir),
            "WORKFLOW_SERVER_WORKING_ROOTS": str(root / "p"),  # where tests put their checkouts
            "WORKFLOW_SERVER_CLOCK_OFFSET_FILE": str(self.clock_offset),
            **dict(env or {}),
        }
        if transport == "http":
            args = ("--transport", "http", "--port", "0", *args)
        self.params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "orchestrator", "mcp", "--workflow-dir", str(workflow_dir), *args],
            env=full_env,
            cwd=str(root),
        )
        self._token: trio.lowlevel.TrioToken | None = None
        self._session: ClientSession | None = None
        self._stop: trio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="mcp-client", daemon=True)

    @contextlib.contextmanager
    def pinned_day(self, day: str = PINNED_DAY) -> Iterator[str]:
        """The server's clock reads noon UTC of ``day`` (plus the seconds the block takes) inside the block.

        Dated slugs then do not depend on when the suite runs: a run that crosses midnight UTC once derived
        tomorrow's folder while the test expected today's.
        """
        noon = datetime.strptime(day, "%Y-%m-%d").replace(hour=12, tzinfo=UTC).timestamp()
        self.clock_offset.write_text(repr(noon - time.time()))
        try:
            yield day
        finally:
            self.clock_offset.unlink(missing_ok=True)

    # ------------------------------------------------------------------------------------------ lifecycle

    def start(self) -> McpProcess:
        self._thread.start()
        if not self._ready.wait(60):
            raise RuntimeError("the MCP server did not start within 60 s")
        if self._error is not None:
            raise RuntimeError(f"the MCP server failed to start: {self._error!r}\n{self.stderr()}")
        return self

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # surfaced to the test thread
            self._error = exc
        finally:
            self._ready.set()

    async def _main(self) -> None:
        if self.transport == "http":
            await self._main_http()
            return
        with self.log_path.open("w") as errlog:
            async with stdio_client(self.params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                await self._serve_session(s)

    async def _serve_session(self, s: ClientSession) -> None:
        await s.initialize()
        self._session = s
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        self._ready.set()
        await self._stop.wait()

    async def _main_http(self) -> None:
        self.url = await trio.to_thread.run_sync(self._spawn_http)
        if self.token is None and "WORKFLOW_SERVER_NO_TOKEN" not in (self.params.env or {}):
            self.token = http_token(self.params.env or {})  # the one the server generated
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0)) as client,
            streamable_http_client(self.url, http_client=client) as (read, write),
            ClientSession(read, write) as s,
        ):
            await self._serve_session(s)

    def _spawn_http(self) -> str:
        """Start the HTTP server process; return its ``/mcp`` URL once its log says it listens."""
        command = [self.params.command, *self.params.args]
        self._proc = spawn_http_server(command, self.params.env or {}, self.log_path, self.params.cwd)
        return wait_listening(self._proc, self.log_path)

    def stop(self) -> None:
        if self._token is not None and self._stop is not None:
            try:
                trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
            except trio.RunFinishedError:
                pass
        self._thread.join(30)
        if self._proc is not None:
            stop_process(self._proc)

    # ------------------------------------------------------------------------------------------ calls

    def call(self, tool: str, **args: Any) -> Reply:
        """Call one tool and return its reply (``parsed`` per ``parse_text``; ``meta`` the ``_meta`` dict)."""
        assert self._session is not None and self._token is not None, "server not running"
        session = self._session
        return _reply(trio.from_thread.run(session.call_tool, tool, args, trio_token=self._token))

    def list_tools(self) -> list[Any]:
        assert self._session is not None and self._token is not None
        return trio.from_thread.run(self._session.list_tools, trio_token=self._token).tools

    def read_resource(self, uri: str) -> Any:
        assert self._session is not None and self._token is not None
        return trio.from_thread.run(self._session.read_resource, uri, trio_token=self._token)

    def stderr(self) -> str:
        try:
            return self.log_path.read_text()
        except OSError:
            return ""

    def log_records(self) -> list[dict[str, Any]]:
        out = []
        for line in self.stderr().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out


TRANSPORTS = ("stdio", "http")


@pytest.fixture(scope="module", params=TRANSPORTS)
def mcp(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpProcess]:
    """One server per test module and transport on the repository's ``workflows/`` (state persists across
    that module's tests): every test using it runs over stdio and over Streamable HTTP."""
    server = McpProcess(tmp_path_factory.mktemp(f"mcp-{request.param}"), transport=request.param).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def spawn_mcp(tmp_path: Path) -> Iterator[Callable[..., McpProcess]]:
    """``spawn_mcp(workflow_dir=..., env=..., args=...)``: a dedicated server, stopped at test end."""
    started: list[McpProcess] = []

    def spawn(**kwargs: Any) -> McpProcess:
        server = McpProcess(tmp_path / f"mcp{len(started)}", **kwargs).start()
        started.append(server)
        return server

    try:
        yield spawn
    finally:
        for server in started:
            server.stop()
