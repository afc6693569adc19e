"""The sim's llama-server flavor (``sim/llama.py``): what the real server was observed to send, over HTTP."""

from __future__ import annotations

import argparse
import json
from typing import Any

import httpx
import pytest
import trio
from tests.sim.conftest import StartSim
from tests.sim.simkit import body

from orchestrator.sim.cli import apply_flavor_options, build_parser
from orchestrator.sim.llama import pretty_arguments
from orchestrator.sim.script import ScriptError, SimScript

LLAMA = {"name": "llama-server"}


def _frames(text: str) -> list[tuple[str | None, dict[str, Any]]]:
    """(event line or None, decoded data) per SSE block."""
    frames: list[tuple[str | None, dict[str, Any]]] = []
    for block in text.strip("\n").split("\n\n"):
        event = next((line.removeprefix("event: ") for line in block.split("\n") if line.startswith("event: ")), None)
        data = next(line.removeprefix("data: ") for line in block.split("\n") if line.startswith("data: "))
        frames.append((event, json.loads(data)))
    return frames


async def _stream(client: httpx.AsyncClient, base: str, **extra: Any) -> list[tuple[str | None, dict[str, Any]]]:
    response = await client.post(f"{base}/responses", json=body(**extra))
    assert response.status_code == 200, response.text
    return _frames(response.text)


async def test_the_stream_has_no_indexes_and_batches_every_closing_event(
    start_sim: StartSim, client: httpx.AsyncClient
) -> None:
    turn = {
        "reasoning": "think",
        "content": "two calls",
        "toolCalls": [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {"y": [1, 2]}}],
        "chunkChars": 3,
    }
    base = await start_sim({"flavor": LLAMA, "turns": [turn]})
    frames = await _stream(client, base)
    payloads = [data for _, data in frames]
    assert all(event == data["type"] for event, data in frames)
    for data in payloads:
        assert not {"output_index", "sequence_number", "content_index"} & set(data)
    kinds = [d["type"] for d in payloads]
    assert "response.function_call_arguments.done" not in kinds
    last_delta = max(i for i, k in enumerate(kinds) if k.endswith(".delta"))
    first_done = min(i for i, k in enumerate(kinds) if k.endswith(".done"))
    assert last_delta < first_done  # every closing event after every delta
    assert kinds[-1] == "response.completed"
    calls = [
        d["item"] for d in payloads if d["type"] == "response.output_item.done" and d["item"]["type"] == "function_call"
    ]
    assert [c["arguments"] for c in calls] == ['{"x": 1}', '{"y": [1, 2]}']
    assert [c["call_id"] for c in calls] == ["call_1", "call_2"]
    deltas = [d for d in payloads if d["type"] == "response.function_call_arguments.delta"]
    assert "".join(d["delta"] for d in deltas if d["item_id"] == calls[1]["id"]) == calls[1]["arguments"]
    final = payloads[-1]["response"]
    assert final["status"] == "completed" and "timings" in final
    assert set(final) == {"id", "object", "created_at", "status", "model", "output", "usage", "timings"}


async def test_a_length_finish_still_says_completed_with_the_budget_used_up(
    start_sim: StartSim, client: httpx.AsyncClient
) -> None:
    base = await start_sim({"flavor": LLAMA, "turns": [{"content": "cut", "finishReason": "length"}]})
    frames = await _stream(client, base, max_output_tokens=77)
    final = frames[-1][1]["response"]
    assert final["status"] == "completed" and final["usage"]["output_tokens"] == 77


async def test_an_error_finish_is_a_bare_data_frame_mid_stream(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim(
        {"flavor": LLAMA, "turns": [{"content": "abcdefgh", "chunkChars": 2, "finishReason": "error"}]}
    )
    frames = await _stream(client, base)
    event, last = frames[-1]
    assert event is None and last["error"]["message"] == "the simulated model failed mid-stream"
    kinds = [data.get("type") for _, data in frames[:-1]]
    assert kinds.count("response.output_text.delta") == 2 and "response.completed" not in kinds


async def test_history_arguments_that_are_not_json_are_a_500(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"flavor": LLAMA, "onExhausted": "finish"})
    request = body()
    request["input"] += [
        {"type": "function_call", "call_id": "c", "name": "a", "arguments": '{"cut'},
        {"type": "function_call_output", "call_id": "c", "output": "x"},
    ]
    response = await client.post(f"{base}/responses", json=request)
    assert response.status_code == 500
    assert response.json()["error"]["message"].startswith("Failed to parse tool call arguments as JSON")
    request["input"][-2]["arguments"] = "{}"
    assert (await client.post(f"{base}/responses", json=request)).status_code == 200


async def test_system_first_refuses_a_late_system_message_only(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"flavor": {**LLAMA, "systemFirst": True}, "onExhausted": "finish"})
    assert (await client.post(f"{base}/responses", json=body(system="first"))).status_code == 200
    late = body(system="first")
    late["input"].append({"type": "message", "role": "system", "content": "second"})
    response = await client.post(f"{base}/responses", json=late)
    assert response.status_code == 500 and "System message must be at the beginning" in response.text


async def test_models_and_props_look_like_llama_server(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    flavor = {**LLAMA, "modelPath": "/m/SmolLM2.gguf", "parallel": 2, "nCtxTrain": 8192, "supportsTools": False}
    base = await start_sim({"contextWindow": 4096, "flavor": flavor})
    [entry] = (await client.get(f"{base}/models")).json()["data"]
    assert entry["id"] == "/m/SmolLM2.gguf" and entry["owned_by"] == "llamacpp"
    assert (entry["meta"]["n_ctx"], entry["meta"]["n_ctx_train"]) == (4096, 8192)
    props = (await client.get(base.removesuffix("/v1") + "/props")).json()
    assert props["chat_template_caps"]["supports_tools"] is False and props["total_slots"] == 2
    assert props["default_generation_settings"]["n_ctx"] == 4096


async def test_the_openai_flavor_has_no_props(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({})
    assert (await client.get(base.removesuffix("/v1") + "/props")).status_code == 404


async def test_loading_answers_503_everywhere_then_serves(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"flavor": {**LLAMA, "loadingMs": 400}, "onExhausted": "finish"})
    root = base.removesuffix("/v1")
    for url in (f"{base}/models", f"{root}/props", f"{root}/health"):
        response = await client.get(url)
        assert response.status_code == 503 and response.json()["error"]["message"] == "Loading model"
    assert (await client.post(f"{base}/responses", json=body())).status_code == 503
    with trio.fail_after(10):
        while (await client.get(f"{root}/health")).status_code == 503:  # noqa: ASYNC110 (a remote server)
            await trio.sleep(0.05)
    assert (await client.post(f"{base}/responses", json=body())).status_code == 200
    record = (await client.get(f"{root}/_sim/requests")).json()
    assert [r["status"] for r in record] == [503, 200]


def test_pretty_arguments_leave_invalid_json_alone() -> None:
    assert pretty_arguments('{"a":1,"b":[1,2]}') == '{"a": 1, "b": [1, 2]}'
    assert pretty_arguments('{"a":') == '{"a":'


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_command_line_flavor_options_lay_over_the_script() -> None:
    script = apply_flavor_options(
        SimScript(),
        _args("--flavor", "llama-server", "--loading-seconds", "1.5", "--system-first", "--no-tool-template"),
    )
    flavor = script.flavor
    assert (flavor.name, flavor.loading_ms, flavor.system_first, flavor.supports_tools) == (
        "llama-server",
        1500,
        True,
        False,
    )
    assert apply_flavor_options(SimScript(), _args()) == SimScript()


@pytest.mark.parametrize("seconds", ["-1", "inf", "nan"])
def test_a_bad_loading_time_is_refused(seconds: str) -> None:
    with pytest.raises(ScriptError, match="--loading-seconds"):
        apply_flavor_options(SimScript(), _args("--loading-seconds", seconds))
