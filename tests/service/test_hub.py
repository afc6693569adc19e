"""The live-stream hub: bounded, never blocking, dropping laggards; deltas merge only when a viewer lags."""

from __future__ import annotations

from orchestrator.engine.run import StreamDelta
from orchestrator.service.hub import SUBSCRIBER_BUFFER, DeltaMessage, StreamHub, coalesce


def _delta(text: str, *, reset: bool = False, field: str = "content", run_id: str = "run-1") -> StreamDelta:
    return StreamDelta(run_id=run_id, role_id="coder-1-2", role="coder", field=field, text=text, reset=reset)


def test_a_subscriber_that_lags_is_dropped_and_the_run_never_blocks() -> None:
    hub = StreamHub()
    hub.active_run = "run-1"
    slow, fast = hub.subscribe(), hub.subscribe()
    slow.run_id = fast.run_id = "run-1"
    for i in range(SUBSCRIBER_BUFFER):
        hub.publish(_delta(str(i)))
        fast.receive.receive_nowait()
    hub.publish(_delta("one too many"))
    assert slow.dropped and hub.subscriber_count == 1 and not fast.dropped


def test_only_the_active_runs_deltas_reach_its_subscribers() -> None:
    hub = StreamHub()
    hub.active_run = "run-1"
    sub = hub.subscribe()
    sub.run_id = "run-2"
    hub.publish(_delta("x"))
    hub.publish(_delta("y", run_id="run-2"))
    assert sub.receive.statistics().current_buffer_used == 0


def test_coalescing_merges_runs_of_one_field_but_never_across_a_reset() -> None:
    def message(text: str, *, reset: bool = False, field: str = "content") -> DeltaMessage:
        return DeltaMessage(run_id="r", role_id="a-0-1", role="a", field=field, text=text, reset=reset)

    merged = coalesce(
        [
            message("a", reset=True),
            message("b"),
            message("c", field="reasoning"),
            message("d", reset=True),
            message("e"),
        ]
    )
    assert [(m.field, m.text, m.reset) for m in merged] == [
        ("content", "ab", True),
        ("reasoning", "c", False),
        ("content", "de", True),
    ]
