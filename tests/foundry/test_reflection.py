"""The reflection model through our Responses-API client: gepa's callable, cached answers, a clear stop."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from tests.helpers import serve_script

from orchestrator.foundry.reflection import ReflectionEndpoint, ReflectionModel, ReflectionUnavailable
from orchestrator.llm import LlmTimeouts


async def test_the_answer_comes_from_the_endpoint_once_then_from_disk(tmp_path: Path) -> None:
    script = {"turns": [{"reusable": True, "content": "```\nnew text\n```"}]}
    async with serve_script(script) as sim:
        endpoint = ReflectionEndpoint(api_base=sim.base_url, model="sim", api_key="k-secret")
        model = ReflectionModel(endpoint, tmp_path / "reflections")
        first = await trio.to_thread.run_sync(model, "improve this")
        again = await trio.to_thread.run_sync(ReflectionModel(endpoint, tmp_path / "reflections"), "improve this")
        messages = await trio.to_thread.run_sync(model, [{"role": "user", "content": "other"}])
        requests = await sim.responses_requests()
    assert first == again == messages == "```\nnew text\n```"
    assert len(requests) == 2  # the repeated prompt was answered from disk
    assert requests[0]["body"]["input"][0]["content"] == "improve this"
    assert "k-secret" not in repr(endpoint)


async def test_an_endpoint_that_is_down_is_named_and_remembered(tmp_path: Path) -> None:
    endpoint = ReflectionEndpoint(api_base="http://127.0.0.1:9/v1", model="m")
    model = ReflectionModel(endpoint, tmp_path, LlmTimeouts(attempts=1))
    with pytest.raises(ReflectionUnavailable, match=r"the reflection model at http://127\.0\.0\.1:9/v1 did not answer"):
        await trio.to_thread.run_sync(model, "x")
    assert model.failure is not None
