"""Runs of the real engine against the real llama-server + SmolLM2-135M (tests/realmodel/llama_server.py).

Every request runs at temperature 0 with the server's seed fixed (``SEED``), and the assertions are
about the engine's behaviour, not about what the tiny model says: where a test needs a tool call the
relay in front of llama-server offers only that tool, sets ``tool_choice: "required"`` and prefills the
assistant turn with the template's call opener (``force_call``), so the output is grammar-constrained
to a call; where a run must end, later requests offer only a short ``finish`` (``finish_after``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
from tests.engine.harness import of_type, run_task
from tests.helpers import REPO, make_settings
from tests.realmodel.llama_cache import real_model
from tests.realmodel.llama_server import (
    NO_THINKING,
    QWEN25,
    QWEN35,
    SHORT_FINISH,
    TEMPERATURE,
    force_call,
    llama_server,
    prose_sentence,
    rewriting_relay,
)
from tests.slowness import budget

from orchestrator.config import Settings, load_settings, probe_model
from orchestrator.llm import LlmTimeouts

#: Real generation on two shared cores: generous stall bounds, few quick retries.
#: Hang guards for a CPU model, scaled by the run's slowness (tests/slowness.py).
TIMEOUTS = LlmTimeouts(headers_seconds=budget(60.0), idle_seconds=budget(30.0), attempts=3, backoff_seconds=0.2)
RUN_SECONDS = budget(120)


#: ``read_file`` narrowed to a path of at least 200 characters: a call that cannot fit in ``CUT_AT`` tokens
LONG_PATH: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string", "minLength": 200}},
    "required": ["path"],
    "additionalProperties": False,
}
#: the cut-off test's deployment maxTokens: a short finish call fits (under 40 tokens), the long path not
CUT_AT = 48

#: ``list_directory`` narrowed to the two folders the parallel-call test made
ALPHA_OR_BETA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string", "enum": ["alpha", "beta"]}},
    "required": ["path"],
    "additionalProperties": False,
}


def first_then_finish(offer: dict[str, dict[str, Any] | None], **first_fields: Any) -> Callable[..., Any]:
    """Request 0 must call one of ``offer`` (plus ``first_fields``); every later one a short ``finish``."""

    def rewrite(index: int, body: dict[str, Any]) -> dict[str, Any]:
        if index == 0:
            return {**force_call(body, offer), **first_fields}
        return force_call(body, {"finish": SHORT_FINISH})

    return rewrite


def tiny_settings(tmp_path: Path, api_base: str, roles: dict[str, list[str]], **model: Any) -> Settings:
    generation = {"temperature": TEMPERATURE, "maxTokens": model.pop("max_tokens", 256)}
    spec = {"name": str(real_model().model), "contextWindow": 8192, "generation": generation, **model}
    return make_settings(tmp_path, api_base, roles, model=spec)


def card_kind(card: Any) -> str | None:
    return card.error.kind if card.error is not None else None


@pytest.mark.parametrize("template", [QWEN25, QWEN35])
async def test_a_run_with_the_shipped_guild_reaches_a_card(tmp_path: Path, template: str) -> None:
    """The shipped Guild and deployment, the model resolved by the real probe: the entry role's first
    request (its prompt, the effort directive, its tools) is accepted by the template — Qwen3.5's refuses
    a second system message — and a card comes back that is not ``llm_unavailable``."""
    async with (
        llama_server(tmp_path, template=template, extra_args=NO_THINKING if template == QWEN35 else ()) as server,
        rewriting_relay(server.root, prose_sentence) as relay,
    ):
        env = {
            "ORCHESTRATOR_API_BASE": relay.base_url,
            "ORCHESTRATOR_TEMPERATURE": str(TEMPERATURE),
            "ORCHESTRATOR_MAX_TOKENS": "64",
            "ORCHESTRATOR_MAX_AGENT_DEPTH": "1",
        }
        settings = load_settings(REPO / "guild", REPO / "deployment" / "deployment.json", env, secrets_dir=tmp_path)
        settings = await probe_model(settings)
        assert settings.deployment.model.name == str(real_model().model)  # the server's id: the -m path
        assert settings.deployment.model.context_window == 8192
        workspace = tmp_path / "ws"
        workspace.mkdir()
        with trio.fail_after(RUN_SECONDS):
            outcome, events = await run_task(settings, workspace, "Say hello in one short sentence.", timeouts=TIMEOUTS)
    calls = of_type(events, "llm_call")
    assert calls, "no model answer was logged"
    assert relay.responses()[0].status == 200  # the template took the entry role's opening messages
    assert card_kind(outcome.card) != "llm_unavailable", outcome.card
    finished = of_type(events, "role_finished")
    assert finished and all((f.get("error") or {}).get("kind") != "llm_unavailable" for f in finished)


async def test_two_parallel_calls_in_one_turn_are_both_executed_and_answered(tmp_path: Path) -> None:
    """Qwen2.5's template lets the model emit several calls in one turn (llama-server sends no
    ``output_index``); both are executed, and the next request carries an output for each."""
    workspace = tmp_path / "ws"
    (workspace / "alpha").mkdir(parents=True)
    (workspace / "beta").mkdir()
    async with llama_server(tmp_path, template=QWEN25) as server:
        rewrite = first_then_finish({"list_directory": ALPHA_OR_BETA}, parallel_tool_calls=True)
        async with rewriting_relay(server.root, rewrite) as relay:
            settings = tiny_settings(tmp_path, relay.base_url, {"lead": ["list_directory", "finish"]})
            task = "Call list_directory on alpha, and call list_directory on beta."
            with trio.fail_after(RUN_SECONDS):
                outcome, events = await run_task(settings, workspace, task, timeouts=TIMEOUTS)
    first = of_type(events, "llm_call")[0]
    calls = first["received"].get("toolCalls", [])
    assert len(calls) >= 2, f"the model made {len(calls)} call(s): {calls}"
    ids = [c["id"] for c in calls]
    assert len(set(ids)) == len(ids), ids
    executed = of_type(events, "tool_call")
    assert [e["tool"] for e in executed[: len(calls)]] == ["list_directory"] * len(calls)
    assert len(of_type(events, "tool_result")) >= len(calls)
    second = relay.responses()[1].body or {}
    answered = [i["call_id"] for i in second["input"] if i.get("type") == "function_call_output"]
    assert sorted(answered) == sorted(ids)
    assert card_kind(outcome.card) != "llm_unavailable", outcome.card


async def test_a_call_cut_by_max_tokens_is_recovered_from(tmp_path: Path) -> None:
    """The first answer is a call whose arguments cannot fit in the deployment's ``maxTokens``: it is cut
    mid-arguments and llama-server still says ``completed``. The engine sees a ``length`` finish, answers
    the call with ``invalid_tool_call`` instead of running it, never replays the broken arguments
    (llama-server answers HTTP 500 to a history holding them), and the role goes on to its card."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with (
        llama_server(tmp_path, template=QWEN25) as server,
        rewriting_relay(server.root, first_then_finish({"read_file": LONG_PATH})) as relay,
    ):
        settings = tiny_settings(tmp_path, relay.base_url, {"lead": ["read_file", "finish"]}, max_tokens=CUT_AT)
        with trio.fail_after(RUN_SECONDS):
            outcome, events = await run_task(settings, workspace, "Read the file notes.txt.", timeouts=TIMEOUTS)
    answers = relay.responses()
    assert len(answers) >= 2, answers
    first = of_type(events, "llm_call")[0]
    assert first.get("finishReason") == "length", first
    assert first["usage"]["completionTokens"] == CUT_AT
    results = of_type(events, "tool_result")
    assert results and results[0]["tool"] == "read_file" and results[0]["kind"] == "invalid_tool_call", results
    assert [x.status for x in answers] == [200] * len(answers)  # the history never poisoned a request
    for exchange in answers[1:]:
        for item in (exchange.body or {})["input"]:
            if item.get("type") == "function_call":
                assert isinstance(json.loads(item["arguments"]), dict)  # every replayed call holds valid JSON
    assert card_kind(outcome.card) != "llm_unavailable", outcome.card


async def test_a_context_overflow_is_recognised(tmp_path: Path) -> None:
    """A task longer than the server's context (``-c 512``) while the deployment believes in 8192:
    llama-server answers 400 ``exceed_context_size_error``; the engine logs ``context_budget_exceeded``
    and, the task being protected, ends the role with that kind."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    task = "Summarise this: " + " ".join(f"item {i} is a plain word list entry." for i in range(300))
    async with (
        llama_server(tmp_path, template=QWEN25, ctx=512) as server,
        rewriting_relay(server.root, lambda i, b: {}) as relay,
    ):
        settings = tiny_settings(tmp_path, relay.base_url, {"lead": ["finish"]}, max_tokens=64)
        with trio.fail_after(RUN_SECONDS):
            outcome, events = await run_task(settings, workspace, task, timeouts=TIMEOUTS)
    assert relay.responses() and relay.responses()[0].status == 400
    assert of_type(events, "context_budget_exceeded"), [e["type"] for e in events]
    assert card_kind(outcome.card) == "context_budget_exceeded", outcome.card


#: ``read_file`` narrowed to the one big file of the context-handler test
BIG_FILE: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string", "enum": ["big.txt"]}},
    "required": ["path"],
    "additionalProperties": False,
}


async def test_a_context_handler_that_edits_nothing_is_failed_and_the_backstop_runs(tmp_path: Path) -> None:
    """Issue 25, against llama-server with ``-c 2048``: the lead reads a file too big for the window, the
    request is rejected (400), the context handler is forced to finish ``success`` without an edit. The
    interlude is ``failed`` (not ``compacted``), no "context compacted" notice is sent, the naive backstop
    shortens the history, and the lead's next request fits — where the prompt used to grow with each
    notice (2,102 → 2,284 → 2,466 tokens) until the role died ``context_budget_exceeded``."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "big.txt").write_text(" ".join(f"item {i} is a plain word list entry." for i in range(300)))

    def rewrite(index: int, body: dict[str, Any]) -> dict[str, Any]:
        if index == 0:
            return force_call(body, {"read_file": BIG_FILE})
        return force_call(body, {"finish": SHORT_FINISH})  # the lead and the handler may only finish

    roles = {"lead": ["read_file", "finish"], "context_manager": ["context_info", "edit_context", "finish"]}
    async with (
        llama_server(tmp_path, template=QWEN25, ctx=2048) as server,
        rewriting_relay(server.root, rewrite) as relay,
    ):
        generation = {"temperature": TEMPERATURE, "maxTokens": 64}
        settings = make_settings(
            tmp_path,
            relay.base_url,
            roles,
            model={"name": str(real_model().model), "contextWindow": 2048, "generation": generation},
            contextHandlerRole="context_manager",
            context_policy={"maxToolOutputChars": 20_000},
        )
        with trio.fail_after(RUN_SECONDS):
            outcome, events = await run_task(settings, workspace, "Read big.txt, then finish.", timeouts=TIMEOUTS)
    statuses = [x.status for x in relay.responses()]
    assert statuses[:2] == [200, 400], statuses  # the read, then the rejected request
    assert statuses.count(400) == 1, statuses  # the prompt did not grow into further rejections
    resolved = of_type(events, "interrupt_resolved")
    assert resolved and resolved[0]["action"] == "failed" and resolved[0]["handlerStatus"] == "success", resolved
    assert len(of_type(events, "context_compacted")) == 1
    for exchange in relay.responses():
        assert "context compacted" not in json.dumps(exchange.body or {})
    assert card_kind(outcome.card) != "context_budget_exceeded", outcome.card


async def test_a_template_exception_is_not_retried(tmp_path: Path) -> None:
    """Issue 25: llama-server's 500 with a Jinja exception (Qwen3.5's template refuses a system message after
    the first; the relay adds one) comes back the same every time, so it is sent once, not four times with
    backoff, and the role ends ``llm_unavailable`` saying it was not retried."""
    workspace = tmp_path / "ws"
    workspace.mkdir()

    def late_system(index: int, body: dict[str, Any]) -> dict[str, Any]:
        return {"input": [*body.get("input", []), {"type": "message", "role": "system", "content": "Be brief."}]}

    async with (
        llama_server(tmp_path, template=QWEN35, extra_args=NO_THINKING) as server,
        rewriting_relay(server.root, late_system) as relay,
    ):
        settings = tiny_settings(tmp_path, relay.base_url, {"lead": ["finish"]}, max_tokens=64)
        with trio.fail_after(RUN_SECONDS):
            outcome, events = await run_task(settings, workspace, "Say hello.", timeouts=TIMEOUTS)
    assert [x.status for x in relay.responses()] == [500]
    assert not of_type(events, "llm_retry")
    assert card_kind(outcome.card) == "llm_unavailable", outcome.card
    assert "not retried" in outcome.card.summary and "System message must be at the beginning" in outcome.card.summary


async def test_prose_after_a_cut_off_is_incomplete(tmp_path: Path) -> None:
    """Issue 25: a turn cut at ``maxTokens`` followed by prose with no call ended the role ``success``. The
    first answer is prose that cannot end in time (``ignore_eos``), the second a short sentence: the role
    ends ``error`` with kind ``incomplete``."""
    workspace = tmp_path / "ws"
    workspace.mkdir()

    def ramble_then_sentence(index: int, body: dict[str, Any]) -> dict[str, Any]:
        if index == 0:
            return {"tool_choice": "none", "ignore_eos": True}
        return prose_sentence(index, body)

    async with (
        llama_server(tmp_path, template=QWEN25) as server,
        rewriting_relay(server.root, ramble_then_sentence) as relay,
    ):
        settings = tiny_settings(tmp_path, relay.base_url, {"lead": ["finish"]}, max_tokens=CUT_AT)
        with trio.fail_after(RUN_SECONDS):
            outcome, events = await run_task(settings, workspace, "Describe the sea.", timeouts=TIMEOUTS)
    calls = of_type(events, "llm_call")
    assert [c.get("finishReason") for c in calls][:2] == ["length", "stop"], calls
    assert [x.status for x in relay.responses()] == [200, 200]
    assert card_kind(outcome.card) == "incomplete", outcome.card
    assert outcome.card.status == "error" and "cut off" in outcome.card.summary
