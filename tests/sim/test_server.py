"""The sim over HTTP: turn selection, usage, fail modes, terminal events, control endpoints."""

from __future__ import annotations

import json
import math
from typing import Any

import httpx
import trio
from tests.sim.conftest import StartSim
from tests.sim.simkit import body, deltas, events_of, terminal, types_of
from tests.slowness import budget

CONTEXT_MESSAGE = "the request exceeds the available context size, try increasing it"


async def _post(client: httpx.AsyncClient, base: str, payload: dict[str, Any] | None = None) -> httpx.Response:
    return await client.post(f"{base}/responses", json=payload or body())


async def _text(client: httpx.AsyncClient, base: str, payload: dict[str, Any] | None = None) -> str:
    message = next(
        i for i in terminal(events_of(await _post(client, base, payload)))["output"] if i["type"] == "message"
    )
    return message["content"][0]["text"]


async def _requests(client: httpx.AsyncClient, base: str) -> list[dict[str, Any]]:
    response = await client.get(f"{base.removesuffix('/v1')}/_sim/requests")
    assert response.status_code == 200
    return response.json()


async def test_turns_answer_in_script_order_and_are_consumed(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"turns": [{"content": "first"}, {"content": "second"}]})
    assert await _text(client, base) == "first"
    assert await _text(client, base) == "second"
    exhausted = await _post(client, base, body("what now " + "x" * 500))
    assert exhausted.status_code == 500
    message = exhausted.json()["error"]["message"]
    assert "exhausted" in message and "what now" in message
    assert len(message) < 400  # the last input is truncated


async def test_reusable_turn_is_never_consumed(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim(
        {
            "turns": [
                {"expect": {"lastInputContains": "special"}, "content": "once"},
                {"reusable": True, "content": "again"},
                {"content": "never"},
            ]
        }
    )
    assert await _text(client, base, body("special")) == "once"
    assert await _text(client, base, body("special")) == "again"
    assert await _text(client, base) == "again"
    assert await _text(client, base) == "again"


async def test_expect_conditions_route_requests(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim(
        {
            "turns": [
                {"expect": {"systemContains": "writer"}, "reusable": True, "content": "W"},
                {"expect": {"toolsInclude": ["agent", "finish"]}, "reusable": True, "content": "T"},
                {"expect": {"inputContains": "needle"}, "reusable": True, "content": "I"},
                {"expect": {"lastInputContains": "tail"}, "reusable": True, "content": "L"},
            ]
        }
    )
    assert await _text(client, base, body("x", system="You are the writer.")) == "W"
    assert await _text(client, base, body("x", tools=("agent", "finish"))) == "T"
    assert (await _post(client, base, body("x", tools=("agent",)))).status_code == 500
    assert await _text(client, base, body("haystack needle")) == "I"
    assert await _text(client, base, body("the tail")) == "L"
    instructions = body("x", instructions="You are the writer.")
    assert await _text(client, base, instructions) == "W"


async def test_default_usage_is_estimated(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"turns": [{"reasoning": "r" * 10, "content": "c" * 7, "toolCalls": [{"name": "a"}]}]})
    request = body("u" * 37)
    usage = terminal(events_of(await _post(client, base, request)))["usage"]
    assert usage == {
        "input_tokens": math.ceil(37 / 4),
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": math.ceil((10 + 7 + 2) / 4),
        "output_tokens_details": {"reasoning_tokens": math.ceil(10 / 4)},
        "total_tokens": math.ceil(37 / 4) + math.ceil(19 / 4),
    }


async def test_partial_usage_fills_only_missing_fields(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim(
        {
            "turns": [
                {"content": "c" * 8, "usage": {"cachedPromptTokens": 3}},
                {"content": "c" * 8, "usage": {"promptTokens": 100, "completionTokens": 20, "cachedPromptTokens": 90}},
            ]
        }
    )
    first = terminal(events_of(await _post(client, base, body("u" * 40))))["usage"]
    assert (first["input_tokens"], first["output_tokens"], first["input_tokens_details"]["cached_tokens"]) == (10, 2, 3)
    second = terminal(events_of(await _post(client, base)))["usage"]
    assert (second["input_tokens"], second["output_tokens"], second["total_tokens"]) == (100, 20, 120)
    assert second["input_tokens_details"]["cached_tokens"] == 90


async def test_fail_status_answers_json_and_consumes(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"turns": [{"fail": {"status": 503}}, {"content": "recovered"}]})
    failed = await _post(client, base)
    assert failed.status_code == 503
    assert failed.headers["content-type"] == "application/json"
    assert failed.json()["error"]["code"] == 503
    assert await _text(client, base) == "recovered"


async def test_scripted_context_exceeded(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim(
        {
            "contextWindow": 8192,
            "turns": [{"fail": {"contextExceeded": True, "promptTokens": 40000}}, {"content": "ok"}],
        }
    )
    rejected = await _post(client, base)
    assert rejected.status_code == 400
    assert rejected.json() == {
        "error": {
            "code": 400,
            "message": CONTEXT_MESSAGE,
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 40000,
            "n_ctx": 8192,
        }
    }
    assert await _text(client, base) == "ok"


async def test_automatic_context_rejection_happens_before_selection(
    start_sim: StartSim, client: httpx.AsyncClient
) -> None:
    base = await start_sim({"contextWindow": 100, "charsPerToken": 1, "turns": [{"content": "fits"}]})
    too_big = body("x" * 80, max_output_tokens=20)  # 80 >= 100 - 20
    rejected = await _post(client, base, too_big)
    assert rejected.status_code == 400
    assert rejected.text == (
        '{"error":{"code":400,"message":"' + CONTEXT_MESSAGE + '","type":"exceed_context_size_error",'
        '"n_prompt_tokens":80,"n_ctx":100}}'
    )
    assert await _text(client, base, body("x" * 79, max_output_tokens=20)) == "fits"
    record = await _requests(client, base)
    assert [(r["turn"], r["status"]) for r in record] == [(None, 400), (0, 200)]


async def test_stall_before_headers_makes_a_short_deadline_client_give_up(
    start_sim: StartSim, client: httpx.AsyncClient
) -> None:
    base = await start_sim({"turns": [{"fail": {"stallBeforeHeadersMs": 60_000}}, {"content": "prompt"}]})
    with trio.move_on_after(0.3) as scope:
        await _post(client, base)
    assert scope.cancelled_caught
    started = trio.current_time()
    assert await _text(client, base) == "prompt"  # the server survived the disconnect
    assert trio.current_time() - started < min(budget(2), 50)  # not stuck behind the 60 s stall


async def test_stall_before_headers_then_answers(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"turns": [{"content": "late", "fail": {"stallBeforeHeadersMs": 300}}]})
    started = trio.current_time()
    assert await _text(client, base) == "late"
    assert trio.current_time() - started >= 0.29


async def test_stall_mid_stream_pauses_after_half_the_events(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"turns": [{"content": "abcdefgh" * 4, "chunkChars": 4, "fail": {"stallMidStreamMs": 500}}]})
    arrivals: list[tuple[float, str]] = []
    async with client.stream("POST", f"{base}/responses", json=body()) as response:
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                arrivals.append((trio.current_time(), line.removeprefix("event: ")))
    count = len(arrivals)
    gaps = [arrivals[i][0] - arrivals[i - 1][0] for i in range(1, count)]
    longest = max(range(len(gaps)), key=gaps.__getitem__)
    assert gaps[longest] >= 0.45
    assert longest + 1 == count // 2  # the pause comes right before event count // 2
    assert arrivals[-1][1] == "response.completed"


async def test_client_disconnect_mid_stream_does_not_break_the_server(
    start_sim: StartSim, client: httpx.AsyncClient
) -> None:
    base = await start_sim(
        {"turns": [{"content": "x" * 40, "chunkChars": 2, "chunkDelayMs": 200}, {"content": "after"}]}
    )
    url = httpx.URL(base)
    payload = json.dumps(body()).encode()
    head = (
        f"POST {url.path}/responses HTTP/1.1\r\nHost: {url.host}:{url.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
    )
    stream = await trio.open_tcp_stream(url.host, url.port)
    async with stream:  # a raw socket, closed while the server is between deltas
        await stream.send_all(head.encode() + payload)
        received = b""
        with trio.fail_after(budget(5)):
            while b"response.output_text.delta" not in received:
                received += await stream.receive_some()
    assert received.startswith(b"HTTP/1.1 200")
    assert await _text(client, base) == "after"


async def test_empty_stream_has_no_output(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"turns": [{"content": "ignored", "fail": {"empty": True}}]})
    events = events_of(await _post(client, base, body("abcd")))
    assert types_of(events) == ["response.created", "response.in_progress", "response.completed"]
    final = terminal(events)
    assert final["output"] == [] and final["status"] == "completed"
    assert (final["usage"]["input_tokens"], final["usage"]["output_tokens"]) == (1, 0)


async def test_finish_reason_length_and_error(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim(
        {"turns": [{"content": "cut", "finishReason": "length"}, {"content": "bad", "finishReason": "error"}]}
    )
    length = events_of(await _post(client, base))
    assert length[-1][0] == "response.incomplete"
    assert terminal(length)["status"] == "incomplete"
    assert terminal(length)["incomplete_details"] == {"reason": "max_output_tokens"}
    assert terminal(length)["usage"]["output_tokens"] == 1
    error = events_of(await _post(client, base))
    assert error[-1][0] == "response.failed"
    assert terminal(error)["status"] == "failed"
    assert terminal(error)["error"]["code"] == "server_error"
    assert terminal(error)["output"][0]["content"][0]["text"] == "bad"
    assert "usage" in terminal(error)


async def test_exhausted_finish_calls_finish(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"onExhausted": "finish"})
    events = events_of(await _post(client, base))
    output = terminal(events)["output"]
    assert [(i["type"], i["name"]) for i in output] == [("function_call", "finish")]
    assert json.loads(output[0]["arguments"]) == {"status": "success", "summary": "sim script exhausted"}
    assert (await _requests(client, base))[0]["turn"] is None


async def test_event_sequence_and_chunking(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim(
        {
            "turns": [
                {
                    "reasoning": "r" * 9,
                    "content": "c" * 10,
                    "toolCalls": [
                        {"name": "agent", "arguments": {"role": "scout", "n": 1}},
                        {"name": "x", "rawArguments": "{bad"},
                    ],
                    "chunkChars": 4,
                }
            ]
        }
    )
    events = events_of(await _post(client, base))
    assert types_of(events) == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        *["response.reasoning_text.delta"] * 3,
        "response.reasoning_text.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * 3,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        *["response.function_call_arguments.delta"] * math.ceil(len('{"role":"scout","n":1}') / 4),
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert "".join(deltas(events, "reasoning_text")) == "r" * 9
    assert "".join(deltas(events, "output_text")) == "c" * 10
    assert "".join(deltas(events, "function_call_arguments")) == '{"role":"scout","n":1}{bad'
    calls = [i for i in terminal(events)["output"] if i["type"] == "function_call"]
    assert [(c["call_id"], c["name"], c["arguments"]) for c in calls] == [
        ("call_1", "agent", '{"role":"scout","n":1}'),
        ("call_2", "x", "{bad"),
    ]


async def test_call_ids_keep_counting_across_responses(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"turns": [{"toolCalls": [{"name": "a"}]}, {"toolCalls": [{"name": "b"}, {"name": "c"}]}]})
    ids = []
    for _ in range(2):
        ids += [i["call_id"] for i in terminal(events_of(await _post(client, base)))["output"]]
    assert ids == ["call_1", "call_2", "call_3"]


async def test_chunk_delay_paces_deltas(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"turns": [{"content": "abcdefghij", "chunkChars": 4, "chunkDelayMs": 150}]})
    started = trio.current_time()
    events = events_of(await _post(client, base))
    assert len(deltas(events, "output_text")) == 3
    assert trio.current_time() - started >= 0.29  # two pauses between three chunks


async def test_responses_alias_and_non_streaming(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"turns": [{"reusable": True, "content": "same"}]})
    root = base.removesuffix("/v1")
    assert (await client.post(f"{root}/responses", json=body())).status_code == 200
    plain = await client.post(f"{base}/responses", json=body(stream=False))
    assert plain.headers["content-type"] == "application/json"
    assert plain.json()["object"] == "response" and plain.json()["status"] == "completed"
    assert plain.json()["output"][0]["content"][0]["text"] == "same"


async def test_malformed_request_body_is_400(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"turns": [{"content": "unused"}]})
    response = await client.post(
        f"{base}/responses", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert await _text(client, base) == "unused"


async def test_models_endpoint_modes(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    meta = await start_sim({"model": "m", "contextWindow": 4096})
    listing = (await client.get(f"{meta}/models")).json()
    assert listing["object"] == "list"
    [entry] = listing["data"]
    assert (entry["id"], entry["object"], entry["created"], entry["owned_by"]) == ("m", "model", 0, "llamacpp")
    assert entry["meta"]["n_ctx"] == 4096 and entry["meta"]["n_ctx_train"] == 4096
    assert "context_length" not in entry
    assert (await client.get(f"{meta.removesuffix('/v1')}/models")).json() == listing

    length = await start_sim({"contextWindow": 2048, "models": {"ids": ["a", "b"], "report": "context_length"}})
    data = (await client.get(f"{length}/models")).json()["data"]
    assert [(e["id"], e["context_length"], "meta" in e) for e in data] == [("a", 2048, False), ("b", 2048, False)]

    bare = await start_sim({"models": {"report": "none"}})
    [entry] = (await client.get(f"{bare}/models")).json()["data"]
    assert entry["id"] == "sim" and "meta" not in entry and "context_length" not in entry

    broken = await start_sim({"models": {"status": 503}})
    response = await client.get(f"{broken}/models")
    assert response.status_code == 503 and response.json()["error"]["code"] == 503


async def test_request_record_and_clearing(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"turns": [{"fail": {"status": 502}}, {"content": "ok"}]})
    root = base.removesuffix("/v1")
    first, second = body("one"), body("two")
    await _post(client, base, first)
    await client.post(f"{root}/responses", json=second)
    await _post(client, base, body("three"))
    record = await _requests(client, base)
    assert record == [
        {"path": "/v1/responses", "body": first, "turn": 0, "status": 502, "completed": True},
        {"path": "/responses", "body": second, "turn": 1, "status": 200, "completed": True},
        {"path": "/v1/responses", "body": body("three"), "turn": None, "status": 500, "completed": True},
    ]
    assert (await client.delete(f"{root}/_sim/requests")).status_code == 200
    assert await _requests(client, base) == []


async def test_script_replacement_resets_state(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"turns": [{"content": "old"}]})
    root = base.removesuffix("/v1")
    assert await _text(client, base) == "old"
    replaced = await client.post(f"{root}/_sim/script", json={"turns": [{"content": "new"}]})
    assert replaced.status_code == 200
    assert await _requests(client, base) == []
    assert await _text(client, base) == "new"
    again = await client.post(f"{root}/_sim/script", json={"turns": [{"content": "new"}]})
    assert again.status_code == 200
    assert await _text(client, base) == "new"  # consumption was reset
    await client.post(f"{root}/_sim/script", json={"onExhausted": "finish"})
    [only] = terminal(events_of(await _post(client, base)))["output"]
    assert (only["call_id"], only["id"]) == ("call_1", "fc_1_0")  # id counters reset too


async def test_invalid_script_replacement_names_the_key(start_sim: StartSim, client: httpx.AsyncClient) -> None:
    base = await start_sim({"turns": [{"content": "kept"}]})
    root = base.removesuffix("/v1")
    response = await client.post(f"{root}/_sim/script", json={"turns": [{"fial": {"status": 503}}]})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["path"] == "turns[0].fial" and "turns[0].fial" in error["message"]
    assert await _text(client, base) == "kept"  # the old script stays
