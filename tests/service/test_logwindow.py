"""The ``RunAggregate`` fold and the (instance-scoped) log window."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.service.logwindow import RunAggregate, aggregate, fold
from orchestrator.service.views import DEFAULT_LIMIT, MAX_LIMIT, WindowParams, log_window, parse_window_params

Record = dict[str, Any]


class Log:
    """Hand-built log events (camelCase payloads, one second apart); each helper returns the index."""

    def __init__(self) -> None:
        self.events: list[Record] = []

    def add(self, kind: str, /, **payload: Any) -> int:
        seconds = len(self.events)
        ts = f"2026-01-01T00:{seconds // 60:02d}:{seconds % 60:02d}.000Z"
        self.events.append({"timestamp": ts, "type": kind, "payload": payload})
        return len(self.events) - 1

    def start(self, role: str, rid: str | None, depth: int, parent: str | None = None, **extra: Any) -> int:
        payload: Record = {"role": role, "depth": depth, "task": extra.pop("task", f"{role} task")}
        if rid is not None:
            payload["roleId"] = rid
        if parent is not None:
            payload["parent"] = parent
        return self.add("role_start", **payload, **extra)

    def finish(self, role: str, rid: str | None, depth: int, status: str = "success", **extra: Any) -> int:
        payload: Record = {"role": role, "depth": depth, "status": status, **extra}
        if rid is not None:
            payload["roleId"] = rid
        return self.add("role_finished", **payload)

    def turn(self, role: str, rid: str | None, prompt: int = 10, **extra: Any) -> tuple[int, int]:
        ids = {"roleId": rid} if rid is not None else {}
        first = self.add("llm_call_start", role=role, **ids)
        usage = {"promptTokens": prompt, "completionTokens": 2, "totalTokens": prompt + 2}
        payload = {"messageCount": 2, "usage": usage, **extra}
        return first, self.add("llm_call", role=role, **ids, **payload)

    def tool(self, role: str, rid: str | None, tool: str, kind: str = "success") -> tuple[int, int]:
        ids = {"roleId": rid} if rid is not None else {}
        first = self.add("tool_call", role=role, tool=tool, arguments="{}", **ids)
        return first, self.add("tool_result", role=role, tool=tool, kind=kind, result={"kind": kind}, **ids)


def indices(window: Record) -> list[int]:
    return [e["index"] for e in window["events"]]


# --- window parameters -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, WindowParams(0, DEFAULT_LIMIT, None, None, "json")),
        ({"offset": "10", "limit": "20"}, WindowParams(10, 20, None, None, "json")),
        ({"offset": "-1", "limit": "-5"}, WindowParams(0, DEFAULT_LIMIT, None, None, "json")),
        ({"offset": "1.5", "limit": "abc"}, WindowParams(0, DEFAULT_LIMIT, None, None, "json")),
        ({"offset": "", "limit": " 7"}, WindowParams(0, DEFAULT_LIMIT, None, None, "json")),
        ({"limit": "100000"}, WindowParams(0, MAX_LIMIT, None, None, "json")),
        ({"limit": "0"}, WindowParams(0, 0, None, None, "json")),
        ({"instance": ""}, WindowParams(0, DEFAULT_LIMIT, None, None, "json")),
        ({"instance": "a-0-1", "detail": "x", "format": "text"}, WindowParams(0, DEFAULT_LIMIT, "a-0-1", "x", "text")),
        ({"format": "csv"}, WindowParams(0, DEFAULT_LIMIT, None, None, "json")),
    ],
)
def test_window_params_fall_back_to_the_defaults(query: dict[str, str], expected: WindowParams) -> None:
    assert parse_window_params(query) == expected


# --- the unscoped window -----------------------------------------------------------------------------


def test_window_pages_the_log_with_log_wide_indices() -> None:
    log = Log()
    for n in range(7):
        log.add("effort_set", effort=str(n))
    page = log_window(log.events, offset=2, limit=3)
    assert page["total"] == 7 and page["offset"] == 2 and page["limit"] == 3
    assert page["events"][0] == {
        "index": 2,
        "timestamp": log.events[2]["timestamp"],
        "type": "effort_set",
        "payload": {"effort": "2"},
    }
    assert indices(page) == [2, 3, 4]
    assert indices(log_window(log.events, offset=5, limit=50)) == [5, 6]
    past = log_window(log.events, offset=99, limit=50)
    assert past["total"] == 7 and past["events"] == [] and past["offset"] == 99


def test_an_empty_instance_serves_the_unfiltered_window() -> None:
    log = Log()
    log.start("a", "a-0-1", 0)
    log.add("effort_set", effort="quick")
    assert log_window(log.events, offset=0, limit=50, instance="") == log_window(log.events, offset=0, limit=50)


# --- instance scoping ---------------------------------------------------------------------------------


def delegation_log() -> tuple[Log, dict[str, Any]]:
    """lead → helper → leaf, a second helper sibling, with turns, tools and a role-named failure."""
    log = Log()
    at: dict[str, Any] = {}
    log.add("effort_set", effort="standard")
    at["lead_start"] = log.start("lead", "lead-0-1", 0)
    at["lead_turn"] = log.turn("lead", "lead-0-1")
    log.tool("lead", "lead-0-1", "agent")
    at["helper_start"] = log.start("helper", "helper-1-2", 1, "lead", parentRoleId="lead-0-1")
    at["helper_turn"] = log.turn("helper", "helper-1-2")
    at["leaf_start"] = log.start("leaf", "leaf-2-3", 2, "helper", parentRoleId="helper-1-2")
    at["leaf_turn"] = log.turn("leaf", "leaf-2-3")
    at["leaf_start_call"] = log.add("llm_call_start", role="leaf", roleId="leaf-2-3")
    at["leaf_failure"] = log.add("llm_unavailable", role="leaf", message="down")  # no roleId: by role name
    at["leaf_tool"] = log.tool("leaf", "leaf-2-3", "run_shell")
    at["leaf_finish"] = log.finish("leaf", "leaf-2-3", 2, summary="leaf done")
    at["helper_finish"] = log.finish("helper", "helper-1-2", 1, summary="helper done")
    at["sibling_start"] = log.start("helper", "helper-1-4", 1, "lead", parentRoleId="lead-0-1")
    at["sibling_turn"] = log.turn("helper", "helper-1-4")
    at["sibling_finish"] = log.finish("helper", "helper-1-4", 1)
    at["lead_finish"] = log.finish("lead", "lead-0-1", 0, summary="all done")
    return log, at


def test_instance_scope_is_own_turns_failures_lifecycle_and_ancestor_lifecycle() -> None:
    log, at = delegation_log()
    page = log_window(log.events, offset=0, limit=50, instance="leaf-2-3")
    assert indices(page) == [
        at["lead_start"],
        at["helper_start"],
        at["leaf_start"],
        *at["leaf_turn"],
        at["leaf_start_call"],
        at["leaf_failure"],
        at["leaf_finish"],
        at["helper_finish"],
        at["lead_finish"],
    ]
    assert page["total"] == len(page["events"])
    # The parent: its own turns, its child's events deliberately absent.
    helper = indices(log_window(log.events, offset=0, limit=50, instance="helper-1-2"))
    assert helper == [at["lead_start"], at["helper_start"], *at["helper_turn"], at["helper_finish"], at["lead_finish"]]
    # The sibling shares the role name but not the turns.
    sibling = indices(log_window(log.events, offset=0, limit=50, instance="helper-1-4"))
    assert sibling == [
        at["lead_start"],
        at["sibling_start"],
        *at["sibling_turn"],
        at["sibling_finish"],
        at["lead_finish"],
    ]


def test_scoped_window_pages_the_filtered_sequence() -> None:
    log, _ = delegation_log()
    full = indices(log_window(log.events, offset=0, limit=500, instance="leaf-2-3"))
    for offset in range(len(full) + 2):
        for limit in range(len(full) + 2):
            page = log_window(log.events, offset=offset, limit=limit, instance="leaf-2-3")
            assert page["total"] == len(full)
            assert indices(page) == full[offset : offset + limit]


def test_an_unknown_instance_is_an_empty_page() -> None:
    log, _ = delegation_log()
    assert log_window(log.events, offset=0, limit=50, instance="nobody-9-9") == {
        "total": 0,
        "offset": 0,
        "limit": 50,
        "events": [],
    }


def test_old_logs_without_parent_role_id_resolve_the_latest_earlier_same_named_start() -> None:
    log = Log()
    lead = log.start("lead", "lead-0-1", 0)
    first = log.start("helper", "helper-1-2", 1, "lead")
    log.finish("helper", "helper-1-2", 1)
    second = log.start("helper", "helper-1-3", 1, "lead")
    other = log.start("other", "other-1-9", 1, "lead")  # same depth, wrong name: not the parent
    leaf = log.start("leaf", "leaf-2-4", 2, "helper")
    later = log.start("helper", "helper-1-5", 1, "lead")  # after the leaf: not "earlier"
    page = indices(log_window(log.events, offset=0, limit=50, instance="leaf-2-4"))
    assert page == [lead, second, leaf]
    assert first not in page and other not in page and later not in page


def test_a_missing_ancestor_start_ends_the_walk() -> None:
    log = Log()
    lead = log.start("lead", "lead-0-1", 0)
    log.finish("ghost", "ghost-1-2", 1)  # the ghost's start never made it into the log
    leaf = log.start("leaf", "leaf-2-3", 2, "ghost", parentRoleId="ghost-1-2")
    turn = log.turn("leaf", "leaf-2-3")
    assert indices(log_window(log.events, offset=0, limit=50, instance="leaf-2-3")) == [leaf, *turn]
    assert lead not in indices(log_window(log.events, offset=0, limit=50, instance="leaf-2-3"))
    # An old log whose depth − 1 start is absent: the walk stops at the instance.
    old = Log()
    old.start("lead", "lead-0-1", 0)
    orphan = old.start("leaf", "leaf-2-2", 2, "helper")
    assert indices(log_window(old.events, offset=0, limit=50, instance="leaf-2-2")) == [orphan]


def test_a_handler_after_an_interrupt_has_no_ancestors() -> None:
    log = Log()
    log.start("lead", "lead-0-1", 0)
    log.add("interrupt", trigger="inquiry", handler="asker", target="lead-0-1", message="why?")
    handler = log.start("asker", "asker-0-2", 0)
    turn = log.turn("asker", "asker-0-2")
    done = log.finish("asker", "asker-0-2", 0, summary="because")
    assert indices(log_window(log.events, offset=0, limit=50, instance="asker-0-2")) == [handler, *turn, done]


def test_old_turn_events_without_role_id_go_to_the_live_same_named_instance() -> None:
    log = Log()
    lead = log.start("lead", None, 0)
    outer = log.turn("lead", None)
    helper = log.start("helper", None, 1, "lead")
    inner = log.turn("helper", None)
    helper_done = log.finish("helper", None, 1)
    after = log.turn("lead", None)
    lead_done = log.finish("lead", None, 0)
    agg = aggregate(log.events)
    lead_id, helper_id = agg.roots[0], agg.children[agg.roots[0]][0]
    assert lead_id == f"lead@{lead}" and helper_id == f"helper@{helper}"
    assert indices(log_window(log.events, offset=0, limit=50, instance=lead_id)) == [lead, *outer, *after, lead_done]
    assert indices(log_window(log.events, offset=0, limit=50, instance=helper_id)) == [
        lead,
        helper,
        *inner,
        helper_done,
        lead_done,
    ]


def test_a_stale_aggregate_is_caught_up_for_a_scoped_window() -> None:
    log, _ = delegation_log()
    stale = aggregate(log.events[:6])
    expected = log_window(log.events, offset=0, limit=50, instance="leaf-2-3")
    assert log_window(log.events, offset=0, limit=50, instance="leaf-2-3", agg=stale) == expected
    assert stale.count == len(log.events)


# --- the fold's contract ---------------------------------------------------------------------------


def test_fold_ignores_refolded_events_and_refuses_gaps() -> None:
    log, _ = delegation_log()
    agg = RunAggregate()
    fold(agg, log.events[0], 0)
    fold(agg, log.events[0], 0)
    assert agg.count == 1
    with pytest.raises(ValueError, match="event 2 folded before event 1"):
        fold(agg, log.events[2], 2)


def test_recent_rows_keep_only_the_last_200() -> None:
    log = Log()
    for _ in range(250):
        log.add("effort_set", effort="quick")
    rows = list(aggregate(log.events).recent)
    assert len(rows) == 200 and rows[0]["index"] == 50 and rows[-1]["index"] == 249
    for cut in (0, 10, 60, 249):  # a catch-up renders only the rows that survive, with the same result
        assert list(aggregate(log.events, aggregate(log.events[:cut])).recent) == rows


# --- property: scoped windows equal the literal filter --------------------------------------------------

ACTIONS = st.lists(st.sampled_from(["child", "turn", "fail", "retry", "tool", "finish", "handler"]), max_size=40)


def random_log(actions: list[str]) -> Log:
    """A structurally valid log: a stack of live instances driven by ``actions`` (roleIds throughout)."""
    log = Log()
    stack: list[tuple[str, str, int]] = []
    counter = 0

    def start(role: str, depth: int, parent: tuple[str, str, int] | None) -> None:
        nonlocal counter
        counter += 1
        rid = f"{role}-{depth}-{counter}"
        extra = {"parentRoleId": parent[1]} if parent else {}
        log.start(role, rid, depth, parent[0] if parent else None, **extra)
        stack.append((role, rid, depth))

    start("lead", 0, None)
    for action in actions:
        if not stack:
            break
        role, rid, depth = stack[-1]
        if action == "child":
            start(["helper", "leaf"][depth % 2], depth + 1, stack[-1])
        elif action == "handler":
            log.add("interrupt", trigger="inquiry", handler="asker", target=rid, message="?")
            start("asker", 0, None)
        elif action == "turn":
            log.turn(role, rid)
        elif action == "fail":
            log.add("llm_call_start", role=role, roleId=rid)
            log.add("context_budget_exceeded", role=role)
        elif action == "retry":
            log.add("llm_call_start", role=role, roleId=rid)
            log.add("llm_retry", role=role, roleId=rid, attempt=1, attempts=4, cause="http", message="x")
            log.add("llm_unavailable", role=role)
        elif action == "tool":
            log.tool(role, rid, "run_shell")
        else:
            log.finish(role, rid, depth)
            stack.pop()
    return log


def literal_scope(events: list[Record], rid: str) -> list[int]:
    """The spec's filter, evaluated naively over the whole log (roleId logs)."""
    parents = {e["payload"]["roleId"]: e["payload"].get("parentRoleId") for e in events if e["type"] == "role_start"}
    role_of = {e["payload"]["roleId"]: e["payload"]["role"] for e in events if e["type"] == "role_start"}
    lineage, cursor = set(), parents.get(rid)
    while cursor is not None:
        lineage.add(cursor)
        cursor = parents.get(cursor)
    live: list[str] = []
    picked = []
    for i, e in enumerate(events):
        p = e["payload"]
        if e["type"] == "role_start":
            live.append(p["roleId"])
        owner = p.get("roleId") or next((r for r in reversed(live) if role_of[r] == p.get("role")), None)
        lifecycle = e["type"] in ("role_start", "role_finished") and (owner == rid or owner in lineage)
        turn = e["type"] in ("llm_call_start", "llm_retry", "llm_call", "llm_unavailable", "context_budget_exceeded")
        if lifecycle or (turn and owner == rid):
            picked.append(i)
        if e["type"] == "role_finished":
            live.remove(p["roleId"])
    return picked


@settings(max_examples=150, deadline=None)
@given(ACTIONS, st.integers(0, 30), st.integers(0, 30))
def test_scoped_windows_equal_the_literal_filter(actions: list[str], offset: int, limit: int) -> None:
    log = random_log(actions)
    agg = aggregate(log.events)
    for rid in agg.instances:
        expected = literal_scope(log.events, rid)
        page = log_window(log.events, offset=offset, limit=limit, instance=rid, agg=agg)
        assert page["total"] == len(expected)
        assert indices(page) == expected[offset : offset + limit]


def test_the_aggregate_indexes_each_instances_tool_events_and_the_file_results_by_path() -> None:
    def event(type_: str, **payload: Any) -> dict[str, Any]:
        return {"type": type_, "timestamp": "t", "payload": {"role": "coder", "roleId": "c1", **payload}}

    def ok(data: dict[str, Any]) -> dict[str, Any]:
        return {"kind": "success", "data": data}

    events = [
        event("role_start", depth=0, task="go"),
        event("tool_call", tool="read_file", arguments="{}"),
        event("tool_result", tool="read_file", kind="success", result=ok({"path": "a", "content": "x"})),
        event("tool_call", tool="read_file", arguments="{}"),
        event("tool_result", tool="read_file", kind="not_found", result={"kind": "not_found"}),
        event("tool_call", tool="write_file", arguments="{}"),
        event("tool_result", tool="write_file", kind="success", result=ok({"path": "a", "bytes": 1})),
        event("tool_result", tool="run_shell", kind="success", result=ok({"path": "a"})),  # not a file tool
    ]
    agg = aggregate(events)
    assert agg.instances["c1"].tools == [1, 2, 3, 4, 5, 6, 7]
    assert agg.files == {"a": [2, 6]}  # successful reads and writes only
