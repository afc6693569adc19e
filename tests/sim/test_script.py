"""The script loader: defaults, and errors that name the bad key path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.sim import ScriptError, SimScript, load_script, parse_script


def _error(doc: object) -> ScriptError:
    with pytest.raises(ScriptError) as info:
        parse_script(json.dumps(doc))
    return info.value


def test_defaults() -> None:
    script = parse_script(b'{"turns": [{}]}')
    assert (script.model, script.context_window, script.chars_per_token, script.on_exhausted) == (
        "sim",
        32768,
        4,
        "error",
    )
    turn = script.turns[0]
    assert turn.expect is None and turn.reusable is False and turn.finish_reason == "stop"
    assert (turn.chunk_chars, turn.chunk_delay_ms) == (16, 0)
    assert script.model_ids() == ["sim"]
    assert script.models_spec().report == "meta" and script.models_spec().status == 200
    assert SimScript().turns == []


def test_models_ids_default_to_the_model() -> None:
    assert parse_script(b'{"model": "m1", "models": {"report": "none"}}').model_ids() == ["m1"]
    assert parse_script(b'{"models": {"ids": ["a", "b"]}}').model_ids() == ["a", "b"]


def test_camel_case_keys_load() -> None:
    script = parse_script(
        json.dumps(
            {
                "contextWindow": 100,
                "charsPerToken": 2.5,
                "onExhausted": "finish",
                "turns": [
                    {
                        "expect": {"systemContains": "s", "lastInputContains": "l", "inputContains": "i"},
                        "toolCalls": [{"name": "x", "rawArguments": "{bad"}],
                        "usage": {"promptTokens": 1, "completionTokens": 2, "cachedPromptTokens": 3},
                        "finishReason": "length",
                        "fail": {"stallMidStreamMs": 10},
                        "chunkChars": 3,
                        "chunkDelayMs": 5,
                    }
                ],
            }
        )
    )
    turn = script.turns[0]
    assert turn.expect is not None and turn.expect.last_input_contains == "l"
    assert turn.tool_calls[0].raw_arguments == "{bad"
    assert turn.fail is not None and turn.fail.stall_mid_stream_ms == 10


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        ({"turns": [{"fial": {"status": 503}}]}, "turns[0].fial"),
        ({"turns": [{}, {"fail": {"stat": 503}}]}, "turns[1].fail.stat"),
        ({"modle": "x"}, "modle"),
        ({"turns": [{"expect": {"toolsIncludes": ["a"]}}]}, "turns[0].expect.toolsIncludes"),
        ({"turns": [{"toolCalls": [{"name": "a", "args": {}}]}]}, "turns[0].toolCalls[0].args"),
        ({"models": {"report": "meta", "statuz": 1}}, "models.statuz"),
    ],
)
def test_unknown_keys_are_rejected_naming_the_path(doc: object, path: str) -> None:
    error = _error(doc)
    assert error.path == path
    assert path in str(error)


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        ({"turns": [{"chunkChars": "x"}]}, "turns[0].chunkChars"),
        ({"turns": [{"chunkChars": 0}]}, "turns[0].chunkChars"),
        ({"turns": [{"finishReason": "done"}]}, "turns[0].finishReason"),
        ({"onExhausted": "explode"}, "onExhausted"),
        ({"contextWindow": -1}, "contextWindow"),
        ({"turns": [{"fail": {"status": 503, "empty": True}}]}, "turns[0].fail"),
        ({"turns": [{"fail": {}}]}, "turns[0].fail"),
        ({"turns": [{"fail": {"status": 200}}]}, "turns[0].fail.status"),
        ({"turns": [{"fail": {"empty": True, "promptTokens": 5}}]}, "turns[0].fail"),
        ({"turns": [{"toolCalls": [{"name": "a", "arguments": {}, "rawArguments": "{}"}]}]}, "turns[0].toolCalls[0]"),
        ({"turns": [{"toolCalls": [{"arguments": {}}]}]}, "turns[0].toolCalls[0].name"),
    ],
)
def test_bad_values_name_the_path(doc: object, path: str) -> None:
    error = _error(doc)
    assert error.path == path
    assert f"at {path}:" in str(error)


def test_invalid_json_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="invalid sim script"):
        parse_script(b"{")
    with pytest.raises(ScriptError, match="<root>"):
        parse_script(b"[]")


def test_load_script_from_path_and_bytes(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"turns": [{"content": "hi"}]}))
    assert load_script(good).turns[0].content == "hi"
    assert load_script(str(good)).turns[0].content == "hi"
    assert load_script(b'{"model": "m"}').model == "m"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"turns": [{"fial": 1}]}))
    with pytest.raises(ScriptError) as info:
        load_script(bad)
    assert info.value.path == "turns[0].fial"
    assert str(bad) in str(info.value)
    with pytest.raises(OSError):
        load_script(tmp_path / "missing.json")


def test_the_documented_example_loads() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "sim-model.md").read_text()
    example = doc.split("## Example", 1)[1].split("```json", 1)[1].split("```", 1)[0]
    script = parse_script(example)
    assert len(script.turns) == 4 and script.on_exhausted == "finish"
