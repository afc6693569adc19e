"""Every row of the seed's error table that the engine owns, driven through the real sim."""

from __future__ import annotations

import json
from pathlib import Path

import trio
from tests.engine.harness import FAST, call, finish, of_type, run_task, turn, types
from tests.helpers import make_settings
from tests.slowness import budget

from orchestrator.llm import LlmTimeouts


def _tool_results(events: list[dict]) -> list[dict]:
    return of_type(events, "tool_result")


async def test_http_errors_are_retried_then_surface_as_llm_unavailable(tmp_path: Path, sim_for) -> None:
    script = {"turns": [{"reusable": True, "fail": {"status": 503}}]}
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, events = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.error is not None and outcome.card.error.kind == "llm_unavailable"
    assert len(requests) == FAST.attempts
    assert types(events)[-2:] == ["llm_unavailable", "role_finished"]
    assert "llm_call" not in types(events) and types(events).count("llm_call_start") == 1
    assert of_type(events, "llm_unavailable")[0]["attempts"] == FAST.attempts


async def test_one_http_error_then_success_recovers(tmp_path: Path, sim_for) -> None:
    script = {"turns": [{"fail": {"status": 500}}, turn(None, finish("fine"))]}
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, _ = await run_task(settings, tmp_path)
    assert outcome.card.summary == "fine"


async def test_failed_and_empty_completions_are_retried(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            {"finishReason": "error", "content": "x"},
            {"fail": {"empty": True}},
            turn(None, finish("third time")),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, _ = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.summary == "third time" and len(requests) == 3


async def test_length_with_no_content_fails_at_once(tmp_path: Path, sim_for) -> None:
    script = {"turns": [{"reusable": True, "finishReason": "length"}]}
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, _ = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.error is not None and outcome.card.error.kind == "llm_unavailable"
    assert "maxTokens" in outcome.card.summary
    assert len(requests) == 1


async def test_a_stall_before_headers_aborts_the_attempt_and_retries(tmp_path: Path, sim_for) -> None:
    script = {"turns": [{"fail": {"stallBeforeHeadersMs": 5000}}, turn(None, finish("after stall"))]}
    timeouts = LlmTimeouts(headers_seconds=0.3, idle_seconds=5, attempts=3, backoff_seconds=0.01)
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, _ = await run_task(settings, tmp_path, timeouts=timeouts)
    assert outcome.card.summary == "after stall"


async def test_a_mid_stream_stall_aborts_but_slow_steady_output_does_not(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            {"content": "aaaa", "toolCalls": [finish()], "fail": {"stallMidStreamMs": 5000}},
            # 12 chunks 100 ms apart: 1.2 s in all, but never idle for the 0.4 s bound.
            {"content": "slow but alive", "toolCalls": [finish("slow")], "chunkChars": 4, "chunkDelayMs": 100},
        ]
    }
    timeouts = LlmTimeouts(headers_seconds=5, idle_seconds=0.4, attempts=2, backoff_seconds=0.01)
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, _ = await run_task(settings, tmp_path, timeouts=timeouts)
        requests = await sim.responses_requests()
    assert outcome.card.summary == "slow" and len(requests) == 2


async def test_malformed_unknown_and_invalid_calls_are_not_executed(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn(
                "lead",
                {"name": "context_info", "rawArguments": "{bad"},
                call("run_shell", command="touch should-not-exist"),
                call("finish", status="bogus", summary="x"),
                call("finish", status="error", summary="x", error={"kind": "made_up"}),
            ),
            turn("lead", finish("recovered")),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, events = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.summary == "recovered"
    kinds = [r["kind"] for r in _tool_results(events)]
    assert kinds[:4] == ["invalid_tool_call", "unknown_tool", "invalid_arguments", "invalid_arguments"]
    assert not (tmp_path / "should-not-exist").exists()
    assert "invalid_tool_call" in types(events) and "unknown_tool" in types(events)
    outputs = [i for i in requests[1]["body"]["input"] if i["type"] == "function_call_output"]
    assert len(outputs) == 4
    assert "made_up" in json.loads(outputs[3]["output"])["message"]


async def test_tool_timeout_kills_the_whole_process_group(tmp_path: Path, sim_for) -> None:
    pid_file = tmp_path / "sleeper.pid"
    script = {
        "turns": [
            turn("leaf", call("run_shell", command=f"sleep 30 & echo $! > {pid_file}; wait")),
            turn("leaf", finish("gave up waiting")),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(
            tmp_path, sim.base_url, roles={"leaf": ["run_shell", "finish"]}, defaultToolTimeoutSeconds=1
        )
        outcome, events = await run_task(settings, tmp_path)
    result = _tool_results(events)[0]
    assert result["kind"] == "timeout" and "1s" in result["result"]["message"]
    assert outcome.card.summary == "gave up waiting"
    sleeper = int(pid_file.read_text())
    with trio.move_on_after(budget(2)):  # SIGKILL is delivered at once; allow the scheduler to retire it
        while _running(sleeper):  # noqa: ASYNC110 - polling /proc; no event exists to wait on
            await trio.sleep(0.01)
    assert not _running(sleeper)  # the grandchild died with its group


def _running(pid: int) -> bool:
    """True while ``pid`` is a live process (a zombie awaiting its reaper counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


async def test_a_lower_timeout_argument_applies_but_cannot_raise_the_default(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("leaf", call("run_shell", command="sleep 2", timeoutSeconds=0.2)),
            turn("leaf", finish("ok")),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles={"leaf": ["run_shell", "finish"]})
        _, events = await run_task(settings, tmp_path)
    assert _tool_results(events)[0]["kind"] == "timeout"


async def test_long_tool_output_is_truncated_for_the_model_but_logged_in_full(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("leaf", call("run_shell", command="head -c 5000 /dev/zero | tr '\\0' x")),
            turn("leaf", finish("read it")),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(
            tmp_path, sim.base_url, roles={"leaf": ["run_shell", "finish"]}, context_policy={"maxToolOutputChars": 300}
        )
        _, events = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    assert len(_tool_results(events)[0]["result"]["data"]["stdout"]) == 5000
    output = requests[1]["body"]["input"][-1]["output"]
    assert output.startswith('{"kind":"success"') and len(output) < 400
    assert output.rstrip().endswith("chars removed]")


async def test_depth_limit_refuses_the_grandchild(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="helper", task="go deeper")),
            turn("helper", call("agent", role="leaf", task="too deep")),
            turn("helper", finish("could not delegate"), last="maxAgentDepth"),
            turn("lead", finish("done")),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, maxAgentDepth=1)
        outcome, events = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.summary == "done"
    assert [s["role"] for s in of_type(events, "role_start")] == ["lead", "helper"]
    exceeded = of_type(events, "depth_exceeded")
    assert exceeded and exceeded[0]["child"] == "leaf" and exceeded[0]["depth"] == 2
    card = json.loads(requests[2]["body"]["input"][-1]["output"])
    assert card["status"] == "error" and card["error"]["kind"] == "tool_budget_exceeded"


async def test_unknown_child_role_is_refused_without_a_role_start(tmp_path: Path, sim_for) -> None:
    script = {"turns": [turn("lead", call("agent", role="ghost", task="boo")), turn("lead", finish("ok"))]}
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        _, events = await run_task(settings, tmp_path)
    assert of_type(events, "role_not_found") == [{"roleName": "ghost", "parent": "lead"}]
    assert [s["role"] for s in of_type(events, "role_start")] == ["lead"]
    assert _tool_results(events)[0]["kind"] == "invalid_arguments"


async def test_a_declared_tool_without_an_implementation_is_unavailable(tmp_path: Path, sim_for) -> None:
    manifest = {"name": "teleport", "description": "not real", "parameters": {"type": "object", "properties": {}}}
    script = {"turns": [turn("lead", call("teleport")), turn("lead", finish("ok"))]}
    async with sim_for(script) as sim:
        from tests.helpers import write_deployment, write_guild

        from orchestrator.config import load_settings

        guild = write_guild(tmp_path / "g", {"lead": ["teleport", "finish"]}, extra_manifests={"teleport": manifest})
        settings = load_settings(guild, write_deployment(tmp_path / "d.json", sim.base_url), {})
        _, events = await run_task(settings, tmp_path)
    assert _tool_results(events)[0]["kind"] == "unavailable"
