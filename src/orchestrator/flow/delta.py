"""Delta answers of ``GET /api/runs/:id/flow?since=<cursor>`` (issue 26): only what changed since the
answer the client already holds, so a live run's 1 s poll costs bytes proportional to its news instead of
the whole window (~350 KB for a 500-call run) every second.

A **cursor** is ``<generation>.<events>.<operations>.<participants>``: the fold state's identity (a new one
whenever the run index re-reads the log) and how many events, operations and participants it had folded
when the answer was made. ``since=`` (empty) or a cursor that does not fit this state (another generation,
counts ahead of it, malformed) gets the **full** answer; a fitting one gets a **delta**:

- ``operations``: every operation of the windowed model that is new (position ≥ the cursor's count),
  still live (its wire form changes with ``now``), or froze after the cursor (``FlowState.frozen_at``);
  every other operation of the window is one the client holds in its final form;
- ``participants``: the window's participants that are new or named by a sent operation (a superset of
  what the client lacks), each with its position in ``participantPositions``;
- ``livePositions`` (every live operation's position) and ``windowStart`` (the first position of the
  contiguous newest slice): the window is ``livePositions`` below ``windowStart``, then ``windowStart`` up
  to ``operationsTotal``, the same rule as ``finalize``'s — so the client rebuilds the model's operation
  list, and for a windowed model (``operationsOmitted > 0``) keeps only the participants those operations
  and the stacks name;
- every other field of the model as is (``status``, ``stacks``, the invariant, counters, ``totals``).

Both forms carry ``cursor`` (for the next poll), ``delta`` (``false`` / ``true``), ``since`` (the cursor a
delta applies to) and ``participantPositions``. The web client's merge is ``web/static/flowdelta.js``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from orchestrator.flow.foldstate import FlowState
from orchestrator.flow.model import InteractionModel

__all__ = ["cursor_of", "flow_answer", "parse_cursor"]


def cursor_of(state: FlowState, generation: str) -> str:
    """The cursor naming ``state`` as it is now."""
    return f"{generation}.{state.events}.{len(state.operations)}.{len(state.participants)}"


def parse_cursor(text: str | None, state: FlowState, generation: str) -> tuple[int, int, int] | None:
    """``(events, operations, participants)`` of a cursor that fits ``state``; ``None`` when it does not
    (absent, malformed, another generation, or ahead of the state)."""
    if not text:
        return None
    parts = text.split(".")
    if len(parts) != 4 or parts[0] != generation:
        return None
    numbers = parts[1:]
    if not all(p.isascii() and p.isdigit() and len(p) <= 12 for p in numbers):
        return None
    events, operations, participants = (int(p) for p in numbers)
    if events > state.events or operations > len(state.operations) or participants > len(state.participants):
        return None
    return events, operations, participants


def _position(operation_id: str) -> int:
    return int(operation_id[3:]) - 1  # ``op-N`` is position N - 1


def flow_answer(state: FlowState, model: InteractionModel, generation: str, since: str | None) -> dict[str, Any]:
    """The ``?since=`` answer for ``model`` (``finalize`` of ``state``, windowed or not): a delta when
    ``since`` fits ``state``, else the full model; both with the cursor fields (see the module doc)."""
    built = msgspec.to_builtins(model)
    answer: dict[str, Any] = built if isinstance(built, dict) else {}
    where = state.participant_positions
    fit = parse_cursor(since, state, generation)
    answer["cursor"] = cursor_of(state, generation)
    if fit is None:
        answer["delta"] = False
        answer["since"] = None
        answer["participantPositions"] = [where.get(p["id"], 0) for p in answer["participants"]]
        return answer
    events, known_ops, known_people = fit
    frozen_at = state.frozen_at
    sent: list[dict[str, Any]] = []
    named: set[str] = set()
    for operation in answer["operations"]:
        position = _position(operation["id"])
        if position >= known_ops or position in state.live or frozen_at[position] > events:
            sent.append(operation)
            named.add(operation["source"])
            named.add(operation["destination"])
    people = [p for p in answer["participants"] if p["id"] in named or where.get(p["id"], 0) >= known_people]
    # the newest contiguous slice of the window (a live operation just below it may count on either side)
    start = len(state.operations)
    for operation in reversed(answer["operations"]):
        if _position(operation["id"]) != start - 1:
            break
        start -= 1
    answer["operations"] = sent
    answer["participants"] = people
    answer["participantPositions"] = [where.get(p["id"], 0) for p in people]
    answer["livePositions"] = sorted(state.live)
    answer["windowStart"] = start
    answer["delta"] = True
    answer["since"] = since
    return answer
