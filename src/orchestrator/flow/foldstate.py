"""The adapter's fold state: open call chains per stack, live operation records, frozen operations.

An operation is *live* while its wire form can still change (a call before its return, a return before
it is superseded) and *frozen* once it cannot; a frozen operation's ``Operation`` Struct is built once,
at freezing time, so finalizing a model only rebuilds the live ones.
"""

from __future__ import annotations

import math
from array import array
from datetime import datetime

from orchestrator.flow.model import (
    MAIN_STACK,
    ROOT_ID,
    Metrics,
    Operation,
    Outcome,
    Participant,
    ParticipantKind,
    Severity,
    StackRecord,
)
from orchestrator.flow.outcome import OK, Verdict

__all__ = ["CallRecord", "FlowState", "Frame", "ReturnRecord", "elapsed", "elapsed_ms", "epoch"]


def epoch(timestamp: str) -> float | None:
    """Seconds since the epoch of an ISO-8601 timestamp, ``None`` when unparsable."""
    try:
        return datetime.fromisoformat(timestamp).timestamp()
    except (TypeError, ValueError):
        return None


def elapsed(start: float | None, end: float | None) -> int | None:
    """Whole seconds from ``start`` to ``end`` (rounded half up, never negative)."""
    if start is None or end is None:
        return None
    return max(0, math.floor(end - start + 0.5))


def elapsed_ms(start: float | None, end: float | None) -> int | None:
    """Whole milliseconds from ``start`` to ``end`` (rounded half up, never negative)."""
    if start is None or end is None:
        return None
    return max(0, math.floor((end - start) * 1000 + 0.5))


class CallRecord:
    """A ``call`` operation while it may still change."""

    __slots__ = (
        "cached",
        "delegated_at",
        "dest_kind",
        "dest_role",
        "destination",
        "op_id",
        "position",
        "question_id",
        "returned_at",
        "source",
        "stack",
        "start_epoch",
        "started_at",
        "subject",
        "tokens",
        "turn_started_at",
    )

    def __init__(
        self,
        position: int,
        stack: str,
        source: str,
        destination: str,
        dest_role: str,
        dest_kind: ParticipantKind,
        started_at: str,
        question_id: str | None = None,
        subject: str | None = None,
    ) -> None:
        self.position = position
        self.op_id = f"op-{position + 1}"
        self.stack = stack
        self.source = source
        self.destination = destination
        self.dest_role = dest_role
        self.dest_kind: ParticipantKind = dest_kind
        self.started_at = started_at
        self.start_epoch = epoch(started_at)
        self.question_id = question_id
        self.subject = subject
        self.returned_at: str | None = None
        self.turn_started_at: str | None = None
        self.delegated_at: str | None = None
        self.tokens = 0
        self.cached = 0

    def operation(self, active: bool, now: str, now_epoch: float | None) -> Operation:
        """The wire form: settles at its return, else its callee's first turn, else its first nested
        call, else stays in flight while the run is active, else settles at ``now``."""
        settled = self.returned_at or self.turn_started_at or self.delegated_at
        if settled is None and not active:
            settled = now
        end = epoch(self.returned_at) if self.returned_at is not None else now_epoch
        return Operation(
            id=self.op_id,
            kind="call",
            stack=self.stack,
            source=self.source,
            destination=self.destination,
            started_at=self.started_at,
            settled_at=settled,
            lifecycle="in_flight" if settled is None else "settled",
            outcome=None,
            metrics=Metrics(
                tokens=self.tokens,
                cached_prompt_tokens=self.cached,
                elapsed_seconds=elapsed(self.start_epoch, end),
                elapsed_ms=elapsed_ms(self.start_epoch, end),
            ),
            subject=self.subject,
        )


class ReturnRecord:
    """A ``return`` operation while it may still linger."""

    __slots__ = (
        "caller_role",
        "destination",
        "note",
        "op_id",
        "outcome",
        "position",
        "severity",
        "source",
        "stack",
        "started_at",
        "subject",
        "superseded_at",
    )

    def __init__(
        self,
        position: int,
        stack: str,
        source: str,
        destination: str,
        caller_role: str,
        outcome: Outcome,
        started_at: str,
        verdict: Verdict = OK,
        subject: str | None = None,
    ) -> None:
        self.position = position
        self.op_id = f"op-{position + 1}"
        self.stack = stack
        self.source = source
        self.destination = destination
        self.caller_role = caller_role
        self.outcome: Outcome = outcome
        self.started_at = started_at
        self.superseded_at: str | None = None
        self.severity: Severity | None = None if verdict.ok else verdict.severity  # type: ignore[assignment]
        self.note: str | None = verdict.note or None
        self.subject = subject

    def operation(self, active: bool) -> Operation:
        """The wire form: settles when superseded; else in flight while active, else at its own time."""
        settled = self.superseded_at
        if settled is None and not active:
            settled = self.started_at
        return Operation(
            id=self.op_id,
            kind="return",
            stack=self.stack,
            source=self.source,
            destination=self.destination,
            started_at=self.started_at,
            settled_at=settled,
            lifecycle="in_flight" if settled is None else "settled",
            outcome=self.outcome,
            metrics=None,
            severity=self.severity,
            note=self.note,
            subject=self.subject,
        )


class Frame:
    """One call stack: its open call chain (outermost first) and its latest return, if any."""

    __slots__ = ("id", "lingering", "op_count", "open", "pushed", "root")

    def __init__(self, stack_id: str, root: str) -> None:
        self.id = stack_id
        self.root = root
        self.open: list[CallRecord] = []
        self.lingering: ReturnRecord | None = None
        self.op_count = 0
        self.pushed = True


class FlowState:
    """Everything the fold carries between events. Mutated in place by ``fold``; read by ``finalize``."""

    def __init__(self) -> None:
        #: events folded so far (the next event's log index)
        self.events = 0
        self.participants: list[Participant] = [Participant(id=ROOT_ID, role="human", kind="human")]
        self.roles: dict[str, str] = {ROOT_ID: "human"}
        #: participant id → its position in ``participants`` (for windowed models)
        self.participant_positions: dict[str, int] = {ROOT_ID: 0}
        self.counters: dict[str, int] = {}
        #: frozen operations by position; ``None`` where the operation is still live
        self.operations: list[Operation | None] = []
        self.live: dict[int, CallRecord | ReturnRecord] = {}
        #: per operation position, the log index of the event carrying its detail body (-1: none)
        self.details = array("q")
        #: per operation position, ``events`` when its wire form became final (-1 while live): a delta
        #: answer (``flow/delta.py``) resends an operation that froze after the client's cursor
        self.frozen_at = array("q")
        main = Frame(MAIN_STACK, ROOT_ID)
        #: the stack of stacks, main at the bottom; only the top one receives new operations
        self.frames: list[Frame] = [main]
        self.stacks: dict[str, Frame] = {MAIN_STACK: main}
        self.stack_records: list[StackRecord] = [StackRecord(id=MAIN_STACK, root=ROOT_ID)]
        #: final returns of resolved stacks, lingering until the next call or return anywhere
        self.pending_resolved: list[ReturnRecord] = []
        #: interrupt stacks not yet matched by an ``interrupt_resolved`` (innermost last)
        self.unresolved: list[Frame] = []
        #: log index of an inquiry ``interrupt`` whose question the next ``role_start`` shows
        self.inquiry_detail: int | None = None
        #: engine role-instance id (``roleId``) → its role call
        self.by_instance: dict[str, CallRecord] = {}
        self.last_stack: str | None = None

    @property
    def top(self) -> Frame:
        return self.frames[-1]

    def next_number(self, key: str) -> int:
        n = self.counters.get(key, 0) + 1
        self.counters[key] = n
        return n

    def add_participant(
        self, participant_id: str, role: str, kind: ParticipantKind, instance_id: str | None = None
    ) -> str:
        self.participant_positions[participant_id] = len(self.participants)
        self.participants.append(Participant(id=participant_id, role=role, kind=kind, instance_id=instance_id))
        self.roles[participant_id] = role
        return participant_id

    def add_live(self, record: CallRecord | ReturnRecord, frame: Frame, detail: int) -> None:
        self.operations.append(None)
        self.details.append(detail)
        self.frozen_at.append(-1)
        self.live[record.position] = record
        frame.op_count += 1
        self.last_stack = frame.id

    def add_frozen(self, operation: Operation, frame: Frame, detail: int) -> None:
        self.operations.append(operation)
        self.details.append(detail)
        self.frozen_at.append(self.events)
        frame.op_count += 1
        self.last_stack = frame.id

    def freeze_call(self, record: CallRecord, at: str) -> None:
        """Close a call at ``at`` (its return, an abandonment or a terminate): its form is now final."""
        record.returned_at = at
        self.operations[record.position] = record.operation(True, at, None)
        self.frozen_at[record.position] = self.events
        self.live.pop(record.position, None)

    def supersede(self, record: ReturnRecord | None, at: str) -> None:
        """Settle a lingering return at ``at`` (no-op when absent or already settled)."""
        if record is None or record.superseded_at is not None:
            return
        record.superseded_at = at
        self.operations[record.position] = record.operation(True)
        self.frozen_at[record.position] = self.events
        self.live.pop(record.position, None)
