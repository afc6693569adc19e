"""The live-stream hub: bounded, never blocking, dropping laggards; deltas merge only when a viewer lags."""

from __future__ import annotations

import trio

from orchestrator.engine.run import StreamDelta
from orchestrator.service.hub import (
    PARTIAL_CHARS,
    SUBSCRIBER_BUFFER,
    DeltaMessage,
    StreamHub,
    Subscription,
    coalesce,
    frames,
)


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

    hub = StreamHub(now=lambda: "2026-01-01T00:00:00.000Z")  # a fixed clock, for the exact wire text
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
        "since": "2026-01-01T00:00:00.000Z",
    }
    hub.publish(_delta("b"))
    hub.publish(_delta("c"))
    batch = [subs[0].receive.receive_nowait(), subs[0].receive.receive_nowait()]
    sent = frames(batch, msgspec.json.Encoder())
    assert [msgspec.json.decode(text)["text"] for _, text in sent] == ["bc"]
    assert frames(got[:1], msgspec.json.Encoder()) == [got[0]]


def _drain(sub: Subscription) -> list[DeltaMessage]:
    out = []
    while True:
        try:
            out.append(sub.receive.receive_nowait().message)
        except trio.WouldBlock:
            return out


def _fold(messages: list[DeltaMessage], field: str = "content") -> str:
    """What a client's partial holds after these deltas (a reset clears both fields)."""
    text = {"content": "", "reasoning": ""}
    for m in messages:
        if m.reset:
            text = {"content": "", "reasoning": ""}
        text[m.field] += m.text
    return text[field]


def test_a_late_subscriber_first_gets_the_turn_text_streamed_before_it_subscribed() -> None:
    """Issue 18, problem 7: the first characters of a run's first turn are not lost when the page
    subscribes after they were streamed (or opens mid-turn)."""
    hub = StreamHub()
    hub.active_run = "run-1"
    hub.publish(_delta("Thinking", reset=True, field="reasoning"))
    hub.publish(_delta("Hel"))  # streamed before anyone subscribed
    sub = hub.subscribe()
    sub.follow("run-1")
    hub.publish(_delta("lo"))  # between the ack and the catch-up: part of the catch-up's text too
    assert sub.catch_up_due
    sub.catch_up()
    hub.publish(_delta(", world"))
    got = _drain(sub)
    assert _fold(got) == "Hello, world" and _fold(got, "reasoning") == "Thinking"
    assert [(m.field, m.text, m.reset, m.since is not None) for m in got] == [
        ("content", "lo", False, False),  # live, queued before the catch-up
        ("reasoning", "Thinking", True, True),  # the catch-up: a reset saying when the turn started
        ("content", "Hello", False, False),
        ("content", ", world", False, False),
    ]
    assert not sub.catch_up_due
    hub.publish(_delta("again", reset=True))  # a live restart says when, too
    (restart,) = _drain(sub)
    assert restart.reset and restart.since is not None


def test_a_turn_whose_first_tokens_are_still_held_catches_up_as_an_empty_reset() -> None:
    """The stream redactor sends an attempt's ``reset`` at once, its text possibly empty (its first word is
    held until it ends): a subscriber arriving then still gets the reset, with when the turn started."""
    hub = StreamHub()
    hub.active_run = "run-1"
    hub.publish(_delta("", reset=True))
    (message,) = hub.partials.catch_up("run-1")
    assert (message.role_id, message.text, message.reset) == ("coder-1-2", "", True)
    assert message.since is not None


def test_the_catch_up_is_the_latest_turn_only_restarts_on_reset_and_is_bounded() -> None:
    hub = StreamHub()
    hub.active_run = "run-1"
    hub.publish(StreamDelta(run_id="run-1", role_id="lead-0-1", role="lead", field="content", text="old", reset=True))
    hub.publish(_delta("first attempt", reset=True))
    hub.publish(_delta("retried", reset=True))
    hub.publish(_delta("x" * (PARTIAL_CHARS + 5)))
    (message,) = hub.partials.catch_up("run-1")
    assert message.role_id == "coder-1-2" and message.reset and message.text.endswith("xxx")
    assert len(message.text) == PARTIAL_CHARS and "first" not in message.text
    assert hub.partials.catch_up("run-2") == []
    hub.active_run = "run-2"  # another run is active: nothing of the old one is replayed
    assert hub.catch_up("run-1") == []
    other = hub.subscribe()
    other.follow("run-3")
    other.catch_up()
    assert _drain(other) == []
