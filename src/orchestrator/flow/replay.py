"""Replay frames: the flow model as it was right after each operation, derived in one pass over the log.

Frame ``N`` (operations count from 1, like their ids ``op-N``) is ``finalize`` over the events up to and
including the one that created ``op-N``, at that event's time, with the run ``running``: what a poll would
have shown at that moment. The frame of the run's last operation is the current model instead — every
event folded, the run's real status and ``now`` — so a finished run's replay ends exactly where its live
view is (``RunIndex.model`` with the same window).

Frames are windowed like ``GET /flow``, with a small tail: the newest ``tail`` operations plus every
older one still live (an open call keeps its chain drawable), so a frame stays a few kilobytes however
long the run. Each frame carries the call tree's ``totals`` as they were then, so the strip counts the
run so far, not the window.

``replay_frames`` folds each event once and finalizes only the frames asked for; it stops one operation
past the range (that operation proves the range's last frame is not the run's last).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from orchestrator.flow.adapter import finalize, fold
from orchestrator.flow.calltree import TreeState, fold_tree, totals
from orchestrator.flow.foldstate import FlowState
from orchestrator.flow.model import InteractionModel

__all__ = ["MAX_FRAMES", "REPLAY_TAIL", "replay_frames"]

#: Operations before the frame's own that a frame keeps (besides the live ones): enough for the flow
#: graph's recent marks and the sequence view's last screenful, small enough to parse fast.
REPLAY_TAIL = 24
#: The most frames one request may ask for.
MAX_FRAMES = 100


def _frame(state: FlowState, tree: TreeState, status: str | None, now: str, tail: int) -> InteractionModel:
    model = finalize(state, status, now, window=tail)
    return msgspec.structs.replace(model, totals=totals(tree))


def replay_frames(
    events: Iterable[Mapping[str, Any]],
    *,
    first: int,
    count: int,
    meta_status: str | None,
    now: str,
    tail: int = REPLAY_TAIL,
) -> list[InteractionModel]:
    """Frames ``first .. first + count - 1`` of the run whose log is ``events`` (pure).

    Fewer frames come back when the run has fewer operations (none when ``first`` is past the last
    one). ``meta_status`` and ``now`` only shape the frame of the run's last operation."""
    if first < 1 or count < 0 or tail < 1:
        raise ValueError(f"bad range: first={first}, count={count}, tail={tail}")
    last = first + count - 1
    state, tree = FlowState(), TreeState()
    frames: list[InteractionModel] = []
    seen = 0
    for event in events:
        fold(state, event)
        fold_tree(tree, event)
        made = len(state.operations)
        if made == seen:
            continue
        at = str(event.get("timestamp"))
        # (today an event creates at most one operation; each one it made gets the same frame)
        for _ in range(max(seen + 1, first), min(made, last) + 1):
            frames.append(_frame(state, tree, "running", at, tail))
        seen = made
        if made > last:
            return frames  # the range's last frame was not the run's last operation
    if frames:
        # The events ran out after the newest frame: that frame is the run's last operation, so it is the
        # current model (and every event after that operation's own counts).
        frames[-1] = _frame(state, tree, meta_status, now, tail)
    return frames
