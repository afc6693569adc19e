"""The workflow server on the official ``mcp`` SDK: its tools, the call pipeline, its shared state.

Transport-free: ``launch.py`` starts it on stdio (``launch.run_stdio``) or Streamable HTTP (``http.py``).

Every tool is a row of ``TOOL_TABLE`` (one ``ToolSpec`` per tool, exported by its ``tools/`` module). A
call runs this pipeline, in ``WorkflowMCP.call_tool``:

1. validate the arguments against the tool's explicit schema (``InvalidParams: …`` before any handler);
2. run the synchronous handler with an ``McpCall``;
3. map ``WorkflowError`` to an ``isError`` result whose text is ``str(err)`` (``CODE: message``); any other
   exception is logged with its traceback and reported as ``InternalError: …``;
4. append a trace event for the call's session (every call carrying ``session_index``, success or error);
5. write one JSON audit line on stderr (tool, ms, outcome, session, arguments cut at 8 KB).

Nothing is ever printed to stdout: it is the MCP wire.
"""

from __future__ import annotations

import logging
import os
import re
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resources import FunctionResource
from mcp.types import CallToolResult, TextContent
from mcp.types import Tool as MCPTool

from orchestrator.workflow.errors import WorkflowError, WorkspaceConfigError
from orchestrator.workflow.serverconfig import WorkflowSettings
from orchestrator.workflow.session.keys import KEY_FILE_NAME, LazyKey
from orchestrator.workflow.session.store import SessionStore
from orchestrator.workflow.session.trace import TraceStore, new_trace_event
from orchestrator.workflow.tools import checkpoints, cold, delivery, navigation, sessions, status
from orchestrator.workflow.tools.context import McpCall, McpReply, ServerState, ToolSpec
from orchestrator.workflow.tools.params import validate_args
from orchestrator.workflow.tools.render import to_json
from orchestrator.workflow.tools.runtime import CorpusCache, JsonLog

__all__ = ["TOOL_TABLE", "CallRecord", "WorkflowMCP", "build_server", "build_state", "preload_corpus"]

# One row per tool. A new tools module adds its ToolSpecs here, one line each.
TOOL_TABLE: tuple[ToolSpec, ...] = (
    cold.DISCOVER,
    cold.LIST_WORKFLOWS,
    cold.HEALTH_CHECK,
    sessions.START_SESSION,
    sessions.DISPATCH_CHILD,
    navigation.GET_WORKFLOW,
    navigation.NEXT_ACTIVITY,
    delivery.GET_ACTIVITY,
    delivery.GET_TECHNIQUE,
    delivery.GET_RESOURCE,
    checkpoints.YIELD_CHECKPOINT,
    checkpoints.PRESENT_CHECKPOINT,
    checkpoints.RESPOND_CHECKPOINT,
    checkpoints.RESUME_CHECKPOINT,
    status.GET_WORKFLOW_STATUS,
    status.INSPECT_SESSION,
    status.RECORD_USAGE,
    status.GET_TRACE,
)

_INDEX = re.compile(r"[A-Z2-7]{6}")
_UNTRACED_CODES = frozenset({"INVALID_INDEX", "NOT_FOUND"})
SCHEMA_NAMES = ("workflow", "activity", "condition", "technique", "state")
INSTRUCTIONS = (
    "Workflow server: call discover first, then list_workflows and start_session. Every other tool needs the "
    "session_index that start_session (or dispatch_child) returns."
)


def _offset_clock(path: Path) -> Callable[[], float]:
    def clock() -> float:
        try:
            return time.time() + float(path.read_text().strip() or 0)
        except (OSError, ValueError):
            return time.time()

    return clock


def build_state(
    settings: WorkflowSettings,
    *,
    log: JsonLog | None = None,
    env: Mapping[str, str] | None = None,
    preload: bool = True,
) -> ServerState:
    """The server's shared state. Raises ``WorkspaceConfigError`` for an unusable workflow dir or key.

    ``WORKFLOW_CORPUS_RECHECK_SECONDS`` (env, default 1) bounds how often the corpus files are re-statted.
    ``WORKFLOW_SERVER_CLOCK_OFFSET_FILE`` (env, tests only) names a file holding seconds to add to the
    wall clock, re-read on every reading, so a test over stdio can move time past a checkpoint floor or
    timer without sleeping; a missing or unreadable file adds nothing.
    """
    from orchestrator.workflow.corpus import load_corpus

    env = env if env is not None else os.environ
    log = log or JsonLog()
    if not settings.workflow_dir.is_dir():
        raise WorkspaceConfigError(
            f"workflow directory {settings.workflow_dir} does not exist (--workflow-dir / WORKFLOW_DIR)"
        )
    key = LazyKey(settings.key_dir)
    if (settings.key_dir / KEY_FILE_NAME).exists():
        key.get()  # a damaged key is fatal at startup, not at the first session call
    try:
        interval = max(0.0, float(env.get("WORKFLOW_CORPUS_RECHECK_SECONDS", "1")))
    except ValueError:
        interval = 1.0
    cache = CorpusCache(
        settings.workflow_dir,
        load_corpus,
        interval=interval,
        on_reload=lambda sig: log.info("corpus_loaded", workflow_dir=str(settings.workflow_dir), signature=sig),
    )
    offset_file = env.get("WORKFLOW_SERVER_CLOCK_OFFSET_FILE")
    state = ServerState(
        clock=_offset_clock(Path(offset_file)) if offset_file else time.time,
        settings=settings,
        corpus_cache=cache,
        store=SessionStore(settings, key),
        traces=TraceStore(key, logger=logging.getLogger("orchestrator.workflow.trace")),
        key=key,
        log=log,
    )
    if preload:
        state.corpus()  # load once now, so the first call is fast (``serve_main`` overlaps it with the handshake)
    return state


async def preload_corpus(state: ServerState) -> None:
    """Load the corpus on a worker thread while the client's ``initialize`` is answered; a call that needs
    it first waits for this load (``CorpusCache`` holds a lock) instead of starting a second one. Bad
    content never raises (it becomes load errors); anything else is logged and left to the first call."""
    try:
        await trio.to_thread.run_sync(state.corpus)
    except Exception as exc:
        state.log.error("corpus_preload_failed", error=_error_text(exc))


def _error_text(exc: BaseException) -> str:
    return f"InternalError: {type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class CallRecord:
    """One finished tool call, as ``WorkflowMCP.call_listeners`` see it (the trace export's input)."""

    tool: str
    started_ns: int
    ms: float
    session_index: str | None
    workflow: str
    activity: str
    agent_id: str
    #: the error code of a failed call (``None``: it succeeded)
    error_code: str | None


class WorkflowMCP(MCPServer):
    """``MCPServer`` whose tools come from a ``ToolSpec`` table with explicit input schemas."""

    def __init__(self, state: ServerState, tools: Sequence[ToolSpec] = TOOL_TABLE) -> None:
        super().__init__(
            name=state.settings.server_name,
            version=state.settings.server_version,
            instructions=INSTRUCTIONS,
            warn_on_duplicate_resources=False,
        )
        self.state = state
        #: called with every finished tool call; must not block (a failing one is logged, never raised)
        self.call_listeners: list[Callable[[CallRecord], None]] = []
        self.specs: dict[str, ToolSpec] = {}
        for spec in tools:
            if spec.name in self.specs:
                raise ValueError(f"tool '{spec.name}' is registered twice")
            self.specs[spec.name] = spec
        self._register_schema_resources()

    async def list_tools(self) -> list[MCPTool]:
        return [
            MCPTool(name=spec.name, description=spec.description, input_schema=spec.schema)
            for spec in self.specs.values()
        ]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> CallToolResult:
        return self.dispatch(name, arguments)

    def dispatch(self, name: str, arguments: Mapping[str, Any] | None) -> CallToolResult:
        """Run one tool call through the whole pipeline (synchronously)."""
        started = time.perf_counter()
        started_ns = time.time_ns()
        spec = self.specs.get(name)
        raw = dict(arguments or {})
        call = McpCall(self.state, name, {})
        raw_index = raw.get("session_index")
        call.trace_index = raw_index if isinstance(raw_index, str) else None
        result: McpReply | None = None
        error: str | None = None
        code: str | None = None
        try:
            if spec is None:
                raise WorkflowError(f"Unknown tool: {name}", code="UnknownTool")
            call.args = validate_args(raw, spec.schema)
            result = spec.handler(call)
        except WorkflowError as exc:
            error, code = str(exc), exc.code
        except Exception as exc:
            error, code = _error_text(exc), "InternalError"
            self.state.log.error("tool_crash", tool=name, error=error, traceback=traceback.format_exc())
        ms = (time.perf_counter() - started) * 1000
        self._trace(call, ms, error, code)
        self._audit(call, raw, ms, error, code)
        if self.call_listeners:
            self._notify(call, started_ns, ms, code)
        if error is not None:
            return CallToolResult(content=[TextContent(type="text", text=error)], is_error=True)
        assert result is not None
        return CallToolResult(content=[TextContent(type="text", text=result.text)], _meta=result.meta)

    def _trace(self, call: McpCall, ms: float, error: str | None, code: str | None) -> None:
        index = call.trace_index
        if index is None or not _INDEX.fullmatch(index) or code in _UNTRACED_CODES:
            return
        session = call.session
        parent = session.parent() if session is not None and session.index == index else None
        try:
            event = new_trace_event(
                index,
                call.tool,
                ms=ms,
                ok=error is None,
                wf=session.state.workflow_id if session is not None else "",
                act=session.state.current_activity if session is not None else "",
                aid=call.agent_id or (session.state.agent_id if session is not None else ""),
                err=error,
                vw=call.warnings or None,
                psid=parent.session_index if parent is not None else None,
                pdepth=session.depth if parent is not None and session is not None else None,
                now=self.state.now(),
            )
            warning = self.state.traces.append(index, event)
        except Exception as exc:  # tracing must never turn a result into a failure
            self.state.log.error("trace_failed", tool=call.tool, error=_error_text(exc))
            return
        if warning:
            self.state.log.warn("trace_evicted", message=warning)

    def _notify(self, call: McpCall, started_ns: int, ms: float, code: str | None) -> None:
        session = call.session
        record = CallRecord(
            tool=call.tool,
            started_ns=started_ns,
            ms=ms,
            session_index=call.trace_index,
            workflow=session.state.workflow_id if session is not None else "",
            activity=session.state.current_activity if session is not None else "",
            agent_id=call.agent_id or (session.state.agent_id if session is not None else ""),
            error_code=code,
        )
        for listener in self.call_listeners:
            try:
                listener(record)
            except Exception as exc:  # an observer must never turn a result into a failure
                self.state.log.error("call_listener_failed", tool=call.tool, error=_error_text(exc))

    def _audit(self, call: McpCall, raw: dict[str, Any], ms: float, error: str | None, code: str | None) -> None:
        fields: dict[str, Any] = {"tool": call.tool, "ms": round(ms, 3), "outcome": "error" if error else "ok"}
        if call.trace_index:
            fields["session_index"] = call.trace_index
        if call.warnings:
            fields["warnings"] = call.warnings
        if error:
            fields["code"] = code
            fields["error"] = error
        fields["args"] = raw
        (self.state.log.warn if error else self.state.log.info)("tool_call", **fields)

    # ------------------------------------------------------------------------------------- resources

    def _register_schema_resources(self) -> None:
        async def index() -> str:
            uris = [f"workflow-server://schemas/{name}" for name in SCHEMA_NAMES]
            return to_json({"schemas": uris, "source": _schema_source(self.state.settings.schemas_dir)})

        self.add_resource(
            FunctionResource.from_function(
                index,
                uri="workflow-server://schemas",
                name="schemas",
                mime_type="application/json",
                description="Index of the JSON schemas for workflow, activity, condition, technique and state.",
            )
        )
        for name in SCHEMA_NAMES:
            self.add_resource(
                FunctionResource.from_function(
                    _schema_reader(self.state.settings.schemas_dir, name),
                    uri=f"workflow-server://schemas/{name}",
                    name=f"{name}-schema",
                    mime_type="application/json",
                    description=f"JSON schema of a {name} definition.",
                )
            )


def _schema_source(schemas_dir: Path) -> str:
    return str(schemas_dir) if schemas_dir.is_dir() else "generated"


def _schema_reader(schemas_dir: Path, name: str) -> Any:
    async def read() -> str:
        file = schemas_dir / f"{name}.schema.json"
        if file.is_file():
            return file.read_text(encoding="utf-8")
        return to_json(_generated_schema(name))

    read.__name__ = f"{name}_schema"
    return read


def _generated_schema(name: str) -> Any:
    """A JSON schema generated from the msgspec Structs that decode that format."""
    import msgspec

    from orchestrator.workflow.corpus import model
    from orchestrator.workflow.corpus.conditions import Condition
    from orchestrator.workflow.session.sessionfile import SessionFile

    target: Any = {
        "workflow": model.WorkflowDef,
        "activity": model.ActivityDef,
        "condition": Condition,
        "technique": model.Technique,
        "state": SessionFile,
    }[name]
    return msgspec.json.schema(target)


def build_server(state: ServerState, tools: Sequence[ToolSpec] = TOOL_TABLE) -> WorkflowMCP:
    return WorkflowMCP(state, tools)
