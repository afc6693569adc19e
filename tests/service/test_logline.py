"""One log event as one bounded line: ``<role> · <action>``."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.service.logline import LINE_CHARS, render_line

Record = dict[str, Any]

RENDERINGS: list[tuple[str, Record, str]] = [
    (
        "role_start",
        {"role": "lead", "roleId": "l", "depth": 0, "task": "\n  Build it \nthen more"},
        "lead · starts: Build it",
    ),
    (
        "role_finished",
        {"role": "lead", "status": "success", "summary": "all\ngood"},
        "lead · finished success: all good",
    ),
    ("role_finished", {"role": "a", "status": "error", "error": {"kind": "timeout"}}, "a · finished error: timeout"),
    ("role_finished", {"role": "a", "status": "success"}, "a · finished success"),
    (
        "llm_call",
        {"role": "a", "messageCount": 7, "usage": {"promptTokens": 120}},
        "a · model turn (7 msgs, 120 prompt tokens)",
    ),
    ("llm_call", {"role": "a", "messageCount": 3}, "a · model turn (3 msgs)"),
    ("llm_call_start", {"role": "a", "roleId": "a-0-1"}, "a · model turn sent"),
    ("tool_call", {"role": "a", "tool": "read_file", "arguments": "{}"}, "a · calls read_file"),
    ("tool_result", {"role": "a", "tool": "read_file", "kind": "not_found"}, "a · read_file → not_found"),
    ("effort_set", {"effort": "quick"}, "run · effort quick"),
    ("agent_call", {"parent": "lead", "child": "helper", "depth": 1}, "lead · delegates to helper (depth 1)"),
    ("depth_exceeded", {"parent": "a", "child": "b", "depth": 9, "error": "x"}, "a · cannot delegate to b: depth 9"),
    ("role_not_found", {"roleName": "ghost"}, "run · unknown role ghost"),
    (
        "interrupt",
        {"trigger": "inquiry", "handler": "ih", "target": "a-0-1", "message": "why?"},
        "ih · interrupts a-0-1 (inquiry): why?",
    ),
    ("interrupt", {"trigger": "loop_check", "handler": "lc", "target": "a-0-1"}, "lc · interrupts a-0-1 (loop_check)"),
    (
        "interrupt_resolved",
        {"trigger": "inquiry", "handler": "ih", "target": "a-0-1", "action": "answered", "summary": "because"},
        "ih · resolved inquiry of a-0-1: answered: because",
    ),
    ("ask_human", {"id": "q1", "question": "Which one?", "role": "a"}, "a · asks: Which one?"),
    ("human_answer", {"id": "q1", "answer": "the blue one"}, "human · answers: the blue one"),
    (
        "plan_modification",
        {"target": "a-0-1", "targetRole": "a", "message": "switch", "aborted": ["b-1-2"]},
        "operator · plan modification for a (aborted 1): switch",
    ),
    ("operator_notice", {"role": "a", "roleId": "a-0-1", "message": "wind down"}, "operator · notice to a: wind down"),
    (
        "inquiry_dropped",
        {"message": "hi", "reason": "not configured"},
        "operator · inquiry dropped (not configured): hi",
    ),
    ("run_resumed", {"runId": "r", "resumedFrames": 2}, "run · resumed (2 frames)"),
    ("run_stopped", {"runId": "r", "by": "ui", "liveRoles": ["lead-0-1"]}, "operator · stopped the run (ui)"),
    ("llm_unavailable", {"role": "a", "message": "503"}, "a · model unavailable: 503"),
    (
        "llm_retry",
        {"role": "a", "attempt": 1, "attempts": 4, "cause": "http", "message": "HTTP 500", "delaySeconds": 1.0},
        "a · model attempt 1/4 failed (http), retrying in 1.0s: HTTP 500",
    ),
    (
        "llm_retry",
        {"role": "a", "attempt": 0, "attempts": 4, "cause": "loading", "message": "x", "delaySeconds": 2.0},
        "a · model server still loading its model, waiting 2.0s: x",
    ),
    ("context_budget_exceeded", {"role": "a"}, "a · context budget exceeded"),
    ("implicit_finish", {"role": "a", "message": "no calls"}, "a · implicit finish: no calls"),
    ("unknown_tool", {"role": "a", "tool": "zap"}, "a · unknown tool zap"),
    ("invalid_tool_call", {"role": "a", "tool": "x", "message": "bad"}, "a · invalid call to x: bad"),
    (
        "context_pressure",
        {"role": "a", "promptTokens": 900, "effectiveBudget": 1000},
        "a · context pressure (900 of 1000 tokens)",
    ),
    (
        "context_compacted",
        {"role": "a", "droppedMessages": 4, "estimatedPromptTokens": 300},
        "a · context compacted (dropped 4 msgs, ~300 tokens)",
    ),
    (
        "observe",
        {"role": "b", "roleId": "b-1-2", "details": "list_role_messages"},
        "list_role_messages · reads b (b-1-2)",
    ),
    ("role_budget_exceeded", {"role": "a"}, "a · role budget exceeded"),
    ("something_new", {"role": "a"}, "a · something new"),
    ("something_new", {}, "run · something new"),
]


@pytest.mark.parametrize(("kind", "payload", "expected"), RENDERINGS)
def test_render_line_reads_role_dot_action(kind: str, payload: Record, expected: str) -> None:
    assert render_line({"timestamp": "t", "type": kind, "payload": payload}) == expected


def test_render_line_is_bounded_and_single_line() -> None:
    line = render_line({"type": "ask_human", "payload": {"role": "a", "question": "word\t" * 500}})
    assert len(line) == LINE_CHARS and line.endswith("…")
    assert "\t" not in line and "\n" not in line
    assert render_line({"type": "tool_call"}) == "run · calls None"
