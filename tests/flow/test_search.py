"""``flow/search.py``: the per-event text index, queries over it, landmarks and operation lookup."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.flow.fixtures import SCENARIOS, Scenario
from tests.flow.logs import random_logs
from tests.flow.script import Script

from orchestrator.flow import FlowState, fold
from orchestrator.flow.search import (
    MAX_QUERY,
    SNIPPET_CHARS,
    QueryError,
    SearchState,
    index_event,
    landmarks,
    locate,
    parse_query,
    search,
    snippet,
)


def _indexed(events: list[dict[str, Any]]) -> tuple[SearchState, FlowState]:
    flow, state = FlowState(), SearchState()
    for event in events:
        fold(flow, event)
        index_event(state, event)
    state.sync(flow.details)
    return state, flow


def _story() -> list[dict[str, Any]]:
    """A coder whose shell exits 1 and whose read finds nothing, a question, an inquiry, a loop check."""
    s = Script()
    lead = s.start("lead", "Fix the failing date test.")
    s.think(lead)
    coder = s.start("coder", "Make tests/test_dates.py pass.", lead)
    source = {"content": "def test_dates():\n    assert parse('2026-01-01')"}
    s.tool(coder, "read_file", source, path="tests/test_dates.py")
    s.tool_call(coder, "run_shell", command="pytest -q tests/test_dates.py")
    s.tool_result(coder, "run_shell", {"command": "pytest", "exitCode": 1, "stderr": "AssertionError: boom\n"})
    s.tool_call(coder, "read_file", path="src/missing.py")
    s.tool_result(coder, "read_file", error=("not_found", "no such file: src/missing.py"))
    s.ask(coder, "q-1", "Should I use UTC?", "The test compares local times.")
    s.answer("q-1", "Yes, UTC everywhere.")
    s.interrupt("inquiry", "inquiry_responder", coder, "What is the coder doing?")
    helper = s.start("inquiry_responder", "The operator asks: What is the coder doing?")
    s.finish(helper, "It is fixing the date parser.")
    s.interrupt("loop_check", "loop_detector", coder)
    check = s.start("loop_detector", f"Check whether {coder.role_id} is stuck.")
    s.finish(check, "Not stuck.")
    s.finish(coder, "Gave up", "error", "loop_detected")
    s.finish(lead, "The coder failed.")
    return s.events


def test_a_file_path_finds_its_call_and_result_with_their_operations() -> None:
    events = _story()
    state, flow = _indexed(events)
    page = search(state, parse_query("tests/test_dates.py"))
    kinds = [(hit.kind, hit.field, hit.tool) for hit in page.hits]
    assert kinds == [
        ("role_start", "task", None),
        ("tool_call", "arguments", "read_file"),
        ("tool_call", "arguments", "run_shell"),
    ]
    read = page.hits[1]
    assert read.snippet == "path: tests/test_dates.py"
    # the hit's operation is the one its event made: the read_file call
    position = int(read.operation_id.removeprefix("op-")) - 1  # type: ignore[union-attr]
    assert flow.details[position] == read.log_index
    assert events[read.log_index]["type"] == "tool_call" and read.instance_id == "coder-1-2"
    assert page.next_after is None


def test_results_are_searched_and_matched_case_insensitively() -> None:
    state, _ = _indexed(_story())
    page = search(state, parse_query("assertionerror"))
    assert [(hit.kind, hit.field, hit.severity) for hit in page.hits] == [("tool_result", "result", "warn")]
    assert "AssertionError: boom" in page.hits[0].snippet


def test_filters_select_by_role_tool_and_category() -> None:
    state, _ = _indexed(_story())
    problems = search(state, parse_query("is:problem"))
    assert [(hit.tool or hit.role, hit.severity, hit.snippet) for hit in problems.hits] == [
        ("run_shell", "warn", "exit 1"),
        ("read_file", "warn", "not_found"),
        ("coder", "fail", "loop_detected"),
    ]
    reads = search(state, parse_query("tool:read_file src"))
    assert [(hit.kind, hit.field) for hit in reads.hits] == [("tool_call", "arguments"), ("tool_result", "result")]
    assert [hit.kind for hit in search(state, parse_query("role:lead")).hits] == ["role_start", "role_finished"]
    assert [hit.kind for hit in search(state, parse_query("is:question")).hits] == ["ask_human"]
    assert [hit.snippet for hit in search(state, parse_query("IS:interrupt")).hits] == ["inquiry", "loop_check"]
    answer = search(state, parse_query("utc everywhere")).hits
    assert [(hit.kind, hit.role, hit.instance_id) for hit in answer] == [("human_answer", "coder", "coder-1-2")]


def test_landmarks_list_problems_questions_interrupts_and_loop_checks_in_order() -> None:
    events = _story()
    state, flow = _indexed(events)
    marks = landmarks(state)
    assert [(mark.category, mark.note) for mark in marks] == [
        ("warn", "exit 1"),
        ("warn", "not_found"),
        ("question", None),
        ("interrupt", "inquiry"),
        ("loop", "loop_check"),
        ("fail", "loop_detected"),
    ]
    indexes = [mark.log_index for mark in marks]
    assert indexes == sorted(indexes)
    # an interrupt lands on its handler's call: the first operation after it
    for mark in marks[3:5]:
        op = int(mark.operation_id.removeprefix("op-")) - 1  # type: ignore[union-attr]
        handler = events[flow.details[op]]
        assert flow.details[op] >= mark.log_index
        assert handler["type"] in ("role_start", "interrupt")


def test_locate_names_the_event_and_transcript_of_an_operation() -> None:
    events = _story()
    state, flow = _indexed(events)
    for n in range(1, len(flow.details) + 1):
        found = locate(state, f"op-{n}")
        assert found.log_index == flow.details[n - 1]
    located = [locate(state, f"op-{n}") for n in range(1, len(flow.details) + 1)]
    call = next(found for found in located if found.tool == "run_shell")
    assert (call.kind, call.instance_id, call.role) == ("tool_call", "coder-1-2", "coder")
    for bad in ("op-0", f"op-{len(flow.details) + 1}", "x", "op-01"):
        with pytest.raises(KeyError):
            locate(state, bad)


def test_parse_query_rejects_unknown_categories_and_long_text() -> None:
    assert parse_query("  role:coder  Exit\t1 ").text == "exit 1"
    assert parse_query("role:coder").role == "coder"
    with pytest.raises(QueryError):
        parse_query("is:nonsense")
    with pytest.raises(QueryError):
        parse_query("x" * (MAX_QUERY + 1))


def test_the_index_skips_malformed_events_but_counts_them() -> None:
    state = SearchState()
    for event in [None, {"type": 3}, {"type": "tool_call", "payload": []}, {"type": "tool_call", "payload": {}}]:
        index_event(state, event)  # type: ignore[arg-type]
    assert state.events == 4 and state.entries == []


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=400), at=st.integers(0, 400), length=st.integers(0, MAX_QUERY))
def test_a_snippet_is_one_bounded_line_holding_the_match(text: str, at: int, length: int) -> None:
    at = min(at, len(text))
    length = min(length, len(text) - at)
    line = snippet(text, text.lower(), at, length)
    assert len(line) <= SNIPPET_CHARS
    assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F for c in line)
    match = text[at : at + length]
    if not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F or c in "\u2028\u2029" for c in match):
        assert match.strip() in line


_words = st.sampled_from(["test", "dates", "UTC", "exit", "coder", "pytest -q", "src/", "a", "é", "missing"])


@settings(max_examples=80, deadline=None)
@given(events=random_logs, query=_words, limit=st.integers(1, 5))
def test_hits_hold_the_query_come_in_log_order_and_pages_concatenate(
    events: list[dict[str, Any]], query: str, limit: int
) -> None:
    events = [*_story(), *events]
    state, _ = _indexed(events)
    parsed = parse_query(query)
    whole = search(state, parsed, limit=1000)
    assert all(parsed.text in hit.snippet.lower() for hit in whole.hits)
    assert all(len(hit.snippet) <= SNIPPET_CHARS for hit in whole.hits)
    indexes = [hit.log_index for hit in whole.hits]
    assert indexes == sorted(set(indexes))
    pages, after = [], -1
    while True:
        page = search(state, parsed, limit=limit, after=after)
        pages.extend(page.hits)
        if page.next_after is None:
            break
        assert len(page.hits) == limit
        after = page.next_after
    assert pages == whole.hits


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_every_scenario_operation_is_locatable_and_interrupts_are_landmarks(scenario: Scenario) -> None:
    events = scenario.events
    state, flow = _indexed(events)
    for n in range(1, len(flow.details) + 1):
        assert locate(state, f"op-{n}").log_index == flow.details[n - 1]
    interrupts = sum(1 for event in events if event["type"] == "interrupt")
    assert sum(1 for mark in landmarks(state) if mark.category in ("interrupt", "loop")) == interrupts
