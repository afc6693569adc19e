"""The sidecar's pipe (``observability.sidecarwire``): frames come out as they went in, in order; a stream
that ends inside a frame ends there, never with half a frame."""

from __future__ import annotations

import io

import msgspec

from orchestrator.observability.config import ExportConfig
from orchestrator.observability.report import ExportReport
from orchestrator.observability.sidecarwire import (
    Chunk,
    Config,
    FromSidecar,
    Grow,
    Log,
    Open,
    Ready,
    Report,
    Spans,
    ToSidecar,
    read_frame,
    write_frames,
)
from orchestrator.observability.tracestate import RunInfo, SpanData


def _all(data: bytes, decoder: msgspec.msgpack.Decoder) -> list[object]:
    pipe = io.BytesIO(data)
    frames = []
    while (frame := read_frame(pipe, decoder)) is not None:
        frames.append(frame)
    return frames


def test_frames_come_out_as_they_went_in() -> None:
    down: list[ToSidecar] = [
        Config(ExportConfig(endpoint="http://h:1/v1/traces", headers={"authorization": "k"}, max_queue_size=8)),
        Open(1, "/runs/r", RunInfo(run_id="r", model="m", temperature=0.2), 120),
        Grow(1, 4096),
        Chunk(1, "lead-1", 1_767_000_000_000_000_000, 4200),
        Spans(msgspec.json.encode([])),
    ]
    pipe = io.BytesIO()
    write_frames(pipe, down)
    assert _all(pipe.getvalue(), msgspec.msgpack.Decoder(ToSidecar)) == down
    up: list[FromSidecar] = [Ready(0.2), Log(30, "orchestrator.observability", "x"), Report(ExportReport(3, 2, 1), 1.5)]
    pipe = io.BytesIO()
    write_frames(pipe, up)
    assert _all(pipe.getvalue(), msgspec.msgpack.Decoder(FromSidecar)) == up


def test_spans_keep_their_128_bit_trace_ids() -> None:
    span = SpanData(
        key="run",
        name="run",
        trace_id=2**127 + 5,
        span_id=2**63 + 7,
        parent_id=None,
        start_ns=1,
        end_ns=2,
        attributes={"a": 1},
        events=(),
        links=(),
        status="unset",
        status_message="",
    )
    pipe = io.BytesIO()
    write_frames(pipe, [Spans(msgspec.json.encode([span]))])
    (frame,) = _all(pipe.getvalue(), msgspec.msgpack.Decoder(ToSidecar))
    assert isinstance(frame, Spans) and msgspec.json.decode(frame.json, type=list[SpanData]) == [span]


def test_a_stream_ending_inside_a_frame_ends_before_it() -> None:
    pipe = io.BytesIO()
    write_frames(pipe, [Grow(1, 10), Grow(1, 20)])
    data = pipe.getvalue()
    decoder = msgspec.msgpack.Decoder(ToSidecar)
    assert _all(data[:-1], decoder) == [Grow(1, 10)]
    assert _all(data[:2], decoder) == []
