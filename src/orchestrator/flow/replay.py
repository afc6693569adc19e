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
past the range (that operation proves the range's last frame is not the run's last). A ``ReplayPass``
kept between requests continues from there, so the next range costs only its own events.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from orchestrator.flow.adapter import finalize, fold
from orchestrator.flow.calltree import TreeState, fold_tree, totals
from orchestrator.flow.foldstate import FlowState
from orchestrator.flow.model import InteractionModel

__all__ = ["MAX_FRAMES", "REPLAY_TAIL", "ReplayPass", "replay_frames"]

#: Operations before the frame's own that a frame keeps (besides the live ones): enough for the flow
#: graph's recent marks and the sequence view's last screenful, small enough to parse fast.
REPLAY_TAIL = 24
#: The most frames one request may ask for.
MAX_FRAMES = 100


def _frame(state: FlowState, tree: TreeState, status: str | None, now: str, tail: int) -> InteractionModel:
    model = finalize(state, status, now, window=tail)
    return msgspec.structs.replace(model, totals=totals(tree))


class ReplayPass:
    """A pass over one log that can be continued: the fold states after the first ``events`` events,
    the ``seen`` operations they made, and the time of the event that made the newest one.

    ``frames`` folds only the events it is handed (those after the first ``events``), so a page replaying
    chunk after chunk costs each chunk's own events, not the log's prefix again. A pass continues a range
    that starts past its newest operation, or at it while no later event has been folded (``can_start``).
    """

    __slots__ = ("at", "events", "exact", "flow", "seen", "tree")

    def __init__(self) -> None:
        self.flow = FlowState()
        self.tree = TreeState()
        self.events = 0
        self.seen = 0
        self.at: str | None = None
        #: no event has been folded since the one that made operation ``seen``
        self.exact = True

    def can_start(self, first: int) -> bool:
        return first > self.seen or (first == self.seen and self.exact)

    def frames(
        self,
        events: Iterable[Mapping[str, Any]],
        *,
        first: int,
        count: int,
        meta_status: str | None,
        now: str,
        tail: int = REPLAY_TAIL,
    ) -> list[InteractionModel]:
        """Frames ``first .. first + count - 1``; ``events`` continue the log after the pass's ``events``.

        Fewer frames come back when the run has fewer operations (none when ``first`` is past the last
        one). ``meta_status`` and ``now`` only shape the frame of the run's last operation."""
        if first < 1 or count < 0 or tail < 1 or not self.can_start(first):
            raise ValueError(f"bad range: first={first}, count={count}, tail={tail} (pass at {self.seen})")
        if count == 0:
            return []
        last = first + count - 1
        frames: list[InteractionModel] = []
        if first == self.seen and self.at is not None:
            frames.append(_frame(self.flow, self.tree, "running", self.at, tail))
        for event in events:
            self.events += 1
            fold(self.flow, event)
            fold_tree(self.tree, event)
            made = len(self.flow.operations)
            if made == self.seen:
                self.exact = False
                continue
            at = str(event.get("timestamp"))
            # (today an event creates at most one operation; each one it made gets the same frame)
            for _ in range(max(self.seen + 1, first), min(made, last) + 1):
                frames.append(_frame(self.flow, self.tree, "running", at, tail))
            self.seen, self.at, self.exact = made, at, True
            if made > last:
                return frames  # the range's last frame was not the run's last operation
        if frames:
            # The events ran out after the newest frame: that frame is the run's last operation, so it is
            # the current model (and every event after that operation's own counts).
            frames[-1] = _frame(self.flow, self.tree, meta_status, now, tail)
        return frames


def replay_frames(
    events: Iterable[Mapping[str, Any]],
    *,
    first: int,
    count: int,
    meta_status: str | None,
    now: str,
    tail: int = REPLAY_TAIL,
) -> list[InteractionModel]:
    """Frames ``first .. first + count - 1`` of the run whose whole log is ``events`` (pure; a fresh
    ``ReplayPass``)."""
    return ReplayPass().frames(events, first=first, count=count, meta_status=meta_status, now=now, tail=tail)
