"""The context budget in a real run (the engine against the sim): context pressure, the rejection
backstop, context_info / edit_context, maxCompactionAttempts. The pure arithmetic is in
``test_context.py`` and ``test_builtins.py``."""

from __future__ import annotations

import json
from pathlib import Path

from tests.engine.harness import call, finish, of_type, run_task, turn, types
from tests.helpers import make_settings

# Window 32768, maxTokens 4096 → effective budget 28672; the 0.8 threshold fires at 22938 tokens.
HIGH_USAGE = {"promptTokens": 25000, "completionTokens": 10}


async def test_child_pressure_notice_comes_once_after_the_turns_results(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="leaf", task="big job")),
            turn("leaf", call("context_info"), usage=HIGH_USAGE),
            turn("leaf", call("context_info"), last="context pressure", usage=HIGH_USAGE),
            turn(
                "leaf",
                finish("handing off", status="error", error={"kind": "context_handoff", "message": "brief"}),
            ),
            turn("lead", finish("re-delegation would follow"), last="context_handoff"),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, events = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.summary == "re-delegation would follow"
    pressure = of_type(events, "context_pressure")
    assert len(pressure) == 1 and pressure[0]["roleId"] == "leaf-1-2"
    assert pressure[0]["promptTokens"] == 25000 and pressure[0]["effectiveBudget"] == 28672
    second_leaf = requests[2]["body"]["input"]
    # ... function_call, function_call_output, then the notice: never between a call and its output.
    assert [i["type"] for i in second_leaf[-3:]] == ["function_call", "function_call_output", "message"]
    assert second_leaf[-1]["content"].startswith("[Platform notice — context pressure]")
    third_leaf = json.dumps(requests[3]["body"]["input"], ensure_ascii=False)
    assert third_leaf.count("[Platform notice — context pressure]") == 1
    finished = [f for f in of_type(events, "role_finished") if f["role"] == "leaf"]
    assert finished[0]["error"]["kind"] == "context_handoff"


async def test_rejection_compacts_in_place_and_the_role_continues(tmp_path: Path, sim_for) -> None:
    filler = "y" * 3000
    script = {
        "turns": [
            turn("leaf", call("run_shell", command=f"printf '{filler}'"), reasoning="r1"),
            turn("leaf", call("run_shell", command=f"printf '{filler}'"), reasoning="r2"),
            turn("leaf", call("run_shell", command="true"), reasoning="r3"),
            {"fail": {"contextExceeded": True, "promptTokens": 40000}},
            turn("leaf", finish("compacted and done"), last="context window exceeded"),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles={"leaf": ["run_shell", "finish"]})
        outcome, events = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.summary == "compacted and done"
    compacted = of_type(events, "context_compacted")
    assert len(compacted) == 1 and compacted[0]["droppedMessages"] > 0 and compacted[0]["contextWindow"] == 32768
    assert of_type(events, "context_budget_exceeded")[0]["promptTokens"] == 40000
    retry = requests[4]["body"]["input"]
    assert retry[0]["content"].startswith("You are the leaf.\n") and retry[1]["content"] == "do the thing"
    outputs = {i["call_id"] for i in retry if i["type"] == "function_call_output"}
    calls = {i["call_id"] for i in retry if i["type"] == "function_call"}
    assert outputs == calls  # no orphan on either side
    assert retry[-1]["content"].startswith("[Platform notice — context window exceeded]")
    # The compaction rewrote history: the next llm_call is a full snapshot.
    last_call = of_type(events, "llm_call")[-1]
    assert last_call["sentFrom"] == 0 and len(last_call["sent"]) == last_call["messageCount"]


async def test_three_consecutive_rejections_end_the_role(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="leaf", task="x")),
            {
                "expect": {"systemContains": "You are the leaf."},
                "reusable": True,
                "fail": {"contextExceeded": True, "promptTokens": 25000},
            },
            turn("lead", finish("parent recovers"), last="context_budget_exceeded"),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, events = await run_task(settings, tmp_path)
    assert outcome.card.summary == "parent recovers"
    rejections = of_type(events, "context_budget_exceeded")
    assert [r["rejections"] for r in rejections] == [1, 2, 3]
    leaf_done = next(f for f in of_type(events, "role_finished") if f["role"] == "leaf")
    assert leaf_done["error"]["kind"] == "context_budget_exceeded"
    assert "llm_call" not in [e["type"] for e in events if e["payload"].get("role") == "leaf"]


async def test_the_learned_ceiling_tightens_later_pressure_checks(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="leaf", task="x")),
            {
                "expect": {"systemContains": "You are the leaf."},
                "fail": {"contextExceeded": True, "promptTokens": 10000},
            },
            turn("leaf", finish("ok")),
            turn("lead", call("agent", role="helper", task="y")),
            turn("helper", call("context_info"), usage={"promptTokens": 8500}),
            turn("helper", finish("done")),
            turn("lead", finish("all done")),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        _, events = await run_task(settings, tmp_path)
    pressure = of_type(events, "context_pressure")
    assert len(pressure) == 1 and pressure[0]["role"] == "helper" and pressure[0]["effectiveBudget"] == 10000


async def test_an_unfittable_remainder_fails_immediately(tmp_path: Path, sim_for) -> None:
    script = {"turns": [{"fail": {"contextExceeded": True, "promptTokens": 900000}}]}
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        outcome, events = await run_task(settings, tmp_path, task="t" * 200)
    assert outcome.card.error is not None and outcome.card.error.kind == "context_budget_exceeded"
    assert "context_compacted" not in types(events)


async def test_edit_context_drops_a_half_open_range_and_forces_a_full_snapshot(tmp_path: Path, sim_for) -> None:
    drop = {"op": "drop", "range": [2, 4]}
    script = {
        "turns": [
            turn("lead", call("agent", role="leaf", task="edit yourself")),
            turn("leaf", call("context_info")),
            turn("leaf", call("edit_context", operations=[{"op": "drop", "range": [1, 3]}])),
            turn("leaf", call("edit_context", operations=[drop])),
            turn("leaf", finish("edited")),
            turn("lead", finish("ok")),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url)
        _, events = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    results = [r for r in of_type(events, "tool_result") if r["role"] == "leaf"]
    assert results[1]["kind"] == "invalid_arguments" and "protected" in results[1]["result"]["message"]
    assert results[2]["kind"] == "success"
    # Leaf before the edit: system, task, [2] call, [3] output, [4] refused-edit call, [5] its output.
    before = requests[3]["body"]["input"]
    after = requests[4]["body"]["input"]
    assert after[:2] == before[:2]
    assert after[2:4] == before[4:6]  # indices 2 and 3 (exactly) are gone
    assert len(after) == len(before) - 2 + 2  # plus the successful edit's call and output
    leaf_calls = [c for c in of_type(events, "llm_call") if c["role"] == "leaf"]
    assert leaf_calls[2]["sentFrom"] > 0 and leaf_calls[3]["sentFrom"] == 0


async def test_edits_that_never_shrink_end_the_role_with_compaction_failed(tmp_path: Path, sim_for) -> None:
    same = {"op": "replace", "index": 2, "content": "same size!"}
    script = {
        "turns": [
            turn("leaf", call("context_info")),
            {
                "expect": {"systemContains": "You are the leaf."},
                "reusable": True,
                "toolCalls": [call("edit_context", operations=[same])],
            },
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(
            tmp_path, sim.base_url, roles={"leaf": ["finish", "context_info", "edit_context"]}, maxCompactionAttempts=3
        )
        outcome, events = await run_task(settings, tmp_path)
    assert outcome.card.error is not None and outcome.card.error.kind == "compaction_failed"
    assert types(events).count("llm_call") == 4  # context_info, then three fruitless edits
