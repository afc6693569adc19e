"""Wire fidelity: the official openai SDK reads the sim's streams, and every raw event validates strictly."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pydantic
import pytest
from openai import AsyncOpenAI
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFailedEvent,
    ResponseFunctionToolCall,
    ResponseIncompleteEvent,
    ResponseOutputMessage,
    ResponseReasoningItem,
)
from tests.sim.conftest import StartSim
from tests.sim.simkit import body, parse_sse, tool, validate_event

FULL_TURN = {
    "reusable": True,
    "reasoning": "The user wants a plan; delegate to the scout first.",
    "content": "Delegating now — 先看看.",
    "toolCalls": [
        {"name": "agent", "arguments": {"role": "scout", "task": "look around", "depth": 2}},
        {"name": "finish", "arguments": {"status": "success", "summary": "done"}},
    ],
    "usage": {"cachedPromptTokens": 5},
    "chunkChars": 7,
}
INPUT: list[Any] = [
    {"type": "message", "role": "system", "content": "You are the planner."},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "plan a trip"}]},
]
TOOLS: list[Any] = [tool("agent"), tool("finish")]


@asynccontextmanager
async def _sdk(base: str) -> AsyncIterator[AsyncOpenAI]:
    sdk = AsyncOpenAI(base_url=base, api_key="x", max_retries=0)
    try:
        yield sdk
    finally:
        await sdk.close()


async def _sdk_events(base: str) -> list[Any]:
    async with _sdk(base) as sdk:
        stream = await sdk.responses.create(model="sim", input=INPUT, tools=TOOLS, stream=True)
        return [event async for event in stream]


async def _raw_validated(client: httpx.AsyncClient, base: str) -> list[Any]:
    """POST the same request raw; validate every ``data:`` payload strictly; return the typed events."""
    response = await client.post(
        f"{base}/responses", json={"model": "sim", "input": INPUT, "tools": TOOLS, "stream": True}
    )
    assert response.status_code == 200
    return [validate_event(data) for _, data in parse_sse(response.text)]


async def test_sdk_reads_reasoning_content_and_two_calls(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"turns": [FULL_TURN]})
    events = await _sdk_events(base)
    strict = await _raw_validated(client, base)
    assert [e.type for e in events] == [e.type for e in strict]
    assert [e.sequence_number for e in events] == list(range(len(events)))

    assert isinstance(events[-1], ResponseCompletedEvent)
    final = events[-1].response
    assert final.status == "completed"
    reasoning, message, first, second = final.output
    assert isinstance(reasoning, ResponseReasoningItem) and reasoning.content is not None
    assert reasoning.content[0].text == FULL_TURN["reasoning"]
    assert isinstance(message, ResponseOutputMessage)
    assert final.output_text == FULL_TURN["content"]
    assert isinstance(first, ResponseFunctionToolCall) and isinstance(second, ResponseFunctionToolCall)
    assert (first.name, json.loads(first.arguments)) == ("agent", {"role": "scout", "task": "look around", "depth": 2})
    assert (second.name, second.call_id) == ("finish", "call_2")
    assert final.usage is not None
    assert final.usage.input_tokens_details.cached_tokens == 5
    assert final.usage.total_tokens == final.usage.input_tokens + final.usage.output_tokens

    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == FULL_TURN["content"]
    args = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    assert "".join(args) == first.arguments + second.arguments
    assert [t.name for t in final.tools] == ["agent", "finish"]  # type: ignore[union-attr]


async def test_sdk_stream_helper_assembles_the_final_response(start_sim: StartSim) -> None:
    base = await start_sim({"turns": [FULL_TURN]})
    async with _sdk(base) as sdk, sdk.responses.stream(model="sim", input=INPUT, tools=TOOLS) as stream:
        async for _ in stream:
            pass
        final = await stream.get_final_response()
    assert final.output_text == FULL_TURN["content"]
    assert [i.type for i in final.output] == ["reasoning", "message", "function_call", "function_call"]


async def test_length_case_is_strictly_valid(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"turns": [{"reusable": True, "content": "truncated answ", "finishReason": "length"}]})
    events = await _sdk_events(base)
    strict = await _raw_validated(client, base)
    for last in (events[-1], strict[-1]):
        assert isinstance(last, ResponseIncompleteEvent)
        assert last.response.status == "incomplete"
        assert last.response.incomplete_details is not None
        assert last.response.incomplete_details.reason == "max_output_tokens"
        assert last.response.usage is not None


async def test_failed_case_is_strictly_valid(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"turns": [{"reusable": True, "reasoning": "hmm", "finishReason": "error"}]})
    events = await _sdk_events(base)
    strict = await _raw_validated(client, base)
    for last in (events[-1], strict[-1]):
        assert isinstance(last, ResponseFailedEvent)
        assert last.response.status == "failed"
        assert last.response.error is not None and last.response.error.code == "server_error"
        assert last.response.usage is not None


async def test_empty_and_exhausted_finish_are_strictly_valid(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"onExhausted": "finish", "turns": [{"fail": {"empty": True}}]})
    empty = await _raw_validated(client, base)
    assert isinstance(empty[-1], ResponseCompletedEvent) and empty[-1].response.output == []
    finish = await _raw_validated(client, base)
    assert isinstance(finish[-1], ResponseCompletedEvent)
    assert [i.type for i in finish[-1].response.output] == ["function_call"]


async def test_the_validator_is_strict() -> None:
    good = {
        "type": "response.output_text.delta",
        "sequence_number": 3,
        "item_id": "m",
        "output_index": 0,
        "content_index": 0,
        "delta": "hi",
        "logprobs": [],
    }
    validate_event(json.dumps(good))
    with pytest.raises(pydantic.ValidationError):
        validate_event(json.dumps({k: v for k, v in good.items() if k != "logprobs"}))
    with pytest.raises(pydantic.ValidationError):
        validate_event(json.dumps({**good, "output_index": "0"}))


async def test_non_streaming_reply_is_a_valid_response(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"turns": [FULL_TURN]})
    raw = await client.post(f"{base}/responses", json=body(stream=False, tools=("agent", "finish")))
    Response.model_validate_json(raw.text, strict=True)
    async with _sdk(base) as sdk:
        response = await sdk.responses.create(model="sim", input=INPUT, tools=TOOLS)
    assert response.output_text == FULL_TURN["content"]


async def test_models_listing_reads_through_the_sdk(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"contextWindow": 16384, "models": {"ids": ["sim", "sim-alt"]}})
    async with _sdk(base) as sdk:
        ids = [model.id async for model in sdk.models.list()]
    assert ids == ["sim", "sim-alt"]
    raw = (await client.get(f"{base}/models")).json()
    assert all(entry["meta"]["n_ctx"] == 16384 for entry in raw["data"])
