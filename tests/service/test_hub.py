"""The live-stream hub: bounded, never blocking, dropping laggards; deltas merge only when a viewer lags."""

from __future__ import annotations

from orchestrator.engine.run import StreamDelta
from orchestrator.service.hub import SUBSCRIBER_BUFFER, DeltaMessage, StreamHub, coalesce, frames


def _delta(text: str, *, reset: bool = False, field: str = "content", run_id: str = "run-1") -> StreamDelta:
    return StreamDelta(run_id=run_id, role_id="coder-1-2", role="coder", field=field, text=text, reset=reset)


def test_a_subscriber_that_lags_is_dropped_and_the_run_never_blocks() -> None:
    hub = StreamHub()
    hub.active_run = "run-1"
    slow, fast = hub.subscribe(), hub.subscribe()
    slow.run_id = fast.run_id = "run-1"
    for i in range(SUBSCRIBER_BUFFER):
        hub.publish(_delta(str(i)))
        fast.receive.receive_nowait()  # an Outgoing
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


def test_a_delta_is_encoded_once_and_a_lagging_batch_is_merged() -> None:
    import msgspec

    hub = StreamHub()
    hub.active_run = "run-1"
    subs = [hub.subscribe() for _ in range(3)]
    for sub in subs:
        sub.run_id = "run-1"
    hub.publish(_delta("a", reset=True))
    got = [sub.receive.receive_nowait() for sub in subs]
    assert len({id(o.text) for o in got}) == 1  # one shared encoding
    assert msgspec.json.decode(got[0].text) == {
        "type": "delta",
        "runId": "run-1",
        "roleId": "coder-1-2",
        "role": "coder",
        "field": "content",
        "text": "a",
        "reset": True,
    }
    hub.publish(_delta("b"))
    hub.publish(_delta("c"))
    batch = [subs[0].receive.receive_nowait(), subs[0].receive.receive_nowait()]
    sent = frames(batch, msgspec.json.Encoder())
    assert [msgspec.json.decode(text)["text"] for _, text in sent] == ["bc"]
    assert frames(got[:1], msgspec.json.Encoder()) == [got[0]]
