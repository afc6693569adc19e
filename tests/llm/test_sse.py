"""``SseDecoder``: the same bytes decode to the same events in any chunking, with any line ending."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.llm.sse import SseDecoder, SseEvent


def _decode(chunks: Iterable[bytes]) -> list[SseEvent]:
    decoder = SseDecoder()
    events: list[SseEvent] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events + decoder.flush()


def _split(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    points = sorted({c for c in cuts if 0 < c < len(data)})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


# --- tables ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending_frames_the_same_events(eol: bytes) -> None:
    stream = eol.join([b"event: a", b"data: 1", b"", b"data: 2", b"", b""])
    assert _decode([stream]) == [SseEvent("a", "1"), SseEvent("message", "2")]


def test_mixed_line_endings_in_one_stream() -> None:
    stream = b"event: a\r\ndata: 1\n\rdata: 2\r\r\n"
    assert _decode([stream]) == [SseEvent("a", "1"), SseEvent("message", "2")]


def test_comments_are_ignored() -> None:
    stream = b": keep-alive\n\n:another\ndata: x\n: mid-event\ndata: y\n\n"
    assert _decode([stream]) == [SseEvent("message", "x\ny")]


def test_multi_line_data_is_joined_with_newlines() -> None:
    assert _decode([b"data: one\ndata:two\ndata:  three\ndata\n\n"]) == [SseEvent("message", "one\ntwo\n three\n")]


def test_only_one_space_after_the_colon_is_stripped_and_colons_in_values_survive() -> None:
    assert _decode([b'data:  {"a": "b:c"}\n\n']) == [SseEvent("message", ' {"a": "b:c"}')]


def test_unknown_fields_are_ignored() -> None:
    assert _decode([b"id: 7\nretry: 100\nfoo: bar\ndata: x\n\n"]) == [SseEvent("message", "x")]


def test_blank_lines_without_an_event_dispatch_nothing() -> None:
    assert _decode([b"\n\n\r\n\r"]) == []


def test_flush_delivers_a_last_event_without_its_blank_line() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"event: response.completed\ndata: {}") == []
    assert decoder.flush() == [SseEvent("response.completed", "{}")]
    assert decoder.flush() == []


@pytest.mark.parametrize("tail", [b"\n", b"\r\n", b"\r"])
def test_flush_delivers_a_last_event_after_its_final_line_ending(tail: bytes) -> None:
    decoder = SseDecoder()
    events = decoder.feed(b"data: x" + tail)
    assert events + decoder.flush() == [SseEvent("message", "x")]


def test_a_crlf_split_across_chunks_is_one_line_ending() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"data: x\r") == []
    assert decoder.feed(b"\n\r") == []
    assert decoder.feed(b"\n") == [SseEvent("message", "x")]


def test_a_multibyte_character_split_across_chunks_survives() -> None:
    data = "data: héllo ✓\n\n".encode()
    cut = data.index("✓".encode()) + 1
    assert _decode([data[:cut], data[cut:]]) == [SseEvent("message", "héllo ✓")]


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    assert _decode([b"data: \xff\xfe\n\n"]) == [SseEvent("message", "\ufffd\ufffd")]


def test_byte_at_a_time_equals_all_at_once() -> None:
    stream = b"event: x\r\ndata: 1\r\n\r\n: c\rdata: 2\r\rdata: 3\n\n"
    assert _decode([stream[i : i + 1] for i in range(len(stream))]) == _decode([stream])


# --- properties ------------------------------------------------------------------------------------------

_value = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=["Cs"]), max_size=12)
_name = st.text(st.characters(blacklist_characters="\r\n:", blacklist_categories=["Cs"]), min_size=1, max_size=10)
_event = st.tuples(
    st.none() | _name.filter(lambda n: n.strip() == n),
    st.lists(_value, min_size=1, max_size=3),
    st.lists(_value, max_size=2),  # comments
)


def _encode(events: list[tuple[str | None, list[str], list[str]]], eol: bytes, *, final_blank: bool) -> bytes:
    lines: list[str] = []
    for name, data, comments in events:
        lines += [f":{c}" for c in comments]
        if name is not None:
            lines.append(f"event: {name}")
        lines += [f"data: {d}" for d in data]
        lines.append("")
    if not final_blank and lines:
        lines.pop()
    text = "".join(line + "\n" for line in lines)
    return text.encode().replace(b"\n", eol)


def _expected(events: list[tuple[str | None, list[str], list[str]]]) -> list[SseEvent]:
    return [SseEvent(name or "message", "\n".join(data)) for name, data, _ in events]


@settings(deadline=None, max_examples=300)
@given(
    events=st.lists(_event, max_size=6),
    eol=st.sampled_from([b"\n", b"\r\n", b"\r"]),
    final_blank=st.booleans(),
    cuts=st.lists(st.integers(0, 400), max_size=12),
)
def test_any_chunking_of_a_stream_yields_the_same_events(
    events: list[tuple[str | None, list[str], list[str]]], eol: bytes, final_blank: bool, cuts: list[int]
) -> None:
    stream = _encode(events, eol, final_blank=final_blank)
    whole = _decode([stream])
    assert whole == _expected(events)
    assert _decode(_split(stream, cuts)) == whole


@settings(deadline=None, max_examples=200)
@given(events=st.lists(_event, min_size=1, max_size=4), data=st.data())
def test_splitting_inside_every_crlf_changes_nothing(
    events: list[tuple[str | None, list[str], list[str]]], data: st.DataObject
) -> None:
    stream = _encode(events, b"\r\n", final_blank=data.draw(st.booleans()))
    crlf = [i + 1 for i in range(len(stream) - 1) if stream[i : i + 2] == b"\r\n"]
    chosen = data.draw(st.lists(st.sampled_from(crlf), unique=True)) if crlf else []
    assert _decode(_split(stream, chosen)) == _expected(events)


@settings(deadline=None, max_examples=300)
@given(stream=st.binary(max_size=200), cuts=st.lists(st.integers(0, 200), max_size=10))
def test_arbitrary_bytes_decode_the_same_in_any_chunking_and_never_raise(stream: bytes, cuts: list[int]) -> None:
    assert _decode(_split(stream, cuts)) == _decode([stream])
