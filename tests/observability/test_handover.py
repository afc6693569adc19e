"""The run's-thread half of the live export (``observability.handover.RunTrace``): lines and each model
call's first chunk handed over in order; a refused hand-over cuts the trace once, and every later line is
counted, not handed over."""

from __future__ import annotations

import msgspec

from orchestrator.engine.run import StreamDelta
from orchestrator.observability.handover import RunTrace
from orchestrator.runlog.events import RunEvent

START = msgspec.json.decode(
    b'{"timestamp":"2026-01-01T09:00:00.000Z","type":"llm_call_start","payload":{"role":"lead","roleId":"lead-1",'
    b'"attempt":1,"messageCount":2}}',
    type=RunEvent,
)


class Recorded(RunTrace):
    """Takes ``room`` hand-overs, then refuses; records what it took."""

    def __init__(self, room: int = 1000) -> None:
        super().__init__(self)
        self.unfolded = 0
        self.room = room
        self.taken: list[object] = []

    def _take(self, item: object) -> bool:
        if len(self.taken) >= self.room:
            return False
        self.taken.append(item)
        return True

    def hand_line(self, line: bytes) -> bool:
        return self._take(line)

    def hand_chunk(self, role_id: str, at_ns: int) -> bool:
        return self._take(("chunk", role_id))

    def hand_cut(self) -> None:
        self.taken.append("cut")


def delta(role_id: str = "lead-1") -> StreamDelta:
    return StreamDelta(run_id="r", role_id=role_id, role="lead", field="text", text="hi", reset=False)


def test_a_model_calls_first_chunk_is_handed_over_once_after_its_start() -> None:
    trace = Recorded()
    trace.delta(delta())  # no call in flight: nothing
    trace(START, b"start\n")
    trace.delta(delta())
    trace.delta(delta())  # later chunks of the same call: a set lookup
    trace.delta(delta("coder-1"))  # another role's: nothing
    assert trace.taken == [b"start\n", ("chunk", "lead-1")]


def test_a_refused_line_cuts_the_trace_once_and_counts_what_follows() -> None:
    trace = Recorded(room=2)
    for n in range(5):
        trace(START, b"line %d\n" % n)
    trace.delta(delta())
    trace.cut_here()  # already cut: nothing more
    assert trace.taken == [b"line 0\n", b"line 1\n", "cut"]
    assert trace.cut and trace.unfolded == 2  # lines 3 and 4 (line 2 was the refused one)


def test_a_refused_chunk_cuts_the_trace() -> None:
    trace = Recorded(room=1)
    trace(START, b"start\n")
    trace.delta(delta())
    assert trace.cut and trace.taken == [b"start\n", "cut"]


def test_tee_feeds_the_listener_and_the_hosts_own_sink() -> None:
    trace = Recorded()
    seen: list[StreamDelta] = []
    both = trace.tee(seen.append)
    trace(START, b"start\n")
    both(delta())
    assert seen == [delta()] and trace.taken[-1] == ("chunk", "lead-1")
    assert trace.tee(None) == trace.delta
