"""Every parser that reads outside input, fed arbitrary bytes: a clean rejection, never a crash."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.config.deployment import decode_deployment
from orchestrator.config.guild import parse_manifest
from orchestrator.config.probe import parse_model_list
from orchestrator.llm.sse import SseDecoder
from orchestrator.llm.wire import AttemptFailed, TurnAssembler
from orchestrator.runlog.reader import read_events
from orchestrator.sim import ScriptError, load_script
from orchestrator.tools.validate import parse_arguments

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=20,
)


@given(st.binary(max_size=2000))
def test_sse_decoder_never_raises(data: bytes) -> None:
    decoder = SseDecoder()
    decoder.feed(data)
    decoder.flush()


@given(st.sampled_from(["response.completed", "response.output_item.done", "error", "x"]), json_values)
def test_turn_assembler_rejects_or_accepts_any_payload(kind: str, payload: object) -> None:
    assembler = TurnAssembler()
    try:
        assembler.feed(kind, json.dumps(payload))
    except AttemptFailed:
        pass
    except (AttributeError, TypeError, ValueError) as exc:  # pragma: no cover - the bug this test hunts
        raise AssertionError(f"assembler crashed on {kind} {payload!r}: {exc!r}") from exc


@given(st.binary(max_size=2000))
def test_deployment_decoder_reports_problems_instead_of_raising(data: bytes) -> None:
    deployment, problems = decode_deployment(data)
    assert deployment is not None or problems


@given(json_values)
def test_manifest_parser_never_raises(value: object) -> None:
    parse_manifest(json.dumps(value).encode())


@given(st.binary(max_size=2000))
def test_model_list_parser_rejects_cleanly(data: bytes) -> None:
    try:
        parse_model_list(data)
    except (ValueError, msgspec.DecodeError):
        pass


@given(st.binary(max_size=2000))
def test_sim_script_loader_rejects_cleanly(data: bytes) -> None:
    try:
        load_script(data)
    except ScriptError:
        pass


@given(st.text(max_size=500))
def test_tool_argument_parser_never_raises(raw: str) -> None:
    parse_arguments(raw)


@given(st.lists(st.binary(max_size=300), max_size=20))
def test_log_reader_skips_garbage_lines(lines: list[bytes]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "log.jsonl"
        path.write_bytes(b"\n".join(lines))
        for event in read_events(path):
            assert isinstance(event["type"], str)
