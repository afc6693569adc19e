"""The run endpoints' derivations: run list, run view, detail sections, text export, questions."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.engine.harness import call, finish, run_task, turn
from tests.helpers import make_settings
from tests.service.test_logwindow import Log, delegation_log, indices

from orchestrator.conversation import CardError, ResultCard
from orchestrator.engine.runfolder import RunMeta, read_meta, runs_root, write_meta
from orchestrator.service.views import (
    RunAggregate,
    aggregate,
    event_detail,
    fold,
    latest_run_id,
    list_runs,
    load_run,
    log_text,
    log_window,
    run_list_entry,
    run_view,
    tool_verdicts,
)

Record = dict[str, Any]
NOW = datetime(2026, 1, 1, 0, 10, 0, tzinfo=UTC)

VIEW_KEYS = {
    "status", "runId", "task", "effort", "startTime", "endTime", "result", "error", "continuesFrom", "plan",
    "roles", "roleTree", "recentLog", "currentActivity", "questionHistory", "interrupts", "budgets",
    "interruptPending",
}  # fmt: skip


def meta(status: str = "running", **fields: Any) -> RunMeta:
    base: Record = {
        "run_id": "run-20260101-000000",
        "task": "Do the thing\nwith care",
        "status": status,
        "effort": "thorough",
        "log_level": "full",
        "guild_path": "/g",
        "start_time": "2026-01-01T00:00:00.000Z",
    }
    return RunMeta(**{**base, **fields})


def view(events: list[Record], run_meta: RunMeta | None = None, **kw: Any) -> Record:
    kw.setdefault("plan", None)
    kw.setdefault("interrupt_pending", False)
    return run_view("run-x", run_meta if run_meta is not None else meta(), events, now=NOW, **kw)


# --- run list --------------------------------------------------------------------------------------


def test_run_list_entry_from_meta_and_without_one() -> None:
    card = ResultCard(status="error", summary="broke", error=CardError(kind="timeout", message="slow"))
    done = meta("error", end_time="2026-01-01T00:05:00.000Z", result=card, error=card.error)
    assert run_list_entry("run-1", done, "a line") == {
        "runId": "run-1",
        "status": "error",
        "task": "Do the thing\nwith care",
        "effort": "thorough",
        "startTime": "2026-01-01T00:00:00.000Z",
        "endTime": "2026-01-01T00:05:00.000Z",
        "result": {"status": "error", "summary": "broke", "error": {"kind": "timeout", "message": "slow"}},
        "error": {"kind": "timeout", "message": "slow"},
        "summary": "a line",
        "continuesFrom": None,
        "continuedBy": [],
    }
    bare = run_list_entry("run-2", None, None, continued=["run-3"])
    assert bare["status"] == "unknown" and bare["runId"] == "run-2" and bare["continuedBy"] == ["run-3"]
    assert all(bare[k] is None for k in ("task", "effort", "startTime", "endTime", "result", "error", "summary"))


def test_list_runs_links_continuations_both_ways(tmp_path: Path) -> None:
    """Issue 18, problem 5: a parked run links forward to the runs continuing it, from their metas."""
    root = runs_root(tmp_path)
    parked, first, second = "run-20260101-000000", "run-20260101-000100", "run-20260101-000200"
    for run_id in (parked, first, second):
        (root / run_id).mkdir(parents=True)
    write_meta(root / parked, meta("needs_clarification", run_id=parked))
    write_meta(root / first, meta("success", run_id=first, continues_from=parked))
    write_meta(root / second, meta(run_id=second, continues_from=parked))
    by_id = {r["runId"]: r for r in list_runs(tmp_path)}
    assert by_id[parked]["continuedBy"] == [first, second] and by_id[parked]["continuesFrom"] is None
    assert by_id[first]["continuesFrom"] == parked and by_id[first]["continuedBy"] == []


def test_list_runs_newest_first_with_summaries(tmp_path: Path) -> None:
    root = runs_root(tmp_path)
    for run_id in ("run-20260101-000001", "run-20260102-000000", "run-20260101-120000"):
        (root / run_id).mkdir(parents=True)
    write_meta(root / "run-20260102-000000", meta(run_id="run-20260102-000000"))
    (root / "run-20260102-000000" / "summary.txt").write_text("  Built the thing  \n")
    (root / "run-20260101-120000" / "summary.txt").write_text("   \n")
    (root / "stray.txt").write_text("not a run")
    runs = list_runs(tmp_path)
    assert [r["runId"] for r in runs] == ["run-20260102-000000", "run-20260101-120000", "run-20260101-000001"]
    assert runs[0]["summary"] == "Built the thing" and runs[0]["status"] == "running"
    assert runs[1]["summary"] is None and runs[1]["status"] == "unknown"
    assert latest_run_id(tmp_path) == "run-20260102-000000"
    assert list_runs(tmp_path / "elsewhere") == [] and latest_run_id(tmp_path / "elsewhere") is None


def test_load_run_is_none_for_an_unknown_run_and_reads_a_log_only_run(tmp_path: Path) -> None:
    assert load_run(tmp_path / "run-nope") is None
    run_dir = tmp_path / "run-1"
    run_dir.mkdir()
    assert load_run(run_dir) is None
    (run_dir / "log.jsonl").write_text('{"timestamp":"t","type":"effort_set","payload":{"effort":"quick"}}\n{"torn')
    (run_dir / "plan.md").write_text("# Plan\n")
    record = load_run(run_dir)
    assert record is not None and record.meta is None and record.summary is None
    assert record.plan == "# Plan\n" and [e["type"] for e in record.events] == ["effort_set"]


# --- run view --------------------------------------------------------------------------------------


def test_run_view_carries_every_field_and_the_meta() -> None:
    log, _ = delegation_log()
    card = ResultCard(status="success", summary="all done")
    done = meta("success", end_time="2026-01-01T00:01:00.000Z", result=card, continues_from="run-0")
    v = view(log.events, done, plan="# Plan", interrupt_pending=True)
    assert set(v) == VIEW_KEYS
    assert v["status"] == "success" and v["runId"] == "run-x" and v["task"] == "Do the thing\nwith care"
    assert v["effort"] == "thorough" and v["continuesFrom"] == "run-0" and v["plan"] == "# Plan"
    assert v["result"] == {"status": "success", "summary": "all done"} and v["error"] is None
    assert v["interruptPending"] is True and v["currentActivity"] is None
    json.dumps(v)  # JSON-ready


def test_run_view_without_meta_is_unknown_and_reads_the_log() -> None:
    log, _ = delegation_log()
    v = run_view("run-x", None, log.events, plan=None, interrupt_pending=False, now=NOW)
    assert v["status"] == "unknown" and v["task"] == "lead task" and v["effort"] == "standard"
    assert v["startTime"] == log.events[0]["timestamp"] and v["endTime"] is None and v["continuesFrom"] is None
    assert v["currentActivity"] is None and v["roleTree"]["active"] is False
    assert v["budgets"]["elapsedSeconds"] == len(log.events) - 1  # first to last event, one second apart


def test_roles_count_activity_per_role_name() -> None:
    log = Log()
    log.start("lead", "lead-0-1", 0)
    log.turn("lead", "lead-0-1", prompt=50)
    for tool in ("read_file", "glob_files", "read_file", "search_text", "write_file", "search_text"):
        log.tool("lead", "lead-0-1", tool)
    log.turn("lead", "lead-0-1", prompt=80)
    log.add("observe", role="lead", roleId="lead-0-1", details="list_role_messages")  # not the lead's doing
    log.start("helper", "helper-1-2", 1, "lead", parentRoleId="lead-0-1")
    roles = view(log.events)["roles"]
    assert [r["role"] for r in roles] == ["lead", "helper"]
    lead = roles[0]
    assert lead == {
        "role": "lead",
        "firstSeen": log.events[0]["timestamp"],
        "lastSeen": log.events[-3]["timestamp"],
        "eventCount": 1 + 4 + 12,
        "llmCalls": 2,
        "toolCalls": 6,
        "recentTools": ["search_text", "write_file", "read_file"],
        "lastPromptTokens": 80,
    }
    assert roles[1]["llmCalls"] == 0 and roles[1]["lastPromptTokens"] is None and roles[1]["recentTools"] == []


def test_role_tree_nests_instances_with_status_summary_and_activity() -> None:
    log = Log()
    log.start("lead", "lead-0-1", 0)
    log.start("helper", "helper-1-2", 1, "lead", parentRoleId="lead-0-1")
    log.start("leaf", "leaf-2-3", 2, "helper", parentRoleId="helper-1-2")
    log.finish("leaf", "leaf-2-3", 2, status="error", summary="leaf broke")
    log.start("leaf", "leaf-2-4", 2, "helper", parentRoleId="helper-1-2")
    log.add("interrupt", trigger="loop_check", handler="checker", target="leaf-2-4")
    log.start("checker", "checker-0-5", 0)  # a handler root: not part of the entry role's tree
    tree = view(log.events)["roleTree"]
    assert tree["role"] == "lead" and tree["depth"] == 0 and tree["parent"] is None and tree["active"] is True
    (helper,) = tree["children"]
    assert (helper["role"], helper["parent"], helper["status"], helper["active"]) == ("helper", "lead", "running", True)
    first, second = helper["children"]
    assert first == {
        "role": "leaf",
        "roleId": "leaf-2-3",
        "depth": 2,
        "parent": "helper",
        "status": "error",
        "summary": "leaf broke",
        "active": False,
        "children": [],
    }
    assert second["roleId"] == "leaf-2-4" and second["active"] is True and second["summary"] is None
    assert view(log.events, meta("interrupted"))["roleTree"]["active"] is False
    assert view([{"timestamp": "t", "type": "effort_set", "payload": {"effort": "quick"}}])["roleTree"] is None


def test_recent_log_is_identity_rows_of_the_last_200_events() -> None:
    log = Log()
    log.start("lead", "lead-0-1", 0)
    for _ in range(120):
        log.turn("lead", "lead-0-1", sent=[{"role": "user", "content": "x" * 1000}], sentFrom=0)
    rows = view(log.events)["recentLog"]
    assert len(rows) == 200 and rows[-1]["index"] == len(log.events) - 1 and rows[0]["index"] == len(log.events) - 200
    assert rows[-1] == {
        "index": len(log.events) - 1,
        "timestamp": log.events[-1]["timestamp"],
        "type": "llm_call",
        "text": "lead · model turn (2 msgs, 10 prompt tokens)",
    }


def test_current_activity_follows_the_innermost_live_role() -> None:
    log = Log()
    log.start("lead", "lead-0-1", 0)
    log.add("llm_call_start", role="lead", roleId="lead-0-1")
    activity = view(log.events)["currentActivity"]
    assert activity == {"roleId": "lead-0-1", "role": "lead", "since": log.events[-1]["timestamp"], "doing": "model"}
    log.add("llm_call", role="lead", roleId="lead-0-1", messageCount=2, usage={})
    assert view(log.events)["currentActivity"]["doing"] == "waiting"
    log.add("tool_call", role="lead", roleId="lead-0-1", tool="agent", arguments="{}")
    assert view(log.events)["currentActivity"] == {
        "roleId": "lead-0-1",
        "role": "lead",
        "since": log.events[-1]["timestamp"],
        "doing": "tool",
        "tool": "agent",
    }
    log.start("helper", "helper-1-2", 1, "lead", parentRoleId="lead-0-1")
    log.add("tool_call", role="helper", roleId="helper-1-2", tool="ask_human", arguments="{}")
    log.add("ask_human", id="q1", question="Which?", role="helper", roleId="helper-1-2")
    activity = view(log.events)["currentActivity"]
    assert (activity["roleId"], activity["doing"], activity["tool"]) == ("helper-1-2", "waiting", "ask_human")
    log.add("run_resumed", runId="run-x", resumedFrames=2)  # in-flight markers do not survive a restart
    assert (
        view(log.events)["currentActivity"]["doing"] == "waiting" and "tool" not in view(log.events)["currentActivity"]
    )
    log.add("interrupt", trigger="inquiry", handler="asker", target="helper-1-2", message="status?")
    log.start("asker", "asker-0-3", 0)
    log.add("llm_call_start", role="asker", roleId="asker-0-3")
    assert view(log.events)["currentActivity"]["roleId"] == "asker-0-3"
    log.finish("asker", "asker-0-3", 0)
    assert view(log.events)["currentActivity"]["roleId"] == "helper-1-2"
    assert view(log.events, meta("success"))["currentActivity"] is None
    assert run_view("r", None, log.events, plan=None, interrupt_pending=False, now=NOW)["currentActivity"] is None


def test_question_history_pairs_asks_and_answers_by_id() -> None:
    log = Log()
    log.add("ask_human", id="q1", question="First?", context="ctx", role="lead", roleId="lead-0-1")
    log.add("ask_human", id="q2", question="Second?", role="lead", roleId="lead-0-1")
    log.add("human_answer", id="q2", answer="two")
    log.add("human_answer", id="q-unknown", answer="stray")
    assert view(log.events)["questionHistory"] == [
        {
            "id": "q1",
            "question": "First?",
            "context": "ctx",
            "role": "lead",
            "roleId": "lead-0-1",
            "askedAt": log.events[0]["timestamp"],
            "answer": None,
            "answeredAt": None,
        },
        {
            "id": "q2",
            "question": "Second?",
            "context": None,
            "role": "lead",
            "roleId": "lead-0-1",
            "askedAt": log.events[1]["timestamp"],
            "answer": "two",
            "answeredAt": log.events[2]["timestamp"],
        },
    ]


def inquiry(log: Log, message: str, target: str = "lead-0-1") -> int:
    return log.add("interrupt", trigger="inquiry", handler="asker", target=target, message=message)


def resolve(log: Log, action: str, target: str = "lead-0-1", **extra: Any) -> int:
    return log.add("interrupt_resolved", trigger="inquiry", handler="asker", target=target, action=action, **extra)


def test_interrupt_history_pairs_inquiries_with_resolutions() -> None:
    log = Log()
    asked = inquiry(log, "how far?")
    answered = resolve(log, "answered", summary="halfway")
    inquiry(log, "empty?")
    resolve(log, "answered", summary="  ")
    inquiry(log, "fail?")
    log.add("interrupt", trigger="context_pressure", handler="ctx", target="lead-0-1")  # not an operator's
    log.add("interrupt_resolved", trigger="context_pressure", handler="ctx", target="lead-0-1", action="compacted")
    resolve(log, "failed", handlerStatus="error", summary="handler broke")
    plan = log.add("plan_modification", target="lead-0-1", targetRole="lead", message="pivot", aborted=["h-1-2"])
    dropped = log.add("inquiry_dropped", message="anyone?", reason="not configured")
    inquiry(log, "still there?")
    history = view(log.events)["interrupts"]
    assert [(h["kind"], h.get("state")) for h in history] == [
        ("inquiry", "answered"),
        ("inquiry", "ended"),
        ("inquiry", "ended"),
        ("plan_modification", None),
        ("inquiry", "ended"),
        ("inquiry", "waiting"),
    ]
    assert history[0] == {
        "kind": "inquiry",
        "index": asked,
        "askedAt": log.events[asked]["timestamp"],
        "message": "how far?",
        "handler": "asker",
        "target": "lead-0-1",
        "state": "answered",
        "answer": "halfway",
        "resolvedAt": log.events[answered]["timestamp"],
    }
    assert history[1]["answer"] is None and history[2]["answer"] is None
    assert history[3] == {
        "kind": "plan_modification",
        "index": plan,
        "at": log.events[plan]["timestamp"],
        "message": "pivot",
        "target": "lead-0-1",
        "targetRole": "lead",
        "aborted": ["h-1-2"],
    }
    assert history[4]["message"] == "anyone?" and history[4]["resolvedAt"] == log.events[dropped]["timestamp"]
    assert history[5]["resolvedAt"] is None and history[5]["answer"] is None


def test_loop_checks_are_listed_with_their_verdicts() -> None:
    """Issue 18, problem 11: loop checks appear in the interrupt history, with the verdict and reason."""
    log = Log()
    first = log.add("interrupt", trigger="loop_check", handler="lc", target="coder-1-2")
    inquiry(log, "how far?", target="coder-1-2")
    verdict = {"action": "redirect", "summary": "try ls"}
    done = log.add("interrupt_resolved", trigger="loop_check", handler="lc", target="coder-1-2", **verdict)
    log.add("interrupt", trigger="loop_check", handler="lc", target="coder-1-3")
    history = view(log.events)["interrupts"]
    assert [(h["kind"], h["state"]) for h in history] == [
        ("loop_check", "decided"),
        ("inquiry", "waiting"),
        ("loop_check", "checking"),
    ]
    assert history[0] == {
        "kind": "loop_check",
        "index": first,
        "at": log.events[first]["timestamp"],
        "handler": "lc",
        "target": "coder-1-2",
        "state": "decided",
        "verdict": "redirect",
        "reason": "try ls",
        "resolvedAt": log.events[done]["timestamp"],
    }
    assert history[2]["verdict"] is None and history[2]["resolvedAt"] is None


def test_a_resolution_pairs_with_the_inquiry_on_its_target() -> None:
    log = Log()
    inquiry(log, "a?", target="a-0-1")
    inquiry(log, "b?", target="b-1-2")
    resolve(log, "answered", target="a-0-1", summary="for a")
    states = [(h["message"], h["state"], h["answer"]) for h in view(log.events)["interrupts"]]
    assert states == [("a?", "answered", "for a"), ("b?", "waiting", None)]


def test_budgets_sum_usage_and_measure_elapsed_time() -> None:
    log = Log()
    log.start("lead", "lead-0-1", 0)
    budgets = view(log.events)["budgets"]
    assert budgets == {"elapsedSeconds": 600.0, "toolCalls": 0, "tokensUsed": None, "tokenBreakdown": None}
    log.add(
        "llm_call",
        role="lead",
        roleId="lead-0-1",
        messageCount=2,
        usage={"promptTokens": 100, "completionTokens": 20, "totalTokens": 120, "cachedPromptTokens": 60},
    )
    log.turn("lead", "lead-0-1", prompt=10)
    log.tool("lead", "lead-0-1", "run_shell")
    done = meta("success", end_time="2026-01-01T00:01:30.500Z")
    assert view(log.events, done)["budgets"] == {
        "elapsedSeconds": 90.5,
        "toolCalls": 1,
        "tokensUsed": 132,
        "tokenBreakdown": {"promptTokens": 110, "cachedPromptTokens": 60, "completionTokens": 22},
    }


# --- detail sections -------------------------------------------------------------------------------

M = [{"role": r, "content": c} for r, c in [("system", "s"), ("user", "task"), ("assistant", "a1"), ("tool", "r1")]]


def test_detail_of_an_llm_call_is_the_folded_full_conversation() -> None:
    log = Log()
    received = {"content": "", "toolCalls": [{"id": "c1", "function": {"name": "finish", "arguments": "{}"}}]}
    usage = {"promptTokens": 5, "completionTokens": 1, "totalTokens": 6}
    log.add("llm_call", role="w", roleId="w-1-1", messageCount=2, sentFrom=0, sent=M[:2], usage=usage)
    log.add("llm_call", role="w", roleId="w-1-9", messageCount=1, sentFrom=0, sent=[M[3]], usage=usage)  # another
    last = log.add(
        "llm_call",
        role="w",
        roleId="w-1-1",
        messageCount=4,
        sentFrom=2,
        sent=M[2:],
        received=received,
        usage=usage,
        finishReason="tool_calls",
    )
    expected = {
        "index": last,
        "detailSections": {"sent": M, "received": received, "finishReason": "tool_calls", "usage": usage},
    }
    assert event_detail(log.events, last) == expected
    assert event_detail(log.events, str(last), agg=aggregate(log.events)) == expected
    assert event_detail(log.events, 0, agg=aggregate(log.events)) == {
        "index": 0,
        "detailSections": {"sent": M[:2], "usage": usage},
    }


def test_detail_of_a_standard_level_llm_call_keeps_usage_and_finish_reason() -> None:
    log = Log()
    i = log.add("llm_call", role="w", roleId="w-1-1", messageCount=9, usage={"promptTokens": 1}, finishReason="stop")
    assert event_detail(log.events, i) == {
        "index": i,
        "detailSections": {"finishReason": "stop", "usage": {"promptTokens": 1}},
    }


OK = {"kind": "success", "data": 1}
TIMEOUT = {"kind": "timeout"}


@pytest.mark.parametrize(
    ("kind", "payload", "sections"),
    [
        (
            "tool_call",
            {"tool": "t", "arguments": '{"path":"x","n":1}'},
            {"arguments": '{\n  "path": "x",\n  "n": 1\n}'},
        ),
        ("tool_call", {"tool": "t", "arguments": "{not json"}, {"arguments": "{not json"}),
        ("tool_result", {"tool": "t", "kind": "success", "result": OK}, {"result": OK}),
        ("tool_result", {"tool": "t", "kind": "success"}, None),
        ("role_finished", {"status": "error", "summary": "s", "error": TIMEOUT}, {"summary": "s", "error": TIMEOUT}),
        ("role_finished", {"status": "success"}, None),
        ("role_start", {"roleId": "a-0-1", "depth": 0, "task": "t"}, None),
        ("ask_human", {"id": "q", "question": "?"}, None),
    ],
)
def test_detail_sections_by_event_type(kind: str, payload: Record, sections: Record | None) -> None:
    events = [{"timestamp": "t", "type": kind, "payload": {"role": "a", **payload}}]
    assert event_detail(events, 0) == {"index": 0, "detailSections": sections}


@pytest.mark.parametrize("index", [-1, 3, "3", "-1", "x", "1.0", "", " 0"])
def test_detail_of_a_bad_index_is_none(index: int | str) -> None:
    events = [{"timestamp": "t", "type": "effort_set", "payload": {"effort": "quick"}}] * 3
    assert event_detail(events, index) is None


# --- text export and questions ----------------------------------------------------------------------


def test_text_export_is_one_tab_separated_line_per_event() -> None:
    log, _ = delegation_log()
    window = log_window(log.events, offset=1, limit=2)["events"]
    body, filename = log_text("run-20260101-000000", window)
    assert filename == "run-20260101-000000.log"
    assert body == (
        f"{log.events[1]['timestamp']}\trole_start\tlead · starts: lead task\n"
        f"{log.events[2]['timestamp']}\tllm_call_start\tlead · model turn sent\n"
    )
    assert log_text('bad"id/..', [])[1] == "bad_id_...log"


# --- property: incremental folding equals folding at once ----------------------------------------------

STEPS = st.lists(
    st.sampled_from(
        ["child", "turn", "tool", "ask", "answer", "inquiry", "resolve", "plan", "drop", "resume", "finish", "start"]
    ),
    max_size=50,
)


def mixed_log(steps: list[str]) -> list[Record]:
    log = Log()
    stack: list[tuple[str, str, int]] = []
    asked: list[str] = []
    for n, step in enumerate(steps):
        top = stack[-1] if stack else None
        if step == "start" or (top is None and step == "child"):
            rid = f"r-0-{n}"
            log.start("r", rid, 0)
            stack.append(("r", rid, 0))
        elif top is None:
            log.add("effort_set", effort="quick")
        elif step == "child":
            rid = f"c-{top[2] + 1}-{n}"
            log.start("c", rid, top[2] + 1, top[0], parentRoleId=top[1])
            stack.append(("c", rid, top[2] + 1))
        elif step == "turn":
            log.turn(top[0], top[1], prompt=n)
        elif step == "tool":
            log.add("tool_call", role=top[0], roleId=top[1], tool=f"t{n % 4}", arguments="{}")
        elif step == "ask":
            asked.append(f"q{n}")
            log.add("ask_human", id=f"q{n}", question="?", role=top[0], roleId=top[1])
        elif step == "answer" and asked:
            log.add("human_answer", id=asked.pop(0), answer="yes")
        elif step == "inquiry":
            log.add("interrupt", trigger="inquiry", handler="h", target=top[1], message="?")
        elif step == "resolve":
            log.add("interrupt_resolved", trigger="inquiry", handler="h", target=top[1], action="answered", summary="s")
        elif step == "plan":
            log.add("plan_modification", target=top[1], targetRole=top[0], message="m", aborted=[top[1]])
        elif step == "drop":
            log.add("inquiry_dropped", message="m", reason="r")
        elif step == "resume":
            log.add("run_resumed", runId="x", resumedFrames=len(stack))
        else:
            log.finish(top[0], top[1], top[2], summary=f"s{n}")
            stack.pop()
    return log.events


@settings(max_examples=100, deadline=None)
@given(STEPS)
def test_folding_one_event_at_a_time_equals_folding_the_whole_log(steps: list[str]) -> None:
    events = mixed_log(steps)
    agg = RunAggregate()
    snapshots = []
    for i, event in enumerate(events):
        fold(agg, event, i)
        snapshots.append(view(agg) if i % 7 == 0 else None)
        assert view(agg) == view(events[: i + 1])
    assert view(agg) == view(events)
    for i, snapshot in enumerate(snapshots):
        if snapshot is not None:  # a view handed out earlier is not mutated by later folds
            assert snapshot == view(events[: i + 1])
    for rid in agg.instances:
        assert log_window(events, offset=0, limit=500, instance=rid, agg=agg) == log_window(
            events, offset=0, limit=500, instance=rid
        )


# --- a real engine log --------------------------------------------------------------------------------


async def test_views_of_a_real_engine_run(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="helper", task="help out")),
            turn("helper", call("agent", role="leaf", task="do the leaf work")),
            turn("leaf", call("run_shell", command="echo hi")),
            turn("leaf", finish("leaf did it")),
            turn("helper", finish("helper relayed"), last="leaf did it"),
            turn("lead", finish("lead done"), last="helper relayed"),
        ]
    }
    async with sim_for(script) as sim:
        settings_ = make_settings(tmp_path, sim.base_url)
        outcome, events = await run_task(settings_, tmp_path, task="Ship it")
    record = load_run(outcome.run_dir)
    assert record is not None and record.meta == read_meta(outcome.run_dir) and record.events == events
    v = run_view(outcome.run_id, record.meta, record.events, plan=record.plan, interrupt_pending=False, now=NOW)
    assert v["status"] == "success" and v["task"] == "Ship it" and v["currentActivity"] is None
    tree = v["roleTree"]
    assert (tree["role"], tree["status"], tree["summary"], tree["active"]) == ("lead", "success", "lead done", False)
    leaf = tree["children"][0]["children"][0]
    assert (leaf["role"], leaf["depth"], leaf["parent"], leaf["summary"]) == ("leaf", 2, "helper", "leaf did it")
    assert {r["role"]: r["llmCalls"] for r in v["roles"]} == {"lead": 2, "helper": 2, "leaf": 2}
    assert next(r for r in v["roles"] if r["role"] == "leaf")["recentTools"] == ["finish", "run_shell"]
    assert v["budgets"]["toolCalls"] == sum(e["type"] == "tool_call" for e in events)
    assert [row["index"] for row in v["recentLog"]] == list(range(len(events)))
    # The leaf's scoped window: its turns and lifecycle inside its ancestors' lifecycle.
    leaf_id = leaf["roleId"]
    scoped = log_window(events, offset=0, limit=500, instance=leaf_id)
    kinds = [(e["type"], e["payload"].get("role")) for e in scoped["events"]]
    assert kinds[:3] == [("role_start", "lead"), ("role_start", "helper"), ("role_start", "leaf")]
    assert kinds[-3:] == [("role_finished", "leaf"), ("role_finished", "helper"), ("role_finished", "lead")]
    assert {t for t, _ in kinds[3:-3]} == {"llm_call_start", "llm_call"}
    assert scoped["total"] == 6 + 4 and indices(scoped) == sorted(indices(scoped))
    # Every turn's detail is the full request, even where the log holds a delta.
    turns = [i for i, e in enumerate(events) if e["type"] == "llm_call"]
    agg = aggregate(events)
    for i in turns:
        sent = event_detail(events, i, agg=agg)["detailSections"]["sent"]
        assert len(sent) == events[i]["payload"]["messageCount"] and sent[0]["role"] == "system"
    assert any(events[i]["payload"]["sentFrom"] > 0 for i in turns)
    assert list_runs(tmp_path)[0]["runId"] == outcome.run_id
    body, _ = log_text(outcome.run_id, log_window(events, offset=0, limit=500)["events"])
    assert body.count("\n") == len(events) and "leaf · calls run_shell" in body


def test_log_rows_of_model_turns_carry_the_verdicts_of_their_problem_tool_results() -> None:
    ok = {"kind": "success", "data": {"command": "true", "exitCode": 0, "stdout": "", "stderr": ""}}
    bad = {"kind": "success", "data": {"command": "false", "exitCode": 1, "stdout": "", "stderr": ""}}
    sent = [
        {"role": "tool", "content": json.dumps(ok), "toolCallId": "c1"},
        {"role": "tool", "content": json.dumps(bad), "toolCallId": "c2"},
        {"role": "tool", "content": json.dumps({"kind": "not_found", "message": "m"}), "toolCallId": "c3"},
        {"role": "tool", "content": '{"kind": "success", "data": {"exitCode": 1, "stdo', "toolCallId": "c4"},  # cut
        {"role": "user", "content": json.dumps(bad)},
    ]
    payload = {"role": "coder", "roleId": "coder-1", "sent": sent, "usage": {}}
    expected = {"c2": {"severity": "warn", "note": "exit 1"}, "c3": {"severity": "warn", "note": "not_found"}}
    assert tool_verdicts(payload) == expected
    events = [
        {"timestamp": "2026-01-01T00:00:00+00:00", "type": "llm_call", "payload": payload},
        {"timestamp": "2026-01-01T00:00:01+00:00", "type": "llm_call", "payload": {**payload, "sent": sent[:1]}},
    ]
    rows = log_window(events, offset=0, limit=10)["events"]
    assert rows[0]["verdicts"] == expected
    assert "verdicts" not in rows[1]  # nothing to badge: no key
    assert tool_verdicts({"sent": "nonsense"}) == {} and tool_verdicts(None) == {}
