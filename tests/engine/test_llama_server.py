"""Issue 13's llama-server bugs A–J, each driven through the engine against the sim's llama-server flavor.

The flavor reproduces what the real server was observed to do (docs/sim-model.md, "Flavors"); every
test here failed before its fix (the letter is in the test name).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.engine.harness import FAST, call, finish, of_type, run_task, turn, types
from tests.helpers import make_settings, serve_script
from tests.slowness import budget

from orchestrator.config import probe_model
from orchestrator.engine.effort import effort_directive
from orchestrator.engine.limits import CUT_OFF_NOTICE
from orchestrator.llm import LlmTimeouts
from orchestrator.llm.client import ERROR_HEAD, ERROR_TAIL, error_excerpt

LLAMA: dict[str, Any] = {"name": "llama-server"}
SMALL_BUDGET = {"model": {"generation": {"temperature": 0.2, "maxTokens": 64}}}


def _script(*turns: dict[str, Any], **flavor: Any) -> dict[str, Any]:
    return {"flavor": {**LLAMA, **flavor}, "turns": list(turns)}


def _inputs(request: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [item for item in request["body"]["input"] if item.get("type") == kind]


async def test_a_the_entry_role_sends_one_system_message_a_strict_template_accepts(tmp_path: Path) -> None:
    script = _script(turn("lead", finish("fine")), systemFirst=True)
    async with serve_script(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, _ = await run_task(settings, tmp_path, effort="quick")
        requests = await sim.responses_requests()
    assert outcome.card.status == "success" and outcome.card.summary == "fine"
    assert [r["status"] for r in requests] == [200]
    systems = [i for i in requests[0]["body"]["input"] if i.get("role") == "system"]
    assert len(systems) == 1 and systems[0]["content"].endswith(effort_directive("quick"))


async def test_a_the_strict_template_refuses_a_late_system_message(tmp_path: Path) -> None:
    """The flavor's own check, so the test above proves something."""
    import httpx

    async with serve_script(_script(systemFirst=True)) as sim, httpx.AsyncClient() as client:
        body = {
            "model": "m",
            "stream": True,
            "input": [
                {"type": "message", "role": "system", "content": "a"},
                {"type": "message", "role": "system", "content": "b"},
            ],
        }
        response = await client.post(f"{sim.base_url}/responses", json=body)
    assert response.status_code == 500
    assert "System message must be at the beginning" in response.json()["error"]["message"]


async def test_b_parallel_calls_without_output_index_are_all_executed(tmp_path: Path) -> None:
    script = _script(
        turn("leaf", call("run_shell", command="echo first"), call("run_shell", command="echo second")),
        turn("leaf", finish("both ran"), last="second"),
    )
    async with serve_script(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles={"leaf": ["run_shell", "finish"]})
        outcome, events = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.summary == "both ran"
    shell = [p for p in of_type(events, "tool_result") if p["tool"] == "run_shell"]
    assert len(shell) == 2 and all(p["kind"] == "success" for p in shell)
    calls = _inputs(requests[1], "function_call")
    assert [json.loads(c["arguments"])["command"] for c in calls] == ["echo first", "echo second"]
    outputs = _inputs(requests[1], "function_call_output")
    assert [o["call_id"] for o in outputs] == [c["call_id"] for c in calls] == ["call_1", "call_2"]
    assert "first" in outputs[0]["output"] and "second" in outputs[1]["output"]


async def test_c_a_call_cut_mid_arguments_is_not_replayed_and_the_role_recovers(tmp_path: Path) -> None:
    script = _script(
        turn(
            "leaf",
            call("run_shell", command="echo kept"),
            {"name": "run_shell", "rawArguments": '{"command": "echo cut of'},
            finishReason="length",
        ),
        turn("leaf", finish("recovered"), last="completion limit"),
    )
    async with serve_script(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles={"leaf": ["run_shell", "finish"]}, **SMALL_BUDGET)
        outcome, events = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    # The sim answers HTTP 500 to a history holding invalid JSON arguments, as llama-server does.
    assert [r["status"] for r in requests] == [200, 200]
    assert outcome.card.summary == "recovered"
    kinds = [p["kind"] for p in of_type(events, "tool_result")]
    assert kinds[:2] == ["success", "invalid_tool_call"]
    calls = _inputs(requests[1], "function_call")
    assert json.loads(calls[0]["arguments"]) == {"command": "echo kept"} and calls[1]["arguments"] == "{}"
    explained = json.loads(_inputs(requests[1], "function_call_output")[1]["output"])["message"]
    assert "cut off at the completion limit (64 tokens)" in explained and "{}" in explained
    # the log keeps what was received
    received = of_type(events, "llm_call")[0]["received"]["toolCalls"][1]["function"]["arguments"]
    assert received == '{"command": "echo cut of'
    assert of_type(events, "llm_call")[0]["finishReason"] == "length"


async def test_d_cut_off_text_is_not_a_success_card(tmp_path: Path) -> None:
    script = _script(
        turn("leaf", content="Here is my long answer that goes on and on", finishReason="length"),
        turn("leaf", finish("short and done"), last="response cut off"),
    )
    async with serve_script(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles={"leaf": ["finish"]}, **SMALL_BUDGET)
        outcome, events = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.summary == "short and done"
    assert "implicit_finish" not in types(events)
    notice = requests[1]["body"]["input"][-1]
    assert notice["role"] == "user" and "completion limit (64 tokens)" in notice["content"]
    assert requests[1]["body"]["input"][-2]["content"] == "Here is my long answer that goes on and on"


async def test_d_prose_after_a_cut_off_is_incomplete_not_success(tmp_path: Path) -> None:
    """Issue 25: against llama-server a cut-off turn followed by prose with no call ended the role ``success``."""
    script = _script(
        turn("leaf", content="Here is my long answer that goes on and on", finishReason="length"),
        turn("leaf", content="Short answer: it is done.", last="response cut off"),
    )
    async with serve_script(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles={"leaf": ["finish"]}, **SMALL_BUDGET)
        outcome, events = await run_task(settings, tmp_path)
    card = outcome.card
    assert card.status == "error" and card.error is not None and card.error.kind == "incomplete"
    assert "cut off" in card.summary and card.error.details == {"lastResponse": "Short answer: it is done."}
    assert "cut off" in of_type(events, "implicit_finish")[0]["message"]
    assert outcome.meta.status == "error"


async def test_d_an_implicit_finish_repeating_a_platform_notice_is_incomplete(tmp_path: Path) -> None:
    """Issue 25: SmolLM2 once answered the cut-off notice by repeating it, and that was the success summary."""
    echo = CUT_OFF_NOTICE.format(limit=64)
    script = _script(turn("leaf", content=f"{echo}"))
    async with serve_script(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles={"leaf": ["finish"]}, **SMALL_BUDGET)
        outcome, events = await run_task(settings, tmp_path)
    card = outcome.card
    assert card.status == "error" and card.error is not None and card.error.kind == "incomplete"
    assert "platform notice" in card.summary and card.summary != echo
    assert "implicit_finish" in types(events)


async def test_d_an_answer_after_a_normal_turn_is_still_an_implicit_success(tmp_path: Path) -> None:
    script = _script(
        turn("leaf", call("run_shell", command="echo hi")),
        turn("leaf", content="It printed hi.", last="hi"),
    )
    async with serve_script(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles={"leaf": ["run_shell", "finish"]}, **SMALL_BUDGET)
        outcome, _ = await run_task(settings, tmp_path)
    assert outcome.card.status == "success" and outcome.card.summary == "It printed hi."


async def test_d_a_completion_cut_before_any_output_fails_at_once(tmp_path: Path) -> None:
    script = _script({"reusable": True, "reasoning": "thinking about the call", "finishReason": "length"})
    async with serve_script(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, **SMALL_BUDGET)
        outcome, events = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.error is not None and outcome.card.error.kind == "llm_unavailable"
    assert "maxTokens" in outcome.card.summary
    assert len(requests) == 1 and "llm_retry" not in types(events)


async def test_d_repeated_cut_offs_end_the_role(tmp_path: Path) -> None:
    script = _script({"reusable": True, "content": "rambling", "finishReason": "length"})
    async with serve_script(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, **SMALL_BUDGET)
        outcome, _ = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.error is not None and outcome.card.error.kind == "llm_unavailable"
    assert "3 times in a row" in outcome.card.summary and "maxTokens" in outcome.card.summary
    assert len(requests) == 3


async def test_e_a_model_still_loading_is_waited_out_with_a_logged_notice(tmp_path: Path) -> None:
    # the model loads for a while from the server's start: long enough, on this machine now, that the run's
    # first request comes before it is loaded (a fixed 600 ms was outrun on a machine at ×2.9)
    script = _script(turn("lead", finish("loaded")), loadingMs=round(budget(1.5) * 1000))
    timeouts = LlmTimeouts(headers_seconds=5, idle_seconds=5, attempts=2, backoff_seconds=0.1, load_wait_seconds=30)
    async with serve_script(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, events = await run_task(settings, tmp_path, timeouts=timeouts)
        requests = await sim.responses_requests()
    assert outcome.card.summary == "loaded"
    retries = of_type(events, "llm_retry")
    assert retries and all(r["cause"] == "loading" and "Loading model" in r["message"] for r in retries)
    # waiting for the load used up no attempt: more 503s than the two attempts allowed
    assert len(requests) == len(retries) + 1 and all(r["attempt"] == 0 for r in retries)


async def test_g_every_retried_attempt_is_logged(tmp_path: Path) -> None:
    script = _script(
        {"fail": {"status": 500}},
        {"fail": {"empty": True}},
        {"fail": {"stallBeforeHeadersMs": 3000}},
        turn("lead", finish("fourth time")),
    )
    timeouts = LlmTimeouts(headers_seconds=0.3, idle_seconds=5, attempts=4, backoff_seconds=0.01)
    async with serve_script(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, events = await run_task(settings, tmp_path, timeouts=timeouts)
    assert outcome.card.summary == "fourth time"
    retries = of_type(events, "llm_retry")
    assert [r["cause"] for r in retries] == ["http", "empty", "stall"]
    assert [r["attempt"] for r in retries] == [1, 2, 3] and all(r["attempts"] == 4 for r in retries)
    assert all(r["role"] == "lead" and r["roleId"] == "lead-0-1" and r["delaySeconds"] > 0 for r in retries)
    order = types(events)
    assert order.index("llm_call_start") < order.index("llm_retry") < order.index("llm_call")


async def test_i_a_mid_stream_error_frame_ends_the_attempt_with_its_message(tmp_path: Path) -> None:
    script = _script({"reusable": True, "content": "partial output here", "chunkChars": 4, "finishReason": "error"})
    async with serve_script(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, events = await run_task(settings, tmp_path)
    assert outcome.card.error is not None and outcome.card.error.kind == "llm_unavailable"
    assert "the simulated model failed mid-stream" in outcome.card.summary
    assert "terminal response event" not in outcome.card.summary
    retries = of_type(events, "llm_retry")
    assert len(retries) == FAST.attempts - 1 and all(r["cause"] == "stream" for r in retries)


async def test_j_a_template_that_drops_tools_refuses_the_run(tmp_path: Path) -> None:
    script = _script(turn("lead", finish("would have 'succeeded'")), supportsTools=False)
    async with serve_script(script) as sim:
        settings = await probe_model(make_settings(tmp_path, sim.base_url))
        outcome, events = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.error is not None and outcome.card.error.kind == "llm_unavailable"
    assert "cannot render tools" in outcome.card.summary and "--jinja" in outcome.card.summary
    assert requests == []  # nothing was sent to a server that would drop the tools
    [logged] = of_type(events, "llm_unavailable")
    assert "chat_template_caps.supports_tools" in logged["message"]


def test_h_http_error_text_keeps_its_tail() -> None:
    body = ("x" * 2000 + " the cause: System message must be at the beginning.").encode()
    text = error_excerpt(body)
    assert text.endswith("the cause: System message must be at the beginning.")
    assert text.startswith("x" * ERROR_HEAD) and " … [" in text and len(text) < ERROR_HEAD + ERROR_TAIL + 40
    assert error_excerpt(b"short") == "short"


async def test_h_a_long_error_reaches_the_card_with_its_cause(tmp_path: Path) -> None:
    message = "Jinja Exception: " + "in template line 3, " * 60 + "System message must be at the beginning."
    script = _script({"reusable": True, "fail": {"status": 500, "message": message}})
    async with serve_script(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, events = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.error is not None and outcome.card.error.kind == "llm_unavailable"
    assert "HTTP 500" in outcome.card.summary and "Jinja Exception" in outcome.card.summary
    # issue 25: a template exception is deterministic: one request, no retries with backoff
    assert len(requests) == 1 and "llm_retry" not in types(events)
    assert "not retried" in outcome.card.summary
    assert of_type(events, "llm_unavailable")[0]["attempts"] == 1
    assert outcome.card.summary.endswith('System message must be at the beginning.","type":"server_error"}}')
