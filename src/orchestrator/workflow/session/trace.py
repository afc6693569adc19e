"""The in-process call trace and its signed tokens.

``TraceStore`` is one instance per server (no module state): events per session index, sessions kept
in creation order, at most ``capacity`` of them; creating one more evicts the oldest-*created* session
(FIFO) and logs a warning, which ``append`` also returns. Each session has a cursor:
``take_segment``/``take_since_cursor`` hand back the events since the previous take and advance it.

A token is ``b64url_nopad(JSON payload) + "." + hex HMAC-SHA256(key, that base64 text)`` with payload
``{sid, act, from, to, n, t0, t1, ts, events}``. ``decode_token`` splits at the last ``.``, verifies
the signature in constant time and type-checks every field, raising ``TraceTokenError`` whose message
says ``HMAC signature verification failed`` or names the malformed part. Tokens survive restarts as
long as the key does.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
import time
import uuid
from typing import Literal

import msgspec

from orchestrator.workflow.session import keys

__all__ = [
    "DEFAULT_TRACE_CAPACITY",
    "TraceEvent",
    "TracePayload",
    "TraceSegment",
    "TraceStore",
    "TraceTokenError",
    "decode_token",
    "encode_token",
    "new_trace_event",
]

DEFAULT_TRACE_CAPACITY = 1000
_log = logging.getLogger(__name__)


class TraceEvent(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """One traced tool call. ``act`` is the activity after the call; ``aid`` the calling agent."""

    trace_id: str
    span_id: str
    name: str
    ts: int
    ms: int | float
    s: Literal["ok", "error"]
    wf: str
    act: str
    aid: str
    err: str | None = None
    vw: list[str] | None = None
    psid: str | None = None
    pdepth: int | None = None


class TracePayload(msgspec.Struct, kw_only=True):
    """What a trace token carries: events ``[from, to)`` of session ``sid``, emitted moving to ``act``."""

    sid: str
    act: str
    from_: int = msgspec.field(name="from")
    to: int
    n: int
    t0: int | float
    t1: int | float
    ts: int | float
    events: list[TraceEvent]


class TraceSegment(msgspec.Struct, frozen=True):
    """Events taken from one session: positions ``start`` (inclusive) to ``end`` (exclusive)."""

    events: list[TraceEvent]
    start: int
    end: int


class TraceTokenError(ValueError):
    """A trace token that is malformed or not signed by this server's key."""


_PAYLOAD = msgspec.json.Decoder(TracePayload)


def new_trace_event(
    index: str,
    name: str,
    *,
    ms: float,
    ok: bool,
    wf: str,
    act: str,
    aid: str,
    err: str | None = None,
    vw: list[str] | None = None,
    psid: str | None = None,
    pdepth: int | None = None,
    now: float | None = None,
) -> TraceEvent:
    """An event with a fresh ``spanId``, ``ts`` = ``now`` (unix seconds) and ``ms`` rounded to 0.001."""
    return TraceEvent(
        trace_id=index,
        span_id=str(uuid.uuid4()),
        name=name,
        ts=int(time.time() if now is None else now),
        ms=round(ms, 3),
        s="ok" if ok else "error",
        wf=wf,
        act=act,
        aid=aid,
        err=err,
        vw=list(vw) if vw else None,
        psid=psid,
        pdepth=pdepth,
    )


def _key(key: bytes | keys.LazyKey) -> bytes:
    return key.get() if isinstance(key, keys.LazyKey) else key


def encode_token(key: bytes | keys.LazyKey, payload: TracePayload) -> str:
    """The signed token for ``payload``."""
    text = base64.urlsafe_b64encode(msgspec.json.encode(payload)).rstrip(b"=").decode("ascii")
    return f"{text}.{keys.hmac_hex(_key(key), text.encode('ascii'))}"


def decode_token(key: bytes | keys.LazyKey, token: str) -> TracePayload:
    """The verified payload of ``token``; ``TraceTokenError`` otherwise (see the module docstring)."""
    if not isinstance(token, str):
        raise TraceTokenError(f"malformed trace token: expected a string, got {type(token).__name__}")
    body, dot, signature = token.rpartition(".")
    if not dot:
        raise TraceTokenError("malformed trace token: no '.' separates the payload from its signature")
    expected = keys.hmac_hex(_key(key), body.encode("utf-8", "surrogatepass")).encode("ascii")
    if not hmac.compare_digest(expected, signature.encode("utf-8", "surrogatepass")):
        raise TraceTokenError(
            "HMAC signature verification failed: the token was altered or signed with another server key"
        )
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        raise TraceTokenError("malformed trace token: the payload is not base64url") from None
    try:
        return _PAYLOAD.decode(raw)
    except msgspec.ValidationError as exc:
        raise TraceTokenError(f"malformed trace token payload: {exc}") from None
    except msgspec.DecodeError as exc:
        raise TraceTokenError(f"malformed trace token: the payload is not JSON ({exc})") from None


class TraceStore:
    """Per-session event buffers for one server (FIFO eviction beyond ``capacity`` sessions)."""

    def __init__(
        self,
        key: bytes | keys.LazyKey,
        capacity: int = DEFAULT_TRACE_CAPACITY,
        *,
        logger: logging.Logger | None = None,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"trace capacity must be at least 1, got {capacity}")
        self._key = key
        self.capacity = capacity
        self._log = logger or _log
        self._events: dict[str, list[TraceEvent]] = {}
        self._cursors: dict[str, int] = {}

    def _ensure(self, index: str) -> str | None:
        if index in self._events:
            return None
        warning = None
        if len(self._events) >= self.capacity:
            oldest = next(iter(self._events))
            del self._events[oldest]
            self._cursors.pop(oldest, None)
            warning = f"trace store full ({self.capacity} sessions): evicted the oldest session {oldest}"
            self._log.warning(warning)
        self._events[index] = []
        self._cursors[index] = 0
        return warning

    def append(self, index: str, event: TraceEvent) -> str | None:
        """Record ``event`` for ``index``; returns the eviction warning when one session was dropped."""
        warning = self._ensure(index)
        self._events[index].append(event)
        return warning

    def events(self, index: str, *, agent_id: str | None = None) -> list[TraceEvent]:
        """A copy of the session's buffer (optionally only events whose ``aid`` is ``agent_id``)."""
        found = self._events.get(index, [])
        return [e for e in found if agent_id is None or e.aid == agent_id]

    def sessions(self) -> list[str]:
        """Session indexes held, oldest-created first."""
        return list(self._events)

    def take_segment(self, index: str) -> TraceSegment:
        """The events since the cursor, advancing it to the end of the buffer."""
        found = self._events.get(index, [])
        start = min(self._cursors.get(index, 0), len(found))
        if index in self._cursors:
            self._cursors[index] = len(found)
        return TraceSegment(events=found[start:], start=start, end=len(found))

    def take_since_cursor(self, index: str) -> list[TraceEvent]:
        """The events since the previous take (the cursor advances)."""
        return self.take_segment(index).events

    def token_for(self, index: str, act: str, *, now: float | None = None) -> str | None:
        """Take the segment since the cursor and sign it as a token (``None`` when it is empty)."""
        segment = self.take_segment(index)
        if not segment.events:
            return None
        payload = TracePayload(
            sid=index,
            act=act,
            from_=segment.start,
            to=segment.end,
            n=len(segment.events),
            t0=segment.events[0].ts,
            t1=segment.events[-1].ts,
            ts=int(time.time() if now is None else now),
            events=segment.events,
        )
        return encode_token(self._key, payload)

    def decode_token(self, token: str) -> TracePayload:
        """``decode_token`` with this store's key."""
        return decode_token(self._key, token)
