"""The trace fold's state and its span shapes: ids derived from the run id, the open spans, the finished
``SpanData`` (pure; ``spans.py`` holds the fold itself)."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from orchestrator.flow.foldstate import epoch
from orchestrator.observability import attributes as a

__all__ = [
    "AttrValue",
    "OpenSpan",
    "RunInfo",
    "SpanData",
    "SpanEvent",
    "TraceState",
    "as_int",
    "as_json",
    "fail",
    "json_size",
    "span_id_for",
    "timestamp_ns",
    "trace_id_for",
]

AttrValue = str | int | float | bool | list[str]
Status = Literal["unset", "ok", "error"]
_encode = msgspec.json.Encoder().encode


def trace_id_for(run_id: str) -> int:
    """The run's 128-bit trace id: the same in every process that touches the run."""
    return int.from_bytes(hashlib.sha256(b"orchestrator-trace\0" + run_id.encode()).digest()[:16], "big") or 1


def span_id_for(run_id: str, key: str) -> int:
    """The 64-bit id of the span ``key`` (``run``, ``role:<roleId>``, ``chat:<roleId>:<n>`` …) of a run."""
    return int.from_bytes(hashlib.sha256(f"{run_id}\0{key}".encode()).digest()[:8], "big") or 1


def timestamp_ns(timestamp: object) -> int | None:
    """Nanoseconds since the epoch of a log timestamp (millisecond resolution), ``None`` when unparsable."""
    if not isinstance(timestamp, str):
        return None
    if len(timestamp) == 24 and timestamp[19] == "." and timestamp[23] == "Z" and timestamp[20:23].isdigit():
        # the writer's own shape (``utc_timestamp``): parse its second once, add the milliseconds
        second = _second_ns(timestamp[:19])
        if second is not None:
            return second + int(timestamp[20:23]) * 1_000_000
    seconds = epoch(timestamp)
    return None if seconds is None else round(seconds * 1000) * 1_000_000


@functools.lru_cache(maxsize=64)
def _second_ns(second: str) -> int | None:
    """Nanoseconds since the epoch of a UTC ``YYYY-MM-DDTHH:MM:SS`` (cached: a run's events share seconds)."""
    seconds = epoch(second + "Z")
    return None if seconds is None else round(seconds) * 1_000_000_000


@dataclass(frozen=True)
class RunInfo:
    """What the log does not say about its run: from ``meta.json`` and the deployment."""

    run_id: str
    started_at: str | None = None
    continues_from: str | None = None
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None


class SpanEvent(msgspec.Struct, frozen=True):
    name: str
    time_ns: int
    attributes: dict[str, AttrValue]


class SpanData(msgspec.Struct, frozen=True):
    """One finished span, ready for an exporter (``observability.sink`` turns it into the SDK's); a
    frozen ``msgspec.Struct`` (not a dataclass) as it is built on the run's thread: a tenth of the cost."""

    key: str
    name: str
    trace_id: int
    span_id: int
    parent_id: int | None
    start_ns: int
    end_ns: int
    attributes: dict[str, AttrValue]
    events: tuple[SpanEvent, ...]
    #: ``(trace_id, span_id)`` of linked spans (a continued run's run span)
    links: tuple[tuple[int, int], ...]
    status: Status
    status_message: str
    #: ``client`` for a model call, ``server`` for a workflow-server tool call, else ``internal``
    kind: Literal["internal", "client", "server"] = "internal"


@dataclass
class OpenSpan:
    """A span still open: mutable until ``TraceState.finish`` freezes it."""

    key: str
    name: str
    parent: str | None
    start_ns: int
    attributes: dict[str, AttrValue]
    events: list[SpanEvent] = field(default_factory=list)
    status: Status = "unset"
    status_message: str = ""
    kind: Literal["internal", "client"] = "internal"
    #: the role instance it belongs to (roles: itself)
    owner: str | None = None


class TraceState:
    """The fold's state: the open spans, per-role counters, pending questions and interludes."""

    def __init__(self, info: RunInfo, *, capture_content: bool = False) -> None:
        self.info = info
        self.capture = capture_content
        self.trace_id = trace_id_for(info.run_id)
        self.open: dict[str, OpenSpan] = {}
        self.roles_by_name: dict[str, list[str]] = {}
        self.counters: dict[str, int] = {}
        self.chat: dict[str, str] = {}  # role id → open chat key
        self.tools: dict[str, list[tuple[str, str]]] = {}  # role id → [(tool, key)]
        self.questions: dict[str, tuple[str, int, str]] = {}  # question id → (role id, asked ns, text)
        self.interludes: list[str] = []  # open interlude keys, innermost last
        self.plans: dict[str, set[str]] = {}  # plan key → cut role ids not finished yet
        self.entry: str | None = None
        self.run_ended = False
        self.last_ns: int | None = None
        self.tokens = [0, 0]
        self._parent_ids: dict[str, int] = {}
        start = timestamp_ns(info.started_at)
        if start is not None:
            self.open_run(start)

    def count(self, prefix: str) -> int:
        self.counters[prefix] = self.counters.get(prefix, 0) + 1
        return self.counters[prefix]

    def open_run(self, start: int) -> None:
        """Open the run span at ``start`` (the run's start time, else its first event's)."""
        attrs: dict[str, AttrValue] = {a.RUN_ID: self.info.run_id, a.CONVERSATION_ID: self.info.run_id}
        if self.info.continues_from:
            attrs[a.RUN_CONTINUES_FROM] = self.info.continues_from
        self.open["run"] = OpenSpan("run", "run", None, start, attrs)

    def role(self, p: Mapping[str, Any]) -> OpenSpan | None:
        """The open span of the role instance a payload names (``roleId``, else the newest of ``role``)."""
        rid = p.get("roleId")
        if isinstance(rid, str) and f"role:{rid}" in self.open:
            return self.open[f"role:{rid}"]
        stack = self.roles_by_name.get(str(p.get("role")))
        return self.open.get(f"role:{stack[-1]}") if stack else None

    def anchor(self, p: Mapping[str, Any]) -> OpenSpan | None:
        """The role span of ``p``, else the run span."""
        return self.role(p) or self.open.get("run")

    def parent_id(self, key: str) -> int:
        """``span_id_for`` a parent's key, derived once per parent (a role's calls share it)."""
        found = self._parent_ids.get(key)
        if found is None:
            found = self._parent_ids[key] = span_id_for(self.info.run_id, key)
        return found

    def finish(self, span: OpenSpan, end: int) -> SpanData:
        del self.open[span.key]
        if span.key in self.interludes:
            self.interludes.remove(span.key)
        self.plans.pop(span.key, None)
        parent = span.parent
        links: tuple[tuple[int, int], ...] = ()
        if span.key == "run" and self.info.continues_from:
            prior = self.info.continues_from
            links = ((trace_id_for(prior), span_id_for(prior, "run")),)
        return SpanData(
            key=span.key,
            name=span.name,
            trace_id=self.trace_id,
            span_id=span_id_for(self.info.run_id, span.key),
            parent_id=None if parent is None else self.parent_id(parent),
            start_ns=span.start_ns,
            end_ns=max(end, span.start_ns),
            attributes=span.attributes,
            events=tuple(span.events),
            links=links,
            status=span.status,
            status_message=span.status_message,
            kind=span.kind,
        )


def fail(span: OpenSpan, error_type: str, message: str = "") -> None:
    span.status = "error"
    span.status_message = message or error_type
    span.attributes[a.ERROR_TYPE] = error_type


def as_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_json(value: object) -> str:
    return _encode(value).decode()


def json_size(value: object) -> int:
    """The length in bytes of ``value`` as JSON (``len(as_json(value).encode())``, without the round trip)."""
    return len(_encode(value))
