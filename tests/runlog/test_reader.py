"""``read_events`` and ``decode_line``: tolerant reading of a log a crash may have torn or something foreign may have
written to."""

from __future__ import annotations

import itertools
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.runlog.samples import sample_events, write_log

from orchestrator.runlog import reader
from orchestrator.runlog.reader import decode_line, last_event_time, read_events


def test_a_missing_log_reads_as_empty(tmp_path: Path) -> None:
    assert read_events(tmp_path / "absent.jsonl") == []


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    events = sample_events()
    write_log(path, events[:4])
    line = msgspec.json.encode(events[4])
    with path.open("ab") as f:
        f.write(line[: len(line) // 2])
    assert read_events(path) == [msgspec.to_builtins(e) for e in events[:4]]


def test_corrupt_and_foreign_lines_are_skipped_and_the_rest_kept(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    good = [msgspec.json.encode(e) for e in sample_events()[:3]]
    junk = [
        b"{not json",
        b"[1, 2]",
        b'{"type": 5}',
        b'"text"',
        b"\xff\xfe",
        b"   ",
        b'{"type": "future_event", "payload": {}}',
    ]
    path.write_bytes(b"\n".join([good[0], *junk[:4], good[1], *junk[4:], good[2]]) + b"\n")
    types = [r["type"] for r in read_events(path)]
    assert types == ["effort_set", "role_start", "future_event", "llm_call_start"]


def test_a_deeply_nested_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    write_log(path, sample_events()[:2])
    with path.open("ab") as f:
        f.write(b'{"type":' * 2000)
    assert len(read_events(path)) == 2


_counter = itertools.count()


@settings(deadline=None, max_examples=200)
@given(
    tail=st.binary(max_size=300)
    | st.lists(
        st.sampled_from([b"{", b"}", b'"type"', b":", b'"x"', b",", b"\n", b"[", b"]", b"\r", b"\\"]), max_size=60
    ).map(b"".join),
    cut=st.integers(0, 5000),
)
def test_arbitrary_bytes_appended_never_make_the_reader_raise(
    tmp_path_factory: pytest.TempPathFactory, tail: bytes, cut: int
) -> None:
    path = tmp_path_factory.getbasetemp() / f"fuzz-{next(_counter)}.jsonl"
    events = sample_events()
    write_log(path, events)
    data = path.read_bytes()
    cut = len(data) - cut % 400  # sometimes tear the last real line too
    path.write_bytes(data[:cut] + tail)
    records = read_events(path)
    complete = data[:cut].count(b"\n")
    assert records[:complete] == [msgspec.to_builtins(e) for e in events[:complete]]


def test_decode_line_keeps_typed_objects_only() -> None:
    assert decode_line(b'{"timestamp": "t", "type": "role_start", "payload": {}}') == {
        "timestamp": "t",
        "type": "role_start",
        "payload": {},
    }
    for line in (b"", b"  ", b'{"type": 3}', b'{"no": "type"}', b"[1, 2]", b'{"type": "x"', b"\xff"):
        assert decode_line(line) is None, line


def test_the_last_event_time_is_the_last_readable_event_s_timestamp(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "log.jsonl"
    assert last_event_time(path) is None
    path.write_bytes(b"")
    assert last_event_time(path) is None
    lines = [{"timestamp": f"2026-01-01T00:00:0{i}.000Z", "type": "x", "payload": {}} for i in range(3)]
    path.write_bytes(
        b"".join(msgspec.json.encode(line) + b"\n" for line in lines) + b'{"timestamp": "2026-01-01T00:00:09'
    )
    assert last_event_time(path) == "2026-01-01T00:00:02.000Z"  # the torn last line is not an event
    monkeypatch.setattr(reader, "TAIL_BYTES", 10)  # only the end is read: no whole event in it
    assert last_event_time(path) is None
