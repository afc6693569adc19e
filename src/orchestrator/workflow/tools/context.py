"""The per-call helpers every tool handler uses (see ``tools/__init__.py`` for the contract).

``ServerState`` is the one object a server owns (settings, corpus cache, session store, trace store,
clock, log). ``McpCall`` is one MCP ``tools/call`` request to this server: validated arguments,
collected warnings and what the server needs afterwards to trace it; a handler answers it with an
``McpReply`` (the text and ``_meta`` of the MCP result). Neither is the engine's ``ToolCall`` /
``ToolResult`` (a model's tool call inside a run). ``SessionCall`` is a located session inside a call:
a working copy of its ``SessionFile`` that handlers change through small helpers and then ``save``
(seq + 1, ts) once.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from orchestrator.vocabulary import json_type
from orchestrator.workflow.errors import (
    ActivityNotFoundError,
    WorkflowCheckpointError,
    WorkflowNotFoundError,
)
from orchestrator.workflow.session.roots import to_host_path
from orchestrator.workflow.session.sealed import revision_of
from orchestrator.workflow.session.sessionfile import (
    HistoryEvent,
    HistoryType,
    SessionFile,
    new_history,
    replace_at,
    state_at,
    touch,
)
from orchestrator.workflow.tools.render import to_json, to_yaml

if TYPE_CHECKING:
    from orchestrator.workflow.corpus.model import Activity, Corpus, Workflow
    from orchestrator.workflow.serverconfig import WorkflowSettings
    from orchestrator.workflow.session.keys import LazyKey
    from orchestrator.workflow.session.store import SessionHandle, SessionStore
    from orchestrator.workflow.session.trace import TraceStore
    from orchestrator.workflow.tools.runtime import CorpusCache, JsonLog

__all__ = [
    "MAX_PARENT_DEPTH",
    "McpCall",
    "McpReply",
    "ServerState",
    "SessionCall",
    "ToolHandler",
    "ToolSpec",
    "content_hash",
    "type_check",
]

MAX_PARENT_DEPTH = 5
_PLACEHOLDER = re.compile(r"^\{[^{}]*\}$")


@dataclass
class ServerState:
    """Everything handlers share for the life of one server process."""

    settings: WorkflowSettings
    corpus_cache: CorpusCache
    store: SessionStore
    traces: TraceStore
    key: LazyKey
    log: JsonLog
    clock: Callable[[], float] = time.time
    started_monotonic: float = field(default_factory=time.monotonic)
    _memo: dict[Any, Any] = field(default_factory=dict)
    _memo_generation: int = -1

    def corpus(self) -> Corpus:
        """The loaded corpus (reloaded when files changed; see ``CorpusCache``)."""
        return self.corpus_cache.get()

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """A value derived purely from the corpus, computed once per corpus load (cleared on reload)."""
        self.corpus()
        if self._memo_generation != self.corpus_cache.generation:
            self._memo.clear()
            self._memo_generation = self.corpus_cache.generation
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def now(self) -> float:
        """Wall-clock unix seconds (injectable for tests)."""
        return self.clock()

    def host_path(self, path: str | Path | None) -> str | None:
        """An agent-facing path (server → host bind path when ``HOST_PROJECTS_ROOT`` is set)."""
        return None if path is None else to_host_path(path, self.settings)


@dataclass
class McpReply:
    """What a handler returns for one MCP call: one text content item and the optional ``_meta`` object."""

    text: str
    meta: dict[str, Any] | None = None


class McpCall:
    """One MCP tool call to this server. ``args`` are validated (``None`` values dropped) before the handler runs."""

    def __init__(self, state: ServerState, tool: str, args: dict[str, Any]) -> None:
        self.state = state
        self.tool = tool
        self.args = args
        self.warnings: list[str] = []
        self.session: SessionCall | None = None
        raw_index = args.get("session_index")
        self.trace_index: str | None = raw_index if isinstance(raw_index, str) else None

    @property
    def agent_id(self) -> str | None:
        """The ``agent_id`` argument, if the caller passed one."""
        value = self.args.get("agent_id")
        return value if isinstance(value, str) and value else None

    def warn(self, message: str | None) -> None:
        """Add a validation warning (ignored when ``None``/empty or already present)."""
        if message and message not in self.warnings:
            self.warnings.append(message)

    def validation(self) -> dict[str, Any]:
        return {"status": "warning" if self.warnings else "valid", "warnings": list(self.warnings)}

    def open(self, index: str | None = None, *, lock: bool = False) -> SessionCall:
        """Locate the session (default: the ``session_index`` argument) and make it this call's session.

        ``lock=True`` refuses (``CHECKPOINT_ACTIVE``, text ``Active checkpoint '<id>' …``) when a checkpoint
        is active — the checkpoint lock for get_workflow, next_activity, get_activity, get_technique, get_resource
        and get_trace. Store errors (``INVALID_INDEX``, ``NOT_FOUND``, ``SEAL_MISMATCH`` …) propagate.
        """
        target = index if index is not None else self.args["session_index"]
        handle = self.state.store.locate(target)
        session = SessionCall(self, handle)
        self.session = session
        if lock:
            session.refuse_if_locked()
        return session

    def adopt(self, handle: SessionHandle) -> SessionCall:
        """Make an already located/created session this call's session (and its trace target)."""
        session = SessionCall(self, handle)
        self.session = session
        self.trace_index = session.index
        return session

    def corpus(self) -> Corpus:
        return self.state.corpus()

    def json(self, payload: Any, meta: dict[str, Any] | None = None) -> McpReply:
        """A JSON (2-space) result."""
        return McpReply(to_json(payload), meta)

    def yaml(self, payload: Any, meta: dict[str, Any] | None = None) -> McpReply:
        """A YAML (block style, no folding) result."""
        return McpReply(to_yaml(payload), meta)


class SessionCall:
    """A located session inside one call: a working copy of its ``SessionFile`` plus helpers.

    Nothing reaches disk until ``save``. ``state`` is replaced (never mutated) by the helpers.
    """

    def __init__(self, call: McpCall, handle: SessionHandle) -> None:
        self.call = call
        self.handle = handle
        self.state: SessionFile = handle.state
        self._workflow: Workflow | None = None
        if self.depth > MAX_PARENT_DEPTH:
            call.warn(f"Parent chain depth {self.depth} exceeds the supported maximum of {MAX_PARENT_DEPTH}")

    # ----------------------------------------------------------------------------------- identity

    @property
    def index(self) -> str:
        return self.state.session_index

    @property
    def server(self) -> ServerState:
        return self.call.state

    @property
    def depth(self) -> int:
        """How many parents this session has (0 for a top-level session)."""
        return len(self.handle.path)

    @property
    def transient(self) -> bool:
        return self.handle.transient

    @property
    def folder(self) -> Path:
        """The folder holding the top-level file (a temp folder for transients)."""
        return self.handle.folder

    @property
    def planning_folder(self) -> Path | None:
        """The durable planning folder (``None`` for a transient)."""
        return None if self.handle.transient else self.handle.folder

    @property
    def planning_folder_path(self) -> str | None:
        """The agent-facing (host) path of the planning folder, ``None`` for a transient."""
        folder = self.planning_folder
        return self.server.host_path(os.path.realpath(folder)) if folder is not None else None

    @property
    def agent_id(self) -> str:
        """The call's ``agent_id``, else the session's agent."""
        return self.call.agent_id or self.state.agent_id

    def parent(self) -> SessionFile | None:
        """The embedding parent session (as stored), ``None`` for a top-level session."""
        if not self.handle.path:
            return None
        return state_at(self.handle.top, self.handle.path[:-1])

    # ----------------------------------------------------------------------------------- gates

    def refuse_if_locked(self) -> None:
        """``CHECKPOINT_ACTIVE`` when a checkpoint is active (see ``McpCall.open``)."""
        active = self.state.active_checkpoint
        if active is not None:
            raise WorkflowCheckpointError(
                "CHECKPOINT_ACTIVE",
                f"Active checkpoint '{active.checkpoint_id}' on activity '{active.activity_id}' blocks "
                f"{self.call.tool}; the orchestrator must resolve it first (present_checkpoint, then "
                "respond_checkpoint)",
            )

    # ----------------------------------------------------------------------------------- corpus

    def workflow(self) -> Workflow:
        """The session's workflow from the current corpus; warns once on version drift.

        Raises ``WorkflowNotFoundError`` when the corpus no longer has it.
        """
        if self._workflow is None:
            workflow = self.call.corpus().get_workflow(self.state.workflow_id)
            if workflow is None:
                raise WorkflowNotFoundError(f"Workflow not found: {self.state.workflow_id}")
            self._workflow = workflow
            if self.state.workflow_version and workflow.version != self.state.workflow_version:
                self.call.warn(
                    f"Workflow version drift: session started with v{self.state.workflow_version} but current "
                    f"definition is v{workflow.version}; the workflow changed mid-session"
                )
        return self._workflow

    def activity(self, activity_id: str) -> Activity:
        """An activity of the session's workflow; ``ActivityNotFoundError`` (``Activity not found: <id>``)."""
        found = self.workflow().get_activity(activity_id)
        if found is None:
            raise ActivityNotFoundError(f"Activity not found: {activity_id} (workflow {self.state.workflow_id})")
        return found

    # ----------------------------------------------------------------------------------- changes

    def update(self, **fields: Any) -> SessionFile:
        """Replace top-level fields of the working copy (snake_case names)."""
        self.state = msgspec.structs.replace(self.state, **fields)
        return self.state

    def event(self, type: HistoryType, **fields: Any) -> HistoryEvent:
        """A history event stamped with the server clock (not yet appended)."""
        return new_history(type, now=self.server.now(), **fields)

    def record(self, type: HistoryType, *, data: dict[str, Any] | None = None, **fields: Any) -> HistoryEvent:
        """Append one history event (``activity=``, ``step=``, ``checkpoint=``… as keywords)."""
        entry = self.event(type, data=data, **fields)
        self.state = msgspec.structs.replace(self.state, history=[*self.state.history, entry])
        return entry

    def set_variable(
        self, name: str, value: Any, source: str, *, activity: str | None = None, workflow: Workflow | None = None
    ) -> None:
        """Write one bag variable and append ``variable_set``; a declared-type mismatch is stored and warned."""
        data: dict[str, Any] = {"name": name, "value": value, "source": source}
        wf = workflow if workflow is not None else self.workflow()
        decl = wf.variable(name)
        if decl is not None:
            actual, mismatch = type_check(decl.type, value)
            data["declaredType"] = decl.type
            data["valueType"] = actual
            if mismatch:
                data["typeMismatch"] = True
                self.call.warn(
                    f"Variable '{name}' is declared as {decl.type} but was set to a {actual} value ({source})"
                )
        self.update(variables={**self.state.variables, name: value})
        self.record("variable_set", activity=activity or None, data=data)

    # ----------------------------------------------------------------------------------- ledger

    def delivered(self, key: str, *, scope: str | None = None) -> str | None:
        """The hash recorded for ``key`` in the delivery ledger of ``scope`` (default: the call's agent)."""
        ledger = self.state.delivered_content or {}
        return ledger.get(scope or self.agent_id, {}).get(key)

    def remember_delivery(self, entries: dict[str, str], *, scope: str | None = None) -> None:
        """Record ``{ledger key: content hash}`` for ``scope`` (default: the call's agent)."""
        if not entries:
            return
        who = scope or self.agent_id
        ledger = dict(self.state.delivered_content or {})
        ledger[who] = {**ledger.get(who, {}), **entries}
        self.update(delivered_content=ledger)

    # ----------------------------------------------------------------------------------- persistence

    def save(self, *, top_edit: Callable[[SessionFile], SessionFile] | None = None) -> None:
        """Write the working copy (seq + 1, ts = now) into the top-level file, sealed.

        ``top_edit`` may then adjust the whole top-level file (e.g. flip the parent's child entry); it
        receives the file with this session already replaced and returns the file to write.
        """
        stamped = touch(self.state, now=self.server.now())
        top = replace_at(self.handle.top, self.handle.path, stamped)
        if top_edit is not None:
            top = top_edit(top)
        data = self.server.store.write(self.handle.folder, top, expected=self.handle.revision)
        self.handle = msgspec.structs.replace(self.handle, top=top, revision=revision_of(data))
        self.state = state_at(top, self.handle.path)

    def reload(self) -> None:
        """Re-read the session from disk, discarding unsaved changes (use just before a late save)."""
        handle = self.server.store.locate(self.index)
        self.handle = handle
        self.state = handle.state

    # ----------------------------------------------------------------------------------- results

    def meta(self, **extra: Any) -> dict[str, Any]:
        """``{session_index, validation: {status, warnings}, **extra}`` (``None`` extras dropped)."""
        out: dict[str, Any] = {"session_index": self.index, "validation": self.call.validation()}
        out.update({k: v for k, v in extra.items() if v is not None})
        return out

    def json(self, payload: Any, **meta_extra: Any) -> McpReply:
        """A JSON result carrying this session's ``_meta``."""
        return McpReply(to_json(payload), self.meta(**meta_extra))

    def yaml(self, payload: Any, **meta_extra: Any) -> McpReply:
        """A YAML result carrying this session's ``_meta``."""
        return McpReply(to_yaml(payload), self.meta(**meta_extra))

    def text(self, text: str, **meta_extra: Any) -> McpReply:
        """A pre-rendered text result carrying this session's ``_meta``."""
        return McpReply(text, self.meta(**meta_extra))


ToolHandler = Callable[[McpCall], McpReply]


@dataclass(frozen=True)
class ToolSpec:
    """A registered tool: name, description, explicit input schema and the synchronous handler.

    Handlers are plain functions (no awaits), so one call's read-modify-write of a session file is never
    interleaved with another call in this process.
    """

    name: str
    description: str
    schema: dict[str, Any]
    handler: ToolHandler


def content_hash(text: str) -> str:
    """The delivery hash: first 16 hex digits of SHA-256 of the delivered text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def type_check(declared: str, value: Any) -> tuple[str, bool]:
    """(value type, mismatch?) against a declared type; a ``{placeholder}`` string never mismatches."""
    actual = json_type(value)
    if isinstance(value, str) and _PLACEHOLDER.match(value):
        return actual, False
    return actual, actual != declared
