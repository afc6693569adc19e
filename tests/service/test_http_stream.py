"""``/ws/stream``: the live token stream of the active run (subscribe/ack, deltas, reset on a retried
attempt, malformed messages ignored, re-subscribe replaces, a dying socket never hurts the run)."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import trio
from tests.engine.harness import call, finish, turn
from tests.helpers import serve_script
from tests.service.server import Server, serve_process, write_config
from tests.slowness import budget
from trio_websocket import WebSocketConnection, open_websocket_url

ROLES = {"lead": ["agent", "finish"], "coder": ["run_shell", "finish"]}
LEAD_TEXT = "The lead is planning the work carefully. " * 2
CODER_TEXT = "The coder writes the greeting file now. " * 2
CODER_THOUGHT = "Reasoning about where the greeting goes."
DELTA_KEYS = {"type", "runId", "roleId", "role", "field", "text"}


def _script() -> dict[str, Any]:
    """A slow lead turn (time to subscribe), a coder turn that stalls mid-stream (retried), then done."""
    coder = {"content": CODER_TEXT, "reasoning": CODER_THOUGHT, "chunkChars": 6, "chunkDelayMs": 15}
    return {
        "turns": [
            turn(
                "lead",
                call("agent", role="coder", task="write it"),
                content=LEAD_TEXT,
                chunkChars=4,
                chunkDelayMs=50,
            ),
            turn("coder", finish("never sent"), fail={"stallMidStreamMs": 5000}, **coder),
            turn("coder", finish("greeting written"), **coder),
            turn("lead", finish("all written"), last="greeting written"),
        ]
    }


async def _subscribe(ws: WebSocketConnection, run_id: str) -> None:
    await ws.send_message(json.dumps({"type": "subscribe", "runId": run_id}))


async def _collect(ws: WebSocketConnection, sink: list[dict[str, Any]]) -> None:
    while True:
        sink.append(json.loads(await ws.get_message()))


async def _raw_subscriber(server: Server, run_id: str, got_delta: trio.Event) -> None:
    """A hand-rolled WebSocket client that subscribes, reads until a delta arrives, then drops the TCP
    connection without a close frame (a socket dying mid-stream)."""
    host, port = server.base_url.removeprefix("http://").split(":")
    stream = await trio.open_tcp_stream(host, int(port))
    key = base64.b64encode(os.urandom(16)).decode()
    await stream.send_all(
        (
            f"GET /ws/stream HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer {server.token}\r\n\r\n"
        ).encode()
    )
    received = b""
    while b"\r\n\r\n" not in received:
        received += await stream.receive_some(4096)
    assert received.startswith(b"HTTP/1.1 101"), received
    payload = json.dumps({"type": "subscribe", "runId": run_id}).encode()
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    await stream.send_all(bytes([0x81, 0x80 | len(payload)]) + mask + masked)
    while b'"type":"delta"' not in received:
        received += await stream.receive_some(4096)
    got_delta.set()
    await stream.aclose()  # no close handshake: the connection just dies


async def test_deltas_stream_for_the_subscribed_run_and_restart_on_a_retried_attempt(tmp_path: Path) -> None:
    async with serve_script(_script()) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, ROLES)
        env = {"ORCHESTRATOR_STALL_IDLE_SECONDS": "0.5"}
        async with serve_process(tmp_path, guild=guild, deployment=deployment, env=env) as server:
            auth = server.auth_headers
            async with (
                open_websocket_url(server.ws_url, extra_headers=auth) as ws,
                open_websocket_url(server.ws_url, extra_headers=auth) as switcher,
            ):
                # Malformed and unknown messages are ignored: the first thing back is the ack.
                for junk in ("not json", "[1, 2]", '{"type": "subscribe"}', '{"type": "subscribe", "runId": 7}'):
                    await ws.send_message(junk)
                await ws.send_message(json.dumps({"type": "hello", "runId": "run-20000101-000000"}))
                await _subscribe(ws, "run-20000101-000000")
                assert json.loads(await ws.get_message()) == {"type": "subscribed", "runId": "run-20000101-000000"}

                response = await server.post("/api/runs", {"task": "write the greeting"})
                assert response.status_code == 201
                run_id = response.json()["runId"]
                await _subscribe(ws, run_id)  # re-subscribe: replaces the previous subscription
                assert json.loads(await ws.get_message()) == {"type": "subscribed", "runId": run_id}

                messages: list[dict[str, Any]] = []
                first: list[dict[str, Any]] = []
                after_switch: list[dict[str, Any]] = []
                died = trio.Event()
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(_collect, ws, messages)
                    nursery.start_soon(_raw_subscriber, server, run_id, died)
                    # The switcher follows the run, then re-subscribes away: nothing of the run after that.
                    await _subscribe(switcher, run_id)
                    first.append(json.loads(await switcher.get_message()))
                    while not any(m["type"] == "delta" for m in first):
                        first.append(json.loads(await switcher.get_message()))
                    await _subscribe(switcher, "run-20000101-000001")
                    while first[-1] != {"type": "subscribed", "runId": "run-20000101-000001"}:
                        first.append(json.loads(await switcher.get_message()))
                    nursery.start_soon(_collect, switcher, after_switch)
                    view = await server.run_status(run_id, "success")
                    with trio.fail_after(budget(5)):
                        await died.wait()
                    nursery.cancel_scope.cancel()
            requests = await sim.responses_requests()

    assert view["result"]["summary"] == "all written"  # the dead socket did not affect the run
    assert after_switch == []
    assert first[0] == {"type": "subscribed", "runId": run_id}
    assert all(m["type"] == "delta" and m["runId"] == run_id for m in first[1:-1])
    deltas = [m for m in messages if m["type"] == "delta"]
    assert deltas and len(deltas) == len(messages)
    for delta in deltas:
        assert set(delta) - {"reset", "since"} == DELTA_KEYS and delta["runId"] == run_id
        assert ("since" in delta) == bool(delta.get("reset"))  # every restart says when it started
        assert delta.get("reset", True) is True  # only ever sent as true
        assert delta["field"] in ("reasoning", "content")
    lead = [d for d in deltas if d["role"] == "lead"]
    assert lead and {d["roleId"] for d in lead} == {"lead-0-1"}
    since_reset = lead[max(i for i, d in enumerate(lead) if d.get("reset")) :]
    assert "".join(d["text"] for d in since_reset if d["field"] == "content") == LEAD_TEXT  # nothing lost

    coder = [d for d in deltas if d["role"] == "coder"]
    assert {d["roleId"] for d in coder} == {"coder-1-2"}
    resets = [i for i, d in enumerate(coder) if d.get("reset")]
    assert len(resets) == 2 and resets[0] == 0  # the first delta of each attempt
    first_attempt, retry = coder[: resets[1]], coder[resets[1] :]
    stopped_at = "".join(d["text"] for d in first_attempt if d["field"] == "content")
    assert 0 < len(stopped_at) < len(CODER_TEXT)  # the stalled attempt stopped half way
    assert CODER_TEXT.startswith(stopped_at)  # what it held back came out when it broke off
    assert "".join(d["text"] for d in retry if d["field"] == "reasoning") == CODER_THOUGHT
    assert "".join(d["text"] for d in retry if d["field"] == "content") == CODER_TEXT
    stalled = next(r for r in requests if r["turn"] == 1)
    assert stalled["completed"] is False  # the client gave up on the stalled stream


SALT = "Xq7vLm2pZw9tK4rB"  # a withheld variable's value: a secret known by value only
DSN = "postgres://reporter:Zq8vLm2pXw9t@db.internal:5432/stats"  # a credential shape, known to nobody
LEAKY_TEXT = f"Connecting with {SALT} now, then {DSN} as asked; {SALT}"
LEAKY_THOUGHT = f"The salt is {SALT}."


async def test_a_secret_the_model_streams_split_over_deltas_never_reaches_the_socket(tmp_path: Path) -> None:
    script = {
        "turns": [
            turn("lead", finish("done"), content=LEAKY_TEXT, reasoning=LEAKY_THOUGHT, chunkChars=3, chunkDelayMs=5),
        ]
    }
    redacted_text = (
        "Connecting with <redacted> now, then postgres://reporter:<redacted>@db.internal:5432/stats as asked; "
    )
    async with serve_script(script) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, ROLES)
        async with (
            serve_process(tmp_path, guild=guild, deployment=deployment, env={"REPORTS_SALT": SALT}) as server,
            open_websocket_url(server.ws_url, extra_headers=server.auth_headers) as ws,
        ):
            run_id = (await server.post("/api/runs", {"task": "report"})).json()["runId"]
            await _subscribe(ws, run_id)
            texts: dict[str, str] = {"content": "", "reasoning": ""}
            with trio.fail_after(budget(10)):
                while texts["content"] != redacted_text + "<redacted>":  # the last word comes at the turn's end
                    message = json.loads(await ws.get_message())
                    assert SALT[:4] not in json.dumps(message) and "Zq8v" not in json.dumps(message), message
                    if message["type"] == "delta":
                        if message.get("reset"):  # the turn's start (or a catch-up of it): the text afresh
                            texts = {"content": "", "reasoning": ""}
                        texts[message["field"]] += message["text"]
            await server.run_status(run_id, "success")
            log = (server.workspace / ".orchestration" / "runs" / run_id / "log.jsonl").read_text()
    assert texts["reasoning"] == "The salt is <redacted>."
    received = next(json.loads(line)["payload"]["received"] for line in log.splitlines() if '"llm_call"' in line)
    assert (received["content"], received["reasoning"]) == (texts["content"], texts["reasoning"])
