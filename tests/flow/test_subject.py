"""Operation subjects: the path, command, query, task or exit status a label shows (issue 18, problem 9)."""

from __future__ import annotations

import json

import pytest
from tests.flow.fixtures import SCENARIOS

from orchestrator.flow.adapter import build_model
from orchestrator.flow.subject import MAX_CHARS, call_subject, clip, result_subject, text_subject


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("read_file", {"path": "src/app.py"}, "src/app.py"),
        ("write_file", {"path": "out/greeting.txt", "content": "hello"}, "out/greeting.txt"),
        ("list_directory", {"path": "."}, "."),
        ("run_shell", {"command": "pytest -q tests", "timeoutSeconds": 30}, "pytest -q tests"),
        ("test", {"commands": ["pytest -q", "ruff check", "mypy"]}, "pytest -q +2"),
        ("typecheck", {"commands": ["mypy src"]}, "mypy src"),
        ("search_text", {"pattern": "def main", "paths": ["src"]}, "def main"),
        ("glob_files", {"pattern": "**/*.py"}, "**/*.py"),
        ("web_search", {"query": "trio nursery", "limit": 3}, "trio nursery"),
        ("search_run_log", {"query": "exit 1"}, "exit 1"),
        ("context_info", {"targetRole": "coder"}, "coder"),
        ("read_plan", {}, None),
        ("some_new_tool", {"path": "a/b"}, "a/b"),  # any tool with a path says it
        ("run_shell", {"command": ""}, None),
    ],
)
def test_a_calls_subject_is_its_main_argument(tool: str, arguments: dict[str, object], expected: str | None) -> None:
    assert call_subject(tool, json.dumps(arguments)) == expected
    assert call_subject(tool, arguments) == expected  # a decoded mapping reads the same


def test_a_subject_is_one_bounded_line_without_control_characters() -> None:
    command = "echo one\n\techo two\x1b[31m\u202e" + " x" * 200
    subject = call_subject("run_shell", json.dumps({"command": command}))
    assert subject is not None and MAX_CHARS - 2 <= len(subject) <= MAX_CHARS and subject.endswith("…")
    assert subject.startswith("echo one echo two [31m x")
    assert all(ch >= " " and ch != "\u202e" for ch in subject)
    assert clip(" \n\t ") is None


def test_urls_lose_their_user_info_query_and_fragment() -> None:
    url = "https://user:secret@example.org:8443/api/v1?key=abc123#frag"
    assert call_subject("fetch_url", {"url": url}) == "https://example.org:8443/api/v1"
    assert call_subject("fetch_url", {"url": "not a url?token=1"}) == "not a url"


@pytest.mark.parametrize("raw", ["{not json", "[1, 2]", "null", 42])
def test_unreadable_arguments_have_no_subject(raw: object) -> None:
    assert call_subject("read_file", raw) is None


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"kind": "success", "result": {"kind": "success", "data": {"command": "x", "exitCode": 0}}}, "exit 0"),
        ({"kind": "success", "result": {"kind": "success", "data": {"command": "x", "exitCode": 1}}}, "exit 1"),
        (
            {"kind": "success", "result": {"data": [{"exitCode": 0}, {"exitCode": 4}, {"exitCode": 0}]}},
            "3 commands · exit 4",
        ),
        ({"kind": "success", "result": {"data": [{"exitCode": 0}]}}, "exit 0"),
        ({"kind": "not_found"}, "not_found"),
        ({"kind": "success"}, None),  # standard log level: no result body
        ({"kind": "success", "result": {"data": "file text"}}, None),
    ],
)
def test_a_tool_results_subject_is_its_exit_status_or_kind(payload: dict[str, object], expected: str | None) -> None:
    assert result_subject(payload) == expected


def test_free_text_keeps_its_first_words() -> None:
    subject = text_subject("Write the **greeting** file\nthen run the tests " + "and more " * 20)
    assert subject is not None and subject.startswith("Write the **greeting** file then run") and len(subject) <= 60
    assert text_subject(None) is None and text_subject(3) is None


def _event(second: int, type_: str, **payload: object) -> dict[str, object]:
    return {"timestamp": f"2026-03-01T12:00:{second:02d}.250Z", "type": type_, "payload": payload}


def test_the_adapter_puts_subjects_on_calls_and_returns() -> None:
    events = [
        _event(0, "role_start", role="lead", roleId="lead-0-1", task="Fix the failing build"),
        _event(1, "role_start", role="coder", roleId="coder-1-1", task="Run the tests and fix them"),
        _event(2, "tool_call", role="coder", roleId="coder-1-1", tool="run_shell", arguments='{"command": "make"}'),
        _event(
            3,
            "tool_result",
            role="coder",
            roleId="coder-1-1",
            tool="run_shell",
            kind="success",
            result={"kind": "success", "data": {"command": "make", "exitCode": 2}},
        ),
        _event(4, "role_finished", role="coder", roleId="coder-1-1", status="success", summary="Build fixed"),
    ]
    ops = build_model(events, meta_status="running", now="2026-03-01T12:00:05.000Z").operations
    assert [op.subject for op in ops] == [
        "Fix the failing build",
        "Run the tests and fix them",
        "make",
        "exit 2",
        "Build fixed",
    ]
    assert ops[2].metrics is not None and ops[2].metrics.elapsed_ms == 1_000
    assert (ops[3].severity, ops[3].note) == ("warn", "exit 2")


def test_observe_and_terminate_carry_their_details() -> None:
    events = next(s for s in SCENARIOS if s.id == "rewind").events
    ops = build_model(events, meta_status="success", now="2030-01-01T00:00:00Z").operations
    marks = [op for op in ops if op.kind in ("observe", "terminate")]
    details = [e["payload"]["details"] for e in events if e["type"] in ("observe", "terminate")]
    assert marks and [op.subject for op in marks] == [text_subject(d) for d in details]
