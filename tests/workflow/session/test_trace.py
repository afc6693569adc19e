"""TraceStore: per-session buffers, FIFO eviction, cursors, and signed tokens (round trip and tampering)."""

from __future__ import annotations

import base64
import json
import logging

import msgspec
import pytest

from orchestrator.workflow.session import (
    TraceStore,
    TraceTokenError,
    decode_token,
    new_trace_event,
)
from orchestrator.workflow.session.keys import hmac_hex

KEY = bytes(range(32))


def _event(index: str, name: str, ts: float = 1000.0, **extra: object):
    fields: dict[str, object] = {"ms": 1.5, "ok": True, "wf": "wp", "act": "a", "aid": "orchestrator", "now": ts}
    fields.update(extra)
    return new_trace_event(index, name, **fields)  # type: ignore[arg-type]


def test_event_wire_shape() -> None:
    event = _event("ABCDEF", "next_activity", ok=False, err="boom", vw=["w1"], psid="BBBBBB", pdepth=1)
    wire = json.loads(msgspec.json.encode(event))
    assert set(wire) == {
        "traceId",
        "spanId",
        "name",
        "ts",
        "ms",
        "s",
        "wf",
        "act",
        "aid",
        "err",
        "vw",
        "psid",
        "pdepth",
    }
    assert (wire["traceId"], wire["s"], wire["ts"], wire["ms"]) == ("ABCDEF", "error", 1000, 1.5)
    plain = json.loads(msgspec.json.encode(_event("ABCDEF", "x", vw=[])))
    assert set(plain) == {"traceId", "spanId", "name", "ts", "ms", "s", "wf", "act", "aid"}


def test_fifo_eviction_of_the_oldest_created_session(caplog: pytest.LogCaptureFixture) -> None:
    store = TraceStore(KEY, capacity=3)
    for index in ("AAAAAA", "BBBBBB", "CCCCCC"):
        assert store.append(index, _event(index, "start_session")) is None
    store.append("AAAAAA", _event("AAAAAA", "get_workflow"))  # activity does not refresh creation order
    with caplog.at_level(logging.WARNING):
        warning = store.append("DDDDDD", _event("DDDDDD", "start_session"))
    assert warning is not None and "AAAAAA" in warning
    assert "AAAAAA" in caplog.text
    assert store.sessions() == ["BBBBBB", "CCCCCC", "DDDDDD"]
    assert store.events("AAAAAA") == []
    with pytest.raises(ValueError, match="at least 1"):
        TraceStore(KEY, capacity=0)


def test_cursor_segments_and_agent_filter() -> None:
    store = TraceStore(KEY)
    store.append("AAAAAA", _event("AAAAAA", "start_session"))
    store.append("AAAAAA", _event("AAAAAA", "get_workflow", aid="w1"))
    first = store.take_segment("AAAAAA")
    assert (first.start, first.end, [e.name for e in first.events]) == (0, 2, ["start_session", "get_workflow"])
    assert store.take_since_cursor("AAAAAA") == []
    store.append("AAAAAA", _event("AAAAAA", "get_activity"))
    assert [e.name for e in store.take_since_cursor("AAAAAA")] == ["get_activity"]
    assert [e.name for e in store.events("AAAAAA", agent_id="w1")] == ["get_workflow"]
    assert len(store.events("AAAAAA")) == 3
    assert store.take_since_cursor("ZZZZZZ") == []


def test_token_round_trip() -> None:
    store = TraceStore(KEY)
    assert store.token_for("AAAAAA", "design") is None
    store.append("AAAAAA", _event("AAAAAA", "start_session", ts=1000))
    store.append("AAAAAA", _event("AAAAAA", "get_workflow", ts=1004))
    token = store.token_for("AAAAAA", "design", now=1010)
    assert token is not None
    payload = store.decode_token(token)
    assert (payload.sid, payload.act, payload.from_, payload.to, payload.n) == ("AAAAAA", "design", 0, 2, 2)
    assert (payload.t0, payload.t1, payload.ts) == (1000, 1004, 1010)
    assert payload.events == store.events("AAAAAA")
    body = json.loads(base64.urlsafe_b64decode(token.rsplit(".", 1)[0] + "=="))
    assert set(body) == {"sid", "act", "from", "to", "n", "t0", "t1", "ts", "events"}
    assert "=" not in token
    store.append("AAAAAA", _event("AAAAAA", "get_activity", ts=1020))
    second = store.decode_token(store.token_for("AAAAAA", "next") or "")
    assert (second.from_, second.to, second.n) == (2, 3, 1)
    assert decode_token(KEY, token) == payload  # a restarted server with the same key reads it


def _signed(body: str) -> str:
    return f"{body}.{hmac_hex(KEY, body.encode())}"


def test_tampered_and_malformed_tokens() -> None:
    store = TraceStore(KEY)
    store.append("AAAAAA", _event("AAAAAA", "start_session"))
    token = store.token_for("AAAAAA", "x") or ""
    body, sig = token.rsplit(".", 1)
    flipped = body[:-3] + ("A" if body[-3] != "A" else "B") + body[-2:]
    for bad in (f"{flipped}.{sig}", f"{body}.{'0' * 64}", f"{body}.{sig[:-1]}", f"{body}.", token + "x"):
        with pytest.raises(TraceTokenError, match="HMAC signature verification failed"):
            store.decode_token(bad)
    with pytest.raises(TraceTokenError, match="HMAC signature verification failed"):
        decode_token(bytes(32), token)
    with pytest.raises(TraceTokenError, match=r"no '\.'"):
        store.decode_token("justtext")
    with pytest.raises(TraceTokenError, match="not base64url"):
        store.decode_token(_signed("a"))
    with pytest.raises(TraceTokenError, match="not JSON"):
        store.decode_token(_signed(base64.urlsafe_b64encode(b"{nope").decode().rstrip("=")))
    missing = base64.urlsafe_b64encode(b'{"sid":"A","act":"x","from":0,"to":1,"n":1,"t0":1,"t1":1,"ts":1}')
    with pytest.raises(TraceTokenError, match=r"malformed trace token payload.*events"):
        store.decode_token(_signed(missing.decode().rstrip("=")))
    wrong = base64.urlsafe_b64encode(b'{"sid":1,"act":"x","from":0,"to":1,"n":1,"t0":1,"t1":1,"ts":1,"events":[]}')
    with pytest.raises(TraceTokenError, match=r"sid"):
        store.decode_token(_signed(wrong.decode().rstrip("=")))
    with pytest.raises(TraceTokenError, match="expected a string"):
        store.decode_token(123)  # type: ignore[arg-type]
