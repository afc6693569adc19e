"""The schema of ``session.json`` (schemaVersion 1) as msgspec Structs, plus pure helpers.

The Structs *are* the file format: camelCase keys on disk, unknown keys and unknown history types
rejected when decoding (a file that does not fit is reported as ``SEAL_MISMATCH`` by the store).
A Python ``None`` in an optional field means "absent": the canonical encoder drops it, so the file
never carries ``null`` for a missing field (``null`` survives only inside free-form values such as
``variables`` and history ``data``).

Treat the Structs as values: build changed copies with ``msgspec.structs.replace`` and the helpers
here (``touch``, ``replace_at``, ``with_history``) rather than mutating a state other code holds.
Children are embedded at ``triggeredWorkflows[i].state``; a child's *slot path* is the tuple of those
``i`` from the top file down (``()`` is the top-level session itself).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, get_args

import msgspec

__all__ = [
    "HISTORY_TYPES",
    "INDEX_PATTERN",
    "ActiveCheckpoint",
    "AdhocCheckpoint",
    "AdhocOption",
    "CheckpointEffects",
    "CheckpointResponse",
    "DeclaredArtifact",
    "HistoryError",
    "HistoryEvent",
    "HistoryType",
    "ParentSession",
    "SessionFile",
    "SlotPath",
    "TriggeredFrom",
    "TriggeredWorkflow",
    "find_index",
    "iso_utc",
    "new_history",
    "new_session_file",
    "replace_at",
    "state_at",
    "touch",
    "walk_children",
    "walk_sessions",
    "with_history",
]

INDEX_PATTERN = r"^[A-Z2-7]{6}$"
SessionIndex = Annotated[str, msgspec.Meta(pattern=INDEX_PATTERN)]
NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
SlotPath = tuple[int, ...]

HistoryType = Literal[
    "workflow_started",
    "workflow_completed",
    "workflow_aborted",
    "workflow_triggered",
    "workflow_returned",
    "workflow_suspended",
    "activity_entered",
    "activity_exited",
    "activity_skipped",
    "step_started",
    "step_completed",
    "checkpoint_reached",
    "checkpoint_response",
    "checkpoint_replayed",
    "decision_reached",
    "decision_branch_taken",
    "loop_started",
    "loop_iteration",
    "loop_completed",
    "loop_break",
    "variable_set",
    "error",
    "technique_fetched",
    "resource_fetched",
    "technique_bundled",
    "variables_seeded",
    "activity_usage",
    "activity_dispatched",
    "activity_redelivered",
    "batch_refused",
    "activity_outcome",
    "progress_published",
]
HISTORY_TYPES: frozenset[str] = frozenset(get_args(HistoryType))


class _Wire(msgspec.Struct, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """Policy for every session-file Struct: camelCase keys, closed objects."""


class HistoryError(_Wire, kw_only=True):
    message: str
    code: str | None = None


class HistoryEvent(_Wire, kw_only=True):
    """One ``history[]`` entry. ``type`` is closed: an unknown name makes the whole file invalid."""

    timestamp: str
    type: HistoryType
    activity: str | None = None
    step: int | str | None = None
    checkpoint: str | None = None
    decision: str | None = None
    loop: str | None = None
    data: dict[str, Any] | None = None
    error: HistoryError | None = None


class AdhocOption(_Wire, kw_only=True):
    id: NonEmpty
    label: NonEmpty
    description: str | None = None


class AdhocCheckpoint(_Wire, kw_only=True):
    message: NonEmpty
    options: Annotated[list[AdhocOption], msgspec.Meta(min_length=2)]


class ActiveCheckpoint(_Wire, kw_only=True):
    checkpoint_id: NonEmpty
    activity_id: str
    yielded_at: str
    adhoc: AdhocCheckpoint | None = None


class CheckpointEffects(_Wire, kw_only=True):
    variables_set: dict[str, Any] | None = None
    transitioned_to: str | None = None
    activities_skipped: list[str] | None = None
    reply: str | None = None


class CheckpointResponse(_Wire, kw_only=True):
    """``checkpointResponses["<activityId>-<checkpointId>"]``."""

    option_id: str
    responded_at: str
    effects: CheckpointEffects | None = None


class TriggeredFrom(_Wire, kw_only=True):
    activity_id: str
    step_index: int | None = None


class DeclaredArtifact(_Wire, kw_only=True):
    id: str
    name: str
    path: str | None = None


class ParentSession(_Wire, kw_only=True):
    session_index: SessionIndex
    workflow_id: str | None = None
    activity_id: str | None = None


class SessionFile(_Wire, kw_only=True):
    """One session: the top-level file, or a child embedded at ``triggeredWorkflows[i].state``."""

    schema_version: Literal[1] = 1
    session_index: SessionIndex
    workflow_id: NonEmpty
    workflow_version: str
    agent_id: str = "orchestrator"
    seq: Annotated[int, msgspec.Meta(ge=0)] = 0
    ts: Annotated[int, msgspec.Meta(ge=0)] = 0
    started_at: str
    status: Literal["running", "completed", "aborted"] = "running"
    current_activity: str = ""
    current_technique: str = ""
    condition: str = ""
    active_checkpoint: ActiveCheckpoint | None = None
    variables: dict[str, Any] = msgspec.field(default_factory=dict)
    completed_activities: list[str] = msgspec.field(default_factory=list)
    skipped_activities: list[str] = msgspec.field(default_factory=list)
    checkpoint_responses: dict[str, CheckpointResponse] = msgspec.field(default_factory=dict)
    history: list[HistoryEvent] = msgspec.field(default_factory=list)
    triggered_workflows: list[TriggeredWorkflow] = msgspec.field(default_factory=list)
    parent_session: ParentSession | None = None
    planning_folder_path: str | None = None
    repo: str | None = None
    context_mode: Literal["persistent", "fresh"] | None = None
    delivered_content: dict[str, dict[str, str]] | None = None
    declared_artifacts: list[DeclaredArtifact] | None = None


class TriggeredWorkflow(_Wire, kw_only=True):
    """A child entry; ``state`` embeds the child's whole ``SessionFile`` (recursively)."""

    workflow_id: str
    session_index: SessionIndex
    triggered_at: str
    triggered_from: TriggeredFrom
    status: Literal["running", "completed", "aborted", "error"] = "running"
    completed_at: str | None = None
    returned_context: dict[str, Any] | None = None
    state: SessionFile | None = None


# ---------------------------------------------------------------------------------------------- time


def iso_utc(now: float | None = None) -> str:
    """ISO-8601 UTC with milliseconds and ``Z`` (``2026-08-22T10:04:05.123Z``); ``now`` in unix seconds."""
    moment = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_history(type: HistoryType, *, now: float | None = None, **fields: Any) -> HistoryEvent:
    """A history event stamped ``now`` (unix seconds, default the wall clock).

    ``fields`` are the snake_case optional fields (``activity``, ``step``, ``checkpoint``, ``decision``,
    ``loop``, ``data``, ``error``). An unknown ``type`` raises ``ValueError`` naming it.
    """
    if type not in HISTORY_TYPES:
        raise ValueError(f"unknown history event type '{type}'")
    return HistoryEvent(timestamp=iso_utc(now), type=type, **fields)


def with_history(state: SessionFile, *events: HistoryEvent) -> SessionFile:
    """A copy of ``state`` with ``events`` appended to its history."""
    return msgspec.structs.replace(state, history=[*state.history, *events])


def touch(state: SessionFile, *, now: float | None = None) -> SessionFile:
    """A copy with ``seq`` + 1 and ``ts`` = ``now`` (unix seconds, floored): one per write."""
    stamp = int(time.time() if now is None else now)
    return msgspec.structs.replace(state, seq=state.seq + 1, ts=max(0, stamp))


def new_session_file(
    *,
    session_index: str,
    workflow_id: str,
    workflow_version: str,
    agent_id: str = "orchestrator",
    variables: dict[str, Any] | None = None,
    now: float | None = None,
    **fields: Any,
) -> SessionFile:
    """A fresh session (seq 0): history ``[workflow_started, variables_seeded {variables}]``.

    ``fields`` are further ``SessionFile`` fields (``planning_folder_path``, ``repo``, ``context_mode``…).
    """
    stamp = time.time() if now is None else now
    seeded = dict(variables or {})
    return SessionFile(
        session_index=session_index,
        workflow_id=workflow_id,
        workflow_version=workflow_version,
        agent_id=agent_id,
        seq=0,
        ts=int(stamp),
        started_at=iso_utc(stamp),
        variables=seeded,
        history=[
            new_history("workflow_started", now=stamp),
            new_history("variables_seeded", now=stamp, data={"variables": dict(seeded)}),
        ],
        **fields,
    )


# --------------------------------------------------------------------------------------- the tree


def walk_sessions(top: SessionFile) -> Iterator[tuple[SlotPath, SessionFile]]:
    """Every session in the file, depth-first in slot order, starting with ``((), top)``."""
    stack: list[tuple[SlotPath, SessionFile]] = [((), top)]
    while stack:
        path, state = stack.pop()
        yield path, state
        children = [
            ((*path, slot), entry.state)
            for slot, entry in enumerate(state.triggered_workflows)
            if entry.state is not None
        ]
        stack.extend(reversed(children))


def walk_children(top: SessionFile) -> Iterator[tuple[SlotPath, SessionFile]]:
    """Every embedded descendant (not ``top`` itself), depth-first in slot order."""
    walk = walk_sessions(top)
    next(walk)
    yield from walk


def find_index(top: SessionFile, index: str) -> list[SlotPath]:
    """Slot paths of every session in the file whose stored ``sessionIndex`` is ``index``."""
    return [path for path, state in walk_sessions(top) if state.session_index == index]


def state_at(top: SessionFile, path: SlotPath) -> SessionFile:
    """The session at ``path``. Raises ``LookupError`` naming the slot when it has no embedded state."""
    state = top
    for depth, slot in enumerate(path):
        if not 0 <= slot < len(state.triggered_workflows) or state.triggered_workflows[slot].state is None:
            where = ".".join(f"triggeredWorkflows.{s}.state" for s in path[: depth + 1])
            raise LookupError(f"no embedded session at {where}")
        child = state.triggered_workflows[slot].state
        assert child is not None
        state = child
    return state


def replace_at(top: SessionFile, path: SlotPath, new_state: SessionFile) -> SessionFile:
    """A copy of ``top`` with the session at ``path`` replaced by ``new_state`` (``top`` is untouched)."""
    if not path:
        return new_state
    slot, rest = path[0], path[1:]
    entries = list(top.triggered_workflows)
    entry = entries[slot] if 0 <= slot < len(entries) else None
    if entry is None or entry.state is None:
        raise LookupError(f"no embedded session at triggeredWorkflows.{slot}.state")
    entries[slot] = msgspec.structs.replace(entry, state=replace_at(entry.state, rest, new_state))
    return msgspec.structs.replace(top, triggered_workflows=entries)
