"""The role loop end to end against the sim: delegation, logging, effort, deltas, run folder."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
from tests.engine.harness import call, finish, of_type, run_task, turn, types
from tests.helpers import make_settings

from orchestrator.engine.effort import effort_directive
from orchestrator.engine.run import StreamDelta
from orchestrator.engine.runfolder import RUN_ID_PATTERN, read_meta
from orchestrator.runlog import fold_request


async def test_minimal_run_logs_the_seed_order_and_writes_a_terminal_meta(tmp_path: Path, sim_for) -> None:
    async with sim_for({"turns": [turn("lead", finish("all good"))]}) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, events = await run_task(settings, tmp_path)
    assert outcome.card.status == "success" and outcome.card.summary == "all good"
    assert RUN_ID_PATTERN.match(outcome.run_id)
    assert types(events) == [
        "effort_set",
        "role_start",
        "llm_call_start",
        "llm_call",
        "tool_call",
        "tool_result",
        "role_finished",
    ]
    meta = read_meta(outcome.run_dir)
    assert meta is not None and meta.status == "success" and meta.end_time and meta.result == outcome.card
    assert meta.effort == "standard" and meta.log_level == "full"
    assert not (outcome.run_dir / "state.json").exists()


async def test_delegation_two_levels_deep_pairs_every_start_with_one_finish(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="helper", task="help out")),
            turn("helper", call("agent", role="leaf", task="do the leaf work")),
            turn("leaf", finish("leaf did it", artifacts=["a.txt"])),
            turn("helper", finish("helper relayed: leaf did it"), last="leaf did it"),
            turn("lead", finish("lead done"), last="helper relayed"),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, events = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.summary == "lead done"
    starts = of_type(events, "role_start")
    assert [(s["roleId"], s.get("parentRoleId")) for s in starts] == [
        ("lead-0-1", None),
        ("helper-1-2", "lead-0-1"),
        ("leaf-2-3", "helper-1-2"),
    ]
    finished = of_type(events, "role_finished")
    assert sorted(f["roleId"] for f in finished) == ["helper-1-2", "lead-0-1", "leaf-2-3"]
    assert [f["roleId"] for f in finished] == ["leaf-2-3", "helper-1-2", "lead-0-1"]
    assert of_type(events, "agent_call") == [
        {"parent": "lead", "child": "helper", "depth": 1},
        {"parent": "helper", "child": "leaf", "depth": 2},
    ]
    # The child's card is the agent call's output in the parent's next request, paired with its call.
    helper_second = requests[3]["body"]["input"]
    output = helper_second[-1]
    assert output["type"] == "function_call_output"
    assert json.loads(output["output"])["summary"] == "leaf did it"
    call_ids = [i["call_id"] for i in helper_second if i["type"] == "function_call"]
    assert output["call_id"] in call_ids
    # Sequential: requests strictly alternate by depth-first order, never overlapping.
    assert len(requests) == 5 and all(r["status"] == 200 for r in requests)


async def test_effort_directive_reaches_only_the_entry_role(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="helper", task="sub")),
            turn("helper", finish("ok")),
            turn("lead", finish("done")),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        _, events = await run_task(settings, tmp_path, effort="thorough")
        requests = await sim.responses_requests()
    lead_input = requests[0]["body"]["input"]
    # one system message (fix A): the prompt, then the directive
    assert lead_input[0]["role"] == "system" and lead_input[0]["content"].endswith(effort_directive("thorough"))
    assert lead_input[0]["content"].startswith("You are the lead.")
    assert lead_input[1] == {"type": "message", "role": "user", "content": "do the thing"}
    assert sum(1 for item in lead_input if item.get("role") == "system") == 1
    helper_texts = json.dumps(requests[1]["body"]["input"])
    assert "Quality level" not in helper_texts
    assert of_type(events, "effort_set") == [{"effort": "thorough"}]
    assert types(events)[0] == "effort_set"


async def test_reasoning_is_replayed_before_its_turn_items(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("context_info"), reasoning="think first", content="checking"),
            turn("lead", finish("done")),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    items = requests[1]["body"]["input"]
    kinds = [i["type"] for i in items]
    assert kinds[2:] == ["reasoning", "message", "function_call", "function_call_output"]
    assert items[2]["content"] == [{"type": "reasoning_text", "text": "think first"}]


async def test_llm_call_deltas_fold_back_to_the_full_request(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("context_info")),
            turn("lead", call("context_info")),
            turn("lead", finish("done")),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        _, events = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    calls = [i for i, e in enumerate(events) if e["type"] == "llm_call"]
    payloads = [events[i]["payload"] for i in calls]
    assert payloads[0]["sentFrom"] == 0 and len(payloads[0]["sent"]) == payloads[0]["messageCount"]
    assert payloads[1]["sentFrom"] > 0 and payloads[2]["sentFrom"] > payloads[1]["sentFrom"]
    for index, request in zip(calls, requests, strict=True):
        folded = fold_request(events, index)
        assert folded is not None
        assert len(folded) == events[index]["payload"]["messageCount"]
        sent_texts = [m.get("content", "") for m in folded]
        wire_texts = [
            i.get("content") or i.get("output") for i in request["body"]["input"] if i["type"] != "function_call"
        ]
        wire_texts = [t for t in wire_texts if t]
        assert [t for t in sent_texts if t] == wire_texts


async def test_standard_level_slims_payloads_but_keeps_every_event(tmp_path: Path, sim_for) -> None:
    script = {"turns": [turn("lead", call("context_info")), turn("lead", finish("done"))]}
    logs = {}
    for level in ("full", "standard"):
        async with sim_for(script) as sim:
            settings = make_settings(tmp_path / level, sim.base_url)
            (tmp_path / level / "ws").mkdir()
            _, logs[level] = await run_task(settings, tmp_path / level / "ws", log_level=level)
    assert types(logs["full"]) == types(logs["standard"])
    for payload in of_type(logs["standard"], "llm_call"):
        assert not {"sent", "received", "sentFrom"} & payload.keys()
        assert {"role", "roleId", "messageCount", "usage", "finishReason"} <= payload.keys()
    for payload in of_type(logs["standard"], "tool_result"):
        assert "result" not in payload and {"role", "tool", "kind"} <= payload.keys()
    assert all("result" in p for p in of_type(logs["full"], "tool_result"))


async def test_implicit_finish_when_the_model_calls_no_tool(tmp_path: Path, sim_for) -> None:
    async with sim_for({"turns": [{"content": "The answer is 4."}]}) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, events = await run_task(settings, tmp_path)
    assert outcome.card.status == "success" and outcome.card.summary == "The answer is 4."
    assert "implicit_finish" in types(events)


async def test_deltas_stream_with_a_reset_on_each_attempt(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            {"content": "partial text", "toolCalls": [finish()], "fail": {"stallMidStreamMs": 3000}, "chunkChars": 4},
            {"content": "second try", "toolCalls": [finish("done")], "chunkChars": 4},
        ]
    }
    deltas: list[StreamDelta] = []
    from orchestrator.llm import LlmTimeouts

    quick_idle = LlmTimeouts(headers_seconds=5, idle_seconds=0.5, attempts=3, backoff_seconds=0.01)
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, _ = await run_task(settings, tmp_path, deltas=deltas, timeouts=quick_idle)
    assert outcome.card.summary == "done"
    resets = [d for d in deltas if d.reset]
    assert len(resets) == 2 and all(d.role_id == "lead-0-1" and d.field == "content" for d in deltas)
    second_at = max(i for i, d in enumerate(deltas) if d.reset)
    assert "".join(d.text for d in deltas[:second_at]) == "partial text"  # flushed when the attempt broke off
    assert "".join(d.text for d in deltas[second_at:]) == "second try"


async def test_run_id_collision_refuses_to_share_a_folder(tmp_path: Path, sim_for) -> None:
    from datetime import UTC, datetime

    import pytest

    from orchestrator.engine.runfolder import RunIdCollision
    from orchestrator.engine.runner import RunRequest, execute_run

    moment = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    async with sim_for({"turns": [{"reusable": True, "toolCalls": [finish()]}]}) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        first = await execute_run(settings, tmp_path, RunRequest(task="a"), now=moment)
        assert first.run_id == "run-20260102-030405"
        with pytest.raises(RunIdCollision):
            await execute_run(settings, tmp_path, RunRequest(task="b"), now=moment)
    assert msgspec.json.decode((first.run_dir / "meta.json").read_bytes())["task"] == "a"
