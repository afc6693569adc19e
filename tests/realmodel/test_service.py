"""``orchestrator serve`` (a real process) against the real llama-server: a late model server is picked
up, a stopped one is retried with ``reset`` on the live stream, and the model's tokens reach
``/ws/stream`` exactly as the engine logged them.

Temperature 0 and the server's fixed seed (``tests/realmodel/llama_server.py``); assertions are about
the service, not about the words the model picks.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import trio
from tests.realmodel.llama_cache import real_model
from tests.realmodel.llama_server import (
    QWEN25,
    TEMPERATURE,
    free_port,
    llama_server,
    prose_sentence,
    rewriting_relay,
)
from tests.service.server import serve_process, write_config
from tests.slowness import budget
from trio_websocket import WebSocketConnection, open_websocket_url

from orchestrator.engine.runfolder import TERMINAL_STATUSES

ROLES = {"lead": ["finish"]}
RUN_SECONDS = budget(120.0)
STORY = "Write a long story about a dragon who learns to bake bread. Use at least three paragraphs."


def _model(**extra: Any) -> dict[str, Any]:
    return {"generation": {"temperature": TEMPERATURE, "maxTokens": extra.pop("max_tokens", 96)}, **extra}


def long_then_one_sentence(index: int, body: dict[str, Any]) -> dict[str, Any]:
    """The first attempt streams long enough to be stopped mid-way; the retry ends in one sentence."""
    return {} if index == 0 else prose_sentence(index, body)


class Inbox:
    """The messages one WebSocket client received, and a way to wait for more."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self._grew = trio.Event()

    async def collect(self, ws: WebSocketConnection) -> None:
        while True:
            self.messages.append(json.loads(await ws.get_message()))
            self._grew.set()
            self._grew = trio.Event()

    async def wait_until(self, done: Callable[[list[dict[str, Any]]], bool]) -> None:
        while not done(self.messages):
            await self._grew.wait()


def attempts(messages: list[dict[str, Any]], run_id: str) -> list[list[dict[str, Any]]]:
    """The run's deltas split into attempts: each ``reset`` delta starts one."""
    split: list[list[dict[str, Any]]] = []
    for message in messages:
        if message.get("type") == "delta" and message.get("runId") == run_id:
            if message.get("reset") or not split:
                split.append([])
            split[-1].append(message)
    return split


def content(deltas: list[dict[str, Any]]) -> str:
    return "".join(d["text"] for d in deltas if d["field"] == "content")


async def test_serve_started_before_llama_server_picks_it_up_once_ready(tmp_path: Path) -> None:
    """``serve`` boots while nothing listens behind the model URL (the relay answers 502 then), with no
    model name or context window configured; once llama-server is up, serve probes again, takes both from
    it, and a run goes through to a card that is not ``llm_unavailable``."""
    port = free_port()
    model_config = _model(name=None, contextWindow=None)
    async with rewriting_relay(f"http://127.0.0.1:{port}", prose_sentence) as relay:
        guild, deployment = write_config(tmp_path, relay.base_url, ROLES, model=model_config)
        async with (
            serve_process(tmp_path, guild=guild, deployment=deployment) as server,
            llama_server(tmp_path, template=QWEN25, port=port),
        ):

            async def resolved() -> dict[str, Any] | None:
                try:  # the error page gives way to the service on the same port: a dropped poll is fine
                    response = await server.get("/api/config")
                except httpx.TransportError:
                    return None
                if response.status_code != 200:
                    return None
                model = response.json().get("model") or {}
                return model if model.get("name") == str(real_model().model) else None

            model = await server.wait_for(resolved, seconds=60, what="serve to probe the late model server")
            assert model["contextWindow"] == 8192
            response = await server.post("/api/runs", {"task": "Say hello."})
            assert response.status_code == 201, response.text
            run_id = response.json()["runId"]
            view = await server.run_status(run_id, *TERMINAL_STATUSES, seconds=RUN_SECONDS)
    assert any(x.status == 502 for x in relay.seen)  # serve did try while nothing was there
    assert ((view.get("result") or {}).get("error") or {}).get("kind") != "llm_unavailable", view


async def test_a_stopped_server_is_retried_and_the_stream_resets(tmp_path: Path) -> None:
    """SIGSTOP llama-server once the first tokens are on ``/ws/stream``: the idle-stream bound fires, the
    engine retries (seen at the relay as a second request), SIGCONT lets the retry through, and the
    stream's first delta of the new attempt carries ``reset``. The deltas of the final attempt spell
    exactly the content the engine logged in ``llm_call``."""
    model = _model(name=str(real_model().model), contextWindow=8192, max_tokens=160)
    # the idle bound must outlast prompt processing on a busy machine (llama-server sends its headers and
    # response.created first), so that the stall it catches is the one the test causes
    env = {"ORCHESTRATOR_STALL_IDLE_SECONDS": "10", "ORCHESTRATOR_STALL_HEADERS_SECONDS": "60"}
    inbox = Inbox()
    async with (
        llama_server(tmp_path, template=QWEN25) as llama,
        rewriting_relay(llama.root, long_then_one_sentence) as relay,
    ):
        guild, deployment = write_config(tmp_path, relay.base_url, ROLES, model=model)
        async with (
            serve_process(tmp_path, guild=guild, deployment=deployment, env=env) as server,
            open_websocket_url(server.ws_url, extra_headers=server.auth_headers) as ws,
        ):
            response = await server.post("/api/runs", {"task": STORY})
            assert response.status_code == 201, response.text
            run_id = response.json()["runId"]
            await ws.send_message(json.dumps({"type": "subscribe", "runId": run_id}))
            async with trio.open_nursery() as nursery:
                nursery.start_soon(inbox.collect, ws)
                with trio.fail_after(RUN_SECONDS):
                    await inbox.wait_until(lambda messages: bool(attempts(messages, run_id)))
                    llama.stop()
                    seen_before = len(attempts(inbox.messages, run_id))
                    try:  # the engine's retry reaches the relay
                        await relay.wait_responses(len(relay.responses()) + 1)
                    finally:
                        llama.resume()
                view = await server.run_status(run_id, *TERMINAL_STATUSES, seconds=RUN_SECONDS)
                events = await server.events(run_id)
                logged = [e["payload"] for e in events if e["type"] == "llm_call"]
                assert logged, [e["type"] for e in events]
                final = logged[-1]["received"]["content"]

                def retried_and_delivered(messages: list[dict[str, Any]]) -> bool:
                    split = attempts(messages, run_id)
                    return len(split) > seen_before and content(split[-1]) == final

                with trio.move_on_after(30):  # the socket may still be delivering the last deltas
                    await inbox.wait_until(retried_and_delivered)
                nursery.cancel_scope.cancel()
    assert [e["type"] for e in events].count("llm_retry") >= 1
    split = attempts(inbox.messages, run_id)
    assert len(split) > seen_before, split  # the retry after the stop restarted the stream with ``reset``
    assert final and content(split[-1]) == final  # and its deltas spell exactly what the engine logged
    assert ((view.get("result") or {}).get("error") or {}).get("kind") != "llm_unavailable", view
