"""The whole-run call tree, waterfall and totals against an independent fold of real engine logs."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.engine.harness import FAST, call, finish, run_task, turn
from tests.helpers import make_settings

from orchestrator.engine.runfolder import read_meta
from orchestrator.engine.runner import RunRequest, RunServices, execute_run
from orchestrator.flow.calltree import TreeState, call_tree, fold_tree, totals, waterfall
from orchestrator.flow.contexttrack import context_tracks
from orchestrator.runlog import read_events
from orchestrator.service.runindex import RunIndex

ROLES = {
    "lead": ["agent", "ask_human", "finish"],
    "helper": ["agent", "run_shell", "finish"],
    "leaf": ["run_shell", "read_file", "finish"],
}


class Answers:
    async def ask(self, question_id: str, question: str, context: str | None) -> str:
        return "yes"


def _t(event: dict[str, Any]) -> float:
    return datetime.fromisoformat(event["timestamp"]).timestamp()


def _ms(a: float, b: float) -> int:
    return max(0, round((b - a) * 1000))


def independent(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A deliberately plain re-derivation: pair each interval's start with the next end of the same
    instance (the engine runs one turn and one tool at a time per instance)."""
    out: dict[str, dict[str, Any]] = {}
    first = _t(events[0])
    pending: dict[tuple[str, str], float] = {}
    asked: dict[str, tuple[str, float]] = {}
    for e in events:
        p, kind = e["payload"], e["type"]
        rid = p.get("roleId")
        if kind == "role_start":
            out[rid] = {
                "role": p["role"], "parent": p.get("parentRoleId"), "start": _t(e), "end": None, "status": None,
                "tokens": 0, "turns": 0, "tools": 0, "model": 0, "tool": 0, "human": 0, "bad": 0, "context": [],
            }  # fmt: skip
        elif kind == "role_finished":
            out[rid]["end"], out[rid]["status"] = _t(e), p["status"]
        elif kind == "llm_call_start":
            pending[(rid, "model")] = _t(e)
        elif kind == "llm_call":
            out[rid]["model"] += _ms(pending.pop((rid, "model")), _t(e))
            out[rid]["turns"] += 1
            out[rid]["tokens"] += p["usage"]["totalTokens"]
            usage = p["usage"]
            out[rid]["context"].append((_ms(first, _t(e)), usage["promptTokens"], usage.get("cachedPromptTokens", 0)))
        elif kind == "tool_call" and p["tool"] not in ("agent", "ask_human", "finish"):
            pending[(rid, "tool")] = _t(e)
            out[rid]["tools"] += 1
        elif kind == "tool_result" and p["tool"] not in ("agent", "ask_human", "finish"):
            out[rid]["tool"] += _ms(pending.pop((rid, "tool")), _t(e))
            data = (p.get("result") or {}).get("data")
            if p["kind"] != "success" or (isinstance(data, dict) and data.get("exitCode") not in (0, None)):
                out[rid]["bad"] += 1
        elif kind == "ask_human":
            asked[p["id"]] = (rid, _t(e))
        elif kind == "human_answer":
            rid, at = asked.pop(p["id"])
            out[rid]["human"] += _ms(at, _t(e))
    return out


def _state(events: list[dict[str, Any]]) -> TreeState:
    state = TreeState()
    for event in events:
        fold_tree(state, event)
    return state


async def test_tree_and_waterfall_agree_with_the_log(tmp_path: Path, sim_for) -> None:

    script = {
        "turns": [
            turn("lead", call("agent", role="helper", task="help out")),
            turn("helper", call("run_shell", command="echo one")),
            turn("helper", call("agent", role="leaf", task="leaf work")),
            turn("leaf", call("run_shell", command="exit 3")),
            turn("leaf", call("read_file", path="missing.txt")),
            turn("leaf", finish("leaf failed", status="error")),
            turn("helper", finish("helper done"), last="leaf failed"),
            turn("lead", call("ask_human", question="Ship it?")),
            turn("lead", finish("lead done"), last="yes"),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        services = RunServices(timeouts=FAST, human=Answers())
        outcome = await execute_run(settings, tmp_path, RunRequest(task="go"), services)
    events = read_events(outcome.run_dir / "log.jsonl")
    meta = read_meta(outcome.run_dir)
    assert meta is not None and meta.status == "success"
    expected = independent(events)

    index = RunIndex(outcome.run_dir)  # the service's incremental path
    index.update()
    tree = index.call_tree(meta.status, "2099-01-01T00:00:00+00:00")
    assert tree == call_tree(_state(events), meta.status, "2099-01-01T00:00:00+00:00")
    assert [n.instance_id for n in tree.nodes] == list(expected)
    assert [n.role for n in tree.nodes] == ["lead", "helper", "leaf"]
    for node in tree.nodes:
        want = expected[node.instance_id]
        assert node.parent == want["parent"]
        assert node.status == want["status"]
        assert node.duration_ms == _ms(want["start"], want["end"])
        assert (node.tokens, node.turns, node.tool_calls) == (want["tokens"], want["turns"], want["tools"])
        assert node.tool_warnings + node.tool_failures == want["bad"]
    lead, helper, leaf = tree.nodes
    assert tree.roots == [lead.instance_id] and lead.children == [helper.instance_id]
    assert (leaf.severity, leaf.failed_branch, leaf.tool_warnings) == ("fail", True, 2)  # exit 3, not_found
    assert helper.failed_branch and helper.severity == "ok" and lead.failed_branch
    assert sum(n.tokens for n in tree.nodes) == sum(
        e["payload"]["usage"]["totalTokens"] for e in events if e["type"] == "llm_call"
    )

    fall = index.waterfall(meta.status, "2099-01-01T00:00:00+00:00")
    first = _t(events[0])
    for row in fall.rows:
        want = expected[row.instance_id]
        assert (row.model_ms, row.tool_ms, row.human_ms) == (want["model"], want["tool"], want["human"])
        assert row.duration_ms == _ms(want["start"], want["end"])
        assert row.offset_ms == _ms(first, want["start"])
        assert row.other_ms == max(0, row.duration_ms - row.model_ms - row.tool_ms - row.human_ms)
    assert fall.duration_ms == _ms(first, _t(events[-1]))
    assert fall.slowest_path == [lead.instance_id, helper.instance_id, leaf.instance_id]
    assert lead.instance_id in {r.instance_id for r in fall.rows if r.on_slowest_path}
    assert fall.rows[0].human_ms >= 0 and expected[lead.instance_id]["human"] == fall.rows[0].human_ms

    context = context_tracks(index.context, static_budget=1000, threshold=0.8)  # the context track
    assert [t.instance_id for t in context.tracks] == [r.instance_id for r in fall.rows]
    assert context.started_at_ms == fall.started_at_ms
    for track in context.tracks:
        assert track.samples == expected[track.instance_id]["context"]
        assert track.turns == expected[track.instance_id]["turns"]

    by_key = {t.key: t for t in totals(index.tree)}
    assert by_key["role:leaf"].errors == 1 and by_key["role:lead"].count == 1
    assert (by_key["tool:run_shell"].count, by_key["tool:run_shell"].errors) == (2, 1)
    assert (by_key["tool:read_file"].count, by_key["tool:read_file"].errors) == (1, 1)
    assert "tool:agent" not in by_key and "tool:ask_human" not in by_key


async def test_totals_describe_the_whole_run_past_the_flow_window(tmp_path: Path, sim_for) -> None:
    """600 tool calls (1,200+ flow operations): the window keeps 1,000, the totals count all."""
    (tmp_path / "a.txt").write_text("hello\n")
    batch = 20
    turns = [
        turn("leaf", *[call("read_file", path="a.txt" if k % 4 else "missing.txt") for k in range(batch)])
        for _ in range(30)
    ]
    script = {"turns": [*turns, turn("leaf", finish("read them all"))]}
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles={"leaf": ROLES["leaf"]})
        outcome, events = await run_task(settings, tmp_path)
    calls = [e for e in events if e["type"] == "tool_call" and e["payload"]["tool"] == "read_file"]
    assert len(calls) == 600
    index = RunIndex(outcome.run_dir)
    index.update()
    model = index.model("success", "2099-01-01T00:00:00+00:00", window=1000)
    assert model.operations_total > 1000 and model.operations_omitted > 0
    windowed = sum(1 for op in model.operations if op.kind == "call" and op.destination.startswith("tool:read_file"))
    assert windowed < 600
    reads = {t.key: t for t in model.totals}["tool:read_file"]
    assert (reads.count, reads.errors) == (600, 150)
    counts: dict[str, int] = defaultdict(int)
    for e in events:
        if e["type"] == "tool_result":
            counts[e["payload"]["kind"]] += 1
    assert counts["not_found"] == 150
    expected = independent(events)
    fall = index.waterfall("success", "2099-01-01T00:00:00+00:00")
    (row,) = fall.rows
    want = next(iter(expected.values()))
    assert (row.model_ms, row.tool_ms, row.duration_ms) == (
        want["model"],
        want["tool"],
        _ms(want["start"], want["end"]),
    )
    (node,) = index.call_tree("success", "2099-01-01T00:00:00+00:00").nodes
    assert (node.tool_calls, node.tool_warnings, node.turns) == (600, 150, 31)
    (whole,) = context_tracks(index.context, static_budget=None, threshold=None).tracks
    assert whole.samples == want["context"] and whole.turns == 31
    (bounded,) = context_tracks(index.context, static_budget=None, threshold=None, limit=8).tracks
    assert len(bounded.samples) <= 8 and bounded.samples[0] == want["context"][0]
    assert max(s[1] for s in bounded.samples) == max(s[1] for s in want["context"])


def _ev(second: float, kind: str, **payload: Any) -> dict[str, Any]:
    stamp = datetime.fromtimestamp(1_767_225_600 + second, tz=UTC).isoformat()
    return {"timestamp": stamp, "type": kind, "payload": payload}


LIVE = [
    _ev(0, "role_start", role="lead", roleId="lead-0-1", depth=0, task="t"),
    _ev(1, "llm_call_start", role="lead", roleId="lead-0-1"),
    _ev(
        3, "llm_call", role="lead", roleId="lead-0-1", messageCount=2, usage={"promptTokens": 5, "completionTokens": 2}
    ),
    _ev(3, "tool_call", role="lead", roleId="lead-0-1", tool="run_shell", arguments="{}"),
]


def test_a_live_run_counts_open_intervals_up_to_now_and_a_dead_one_marks_them_abandoned() -> None:
    state = _state(LIVE)
    now = datetime.fromtimestamp(1_767_225_600 + 7.5, tz=UTC).isoformat()
    (node,) = call_tree(state, "running", now).nodes
    assert (node.status, node.severity, node.duration_ms, node.tokens, node.tool_calls) == ("running", "ok", 7500, 7, 1)
    (row,) = waterfall(state, "running", now).rows
    assert (row.model_ms, row.tool_ms, row.other_ms) == (2000, 4500, 1000)
    (dead,) = call_tree(state, "interrupted", now).nodes
    assert (dead.status, dead.severity, dead.failed_branch, dead.duration_ms) == ("abandoned", "fail", True, 3000)
    (row,) = waterfall(state, "interrupted", now).rows
    assert (row.tool_ms, row.status) == (0, "abandoned")
    (stopped,) = call_tree(state, "cancelled", now).nodes  # the operator stopped it: not a failure
    assert (stopped.status, stopped.severity, stopped.note) == ("stopped", "warn", "the operator stopped the run")
    assert not stopped.failed_branch
    (row,) = waterfall(state, "cancelled", now).rows
    assert row.status == "stopped"


def test_restart_duplicates_and_malformed_events_are_skipped() -> None:
    events = [*LIVE, LIVE[0], {"type": "role_start"}, _ev(4, "role_start", role=3), _ev(5, "tool_result", tool="x")]
    state = _state(events)
    assert len(state.instances) == 1 and state.events == len(events)
    assert [t.key for t in totals(state)] == ["role:lead", "tool:run_shell"]
