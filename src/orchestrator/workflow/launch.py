"""``orchestrator mcp``'s start: build the server, serve it on its transport, map failures to exit codes.

The top of the workflow server's import graph: it imports ``server`` (the tools and the call pipeline),
``stdio`` and ``http`` (the two wires), and nothing imports it but ``cli.py``. Nothing is ever printed
to stdout: on stdio it is the MCP wire.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING

import anyio
import trio

from orchestrator.workflow.errors import SessionStoreError, WorkspaceConfigError
from orchestrator.workflow.http import HttpGuard, guard_from_env, run_http, with_generated_token
from orchestrator.workflow.server import WorkflowMCP, build_server, build_state, preload_corpus
from orchestrator.workflow.serverconfig import WorkflowSettings
from orchestrator.workflow.stdio import Tap, serve_stdio
from orchestrator.workflow.tools.runtime import JsonLog

if TYPE_CHECKING:
    from orchestrator.observability.sidecar import SidecarSink

__all__ = ["run_stdio", "serve_main"]


def _configure_logging(log: JsonLog) -> None:
    """Route Python logging (the SDK's included) to JSON lines on stderr, warnings and above."""

    class _Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            level = "error" if record.levelno >= logging.ERROR else "warn"
            log._emit(level, record.getMessage(), {"logger": record.name})

    root = logging.getLogger()
    root.handlers[:] = [_Handler()]
    root.setLevel(logging.WARNING)


async def run_stdio(server: WorkflowMCP, *, prelude: bytes = b"", tap: Tap | None = None) -> None:
    """Serve MCP on this process's stdin/stdout until the client closes stdin, loading the corpus on a
    worker thread meanwhile (``preload_corpus``).

    The wire runs on trio's own pipe streams (``stdio.serve_stdio``) instead of the SDK's thread-backed
    file wrappers, saving three worker-thread hops per request; fd 0/1 are diverted while serving.
    """
    async with trio.open_nursery() as nursery:
        nursery.start_soon(preload_corpus, server.state)
        await serve_stdio(server, prelude=prelude, tap=tap)
        nursery.cancel_scope.cancel()


def _first_os_error(group: BaseExceptionGroup[BaseException]) -> OSError | None:
    matched = group.split(OSError)[0]
    while isinstance(matched, BaseExceptionGroup):
        matched = matched.exceptions[0]
    return matched if isinstance(matched, OSError) else None


def _config_error(log: JsonLog, message: str) -> int:
    print(f"orchestrator mcp: invalid configuration: {message}", file=sys.stderr, flush=True)
    log.error("config_error", error=message)
    return 2


def _trace_export(server: WorkflowMCP, env: Mapping[str, str]) -> SidecarSink | None:
    """Each tool call as a span (docs/observability.md) when an OTLP endpoint is set; the OpenTelemetry
    modules are imported only then, so a server without it starts as fast as before."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true" or not (
        env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    ):
        return None
    from orchestrator.observability.live import open_sink
    from orchestrator.observability.mcpspans import McpCallExporter

    sink = open_sink(env, None)
    if sink is not None:
        server.call_listeners.append(McpCallExporter(sink))
    return sink


def serve_main(
    settings: WorkflowSettings,
    env: Mapping[str, str],
    *,
    hard_exit: bool = False,
    prelude: bytes = b"",
    recorder: Tap | None = None,
) -> int:
    """Build and run the server (stdio until stdin closes; HTTP until SIGTERM/SIGINT). Returns the exit code
    (2 on bad config, an HTTP bind beyond loopback without ``WORKFLOW_SERVER_TOKEN`` included). Over HTTP
    the token (``http.with_generated_token``) is said once on stderr before the server binds.

    ``hard_exit`` ends the process with ``os._exit`` once the server has stopped, skipping interpreter
    teardown (seconds with the SDK's module graph loaded); every session write is already durable.
    ``prelude`` and ``recorder``: stdio only, from ``firstanswer.serve_stdio_fast`` (what its front read
    first; the tap that records the first answers and drops the replayed ``initialize``'s).
    """
    log = JsonLog()
    _configure_logging(log)
    guard: HttpGuard | None = None
    if settings.transport == "http":
        try:
            guard, token_line = with_generated_token(guard_from_env(settings, env), settings, env)
        except ValueError as exc:
            return _config_error(log, str(exc))
        print(f"orchestrator mcp: {token_line}", file=sys.stderr, flush=True)  # once; stdout stays clean
    try:
        state = build_state(settings, log=log, env=env, preload=False)  # loaded while the client connects
        server = build_server(state)
    except (WorkspaceConfigError, SessionStoreError) as exc:
        return _config_error(log, exc.message)
    sink = _trace_export(server, env)
    log.info(
        "server_started",
        name=settings.server_name,
        version=settings.server_version,
        workflow_dir=str(settings.workflow_dir),
        workspace=str(settings.workspace) if settings.workspace else None,
        pid=os.getpid(),
        transport=settings.transport,
    )
    try:
        if guard is not None:

            def listening(binds: list[str]) -> None:
                urls = [f"{bind}/mcp" for bind in binds]
                log.info("http_listening", urls=urls, token_required=guard.token is not None)

            anyio.run(run_http, server, settings, guard, listening, backend="trio")
        else:
            anyio.run(partial(run_stdio, server, prelude=prelude, tap=recorder), backend="trio")
    except KeyboardInterrupt:
        return 130
    except OSError as exc:  # e.g. the port is taken
        return _config_error(log, f"cannot listen on {settings.host}:{settings.port}: {exc.strerror or exc}")
    except BaseExceptionGroup as group:  # the same, raised inside the HTTP server's nursery
        found = _first_os_error(group)
        if found is None:
            raise
        return _config_error(log, f"cannot listen on {settings.host}:{settings.port}: {found.strerror or found}")
    log.info("server_stopped")
    if sink is not None:
        sink.close()  # bounded by its shutdown timeout
    if hard_exit:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0
