"""The ``InteractionModel`` wire shapes: what ``GET /api/runs/:id/flow`` serves and both views read.

These Structs do **not** use ``Base``: the model's nullable fields (``settledAt``, ``outcome``,
``metrics``) are part of the contract and must appear as ``null`` rather than be omitted. They are frozen
so finalized operations can be shared between successive models of an incrementally folded run.
"""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = [
    "ACTIVE_STATUSES",
    "MAIN_STACK",
    "ROOT_ID",
    "RUN_STATUSES",
    "InteractionModel",
    "Lifecycle",
    "Metrics",
    "Operation",
    "OperationKind",
    "Outcome",
    "Participant",
    "ParticipantKind",
    "RunStatus",
    "StackRecord",
    "run_status",
]

ParticipantKind = Literal["human", "interrupt", "role", "tool"]
OperationKind = Literal["call", "return", "observe", "terminate"]
Lifecycle = Literal["in_flight", "settled"]
Outcome = Literal["success", "error", "terminated"]
Severity = Literal["warn", "fail"]
RunStatus = Literal["running", "success", "error", "needs_clarification", "interrupted", "cancelled", "unknown"]

ROOT_ID = "human:root"
MAIN_STACK = "main"
RUN_STATUSES: frozenset[str] = frozenset(
    {"running", "success", "error", "needs_clarification", "interrupted", "cancelled", "unknown"}
)
#: Statuses under which open work is still in flight at ``now`` (the run may still produce events).
ACTIVE_STATUSES: frozenset[str] = frozenset({"running", "needs_clarification", "unknown"})


class _Wire(msgspec.Struct, kw_only=True, rename="camel", frozen=True):
    """camelCase, every field always present (``None`` encodes as ``null``)."""


class Participant(_Wire):
    id: str
    role: str
    kind: ParticipantKind
    #: the engine's role-instance id (``roleId``, e.g. ``coder-1-2``) of a role participant, so a view can
    #: scope the log to it (``?instance=``); ``null`` for every other kind (our addition to the seed shape)
    instance_id: str | None = None


class Metrics(_Wire):
    tokens: int
    cached_prompt_tokens: int
    elapsed_seconds: int | None
    #: the same interval to the millisecond (our addition; ``null`` when a timestamp does not parse)
    elapsed_ms: int | None = None


class Operation(_Wire):
    id: str
    kind: OperationKind
    stack: str
    source: str
    destination: str
    started_at: str
    settled_at: str | None
    lifecycle: Lifecycle
    outcome: Outcome | None
    metrics: Metrics | None
    #: on a return whose outcome is a problem: ``warn`` (amber) or ``fail`` (red), else ``null`` — see
    #: ``flow/outcome.py`` (a shell exit 1 is an ``error`` return with severity ``warn``); our addition
    severity: Severity | None = None
    #: the short reason for that severity (``exit 1``, ``not_found``, ``timeout``), else ``null``
    note: str | None = None
    #: what the operation was about, one short line (``flow/subject.py``): a tool call's path, command or
    #: query, a delegation's task, a return's exit status or summary; ``null`` when none (our addition)
    subject: str | None = None


class StackRecord(_Wire):
    id: str
    root: str


class TypeTotal(_Wire):
    """One role or tool type over the whole run (the flow strip's chip), whatever the window."""

    #: ``role:<name>`` / ``tool:<name>`` — the views' type key
    key: str
    kind: Literal["role", "tool"]
    name: str
    #: role instances started / tool calls made
    count: int
    tokens: int
    cached_prompt_tokens: int
    #: summed durations: of finished instances for a role, of answered calls for a tool
    ms: int
    #: error returns: failed cards for a role, results classified ``warn``/``fail`` for a tool
    errors: int


class InteractionModel(_Wire):
    """The run's flow model.

    ``activeStack`` / ``activeParticipant`` are the single invariant (see docs/visualization.md),
    derived once here so no view re-derives it: the stack whose lines animate, and the participant
    currently holding the turn.

    A *windowed* model (``GET /flow`` of a run longer than the window) keeps the newest operations plus
    every operation that is still live, in their original order, and the participants those touch plus
    every stack root; ``operationsOmitted``/``participantsOmitted`` count what it left out. Operation ids
    and participant ids are those of the whole model, so ``?operation=`` works on either.
    """

    participants: list[Participant]
    operations: list[Operation]
    status: RunStatus
    stacks: list[StackRecord]
    active_stack: str
    active_participant: str
    #: operations in the whole run; equals ``len(operations)`` unless the model is windowed
    operations_total: int = 0
    #: settled operations older than the window that this model leaves out (0: the model is whole)
    operations_omitted: int = 0
    #: participants left out because no operation in the window touches them
    participants_omitted: int = 0
    #: every role and tool type of the whole run (``flow/calltree.py``), filled in by the run index;
    #: unlike a tally of ``operations`` it does not shrink with the window
    totals: list[TypeTotal] = []


def run_status(meta_status: str | None) -> RunStatus:
    """The model status for a meta status; missing, unreadable or unrecognised meta → ``unknown``."""
    if meta_status in RUN_STATUSES:
        return meta_status  # type: ignore[return-value]
    return "unknown"
