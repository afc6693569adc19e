"""The one outcome classifier: shell exits, checker lists, error kinds, cards."""

from __future__ import annotations

import pytest

from orchestrator.flow.outcome import classify_card, classify_tool_result


def shell(code: int | None, **extra: object) -> dict[str, object]:
    data = {"command": "x", "exitCode": code, "stdout": "", "stderr": "", **extra}
    return {"tool": "run_shell", "kind": "success", "result": {"kind": "success", "data": data}}


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (shell(0), ("ok", "")),
        (shell(1), ("warn", "exit 1")),
        (shell(2), ("warn", "exit 2")),
        (shell(127), ("fail", "exit 127: command not found")),
        (shell(None), ("fail", "killed by a signal")),
        (shell(None, timedOut=True), ("fail", "timeout")),
        ({"tool": "read_file", "kind": "not_found"}, ("warn", "not_found")),
        ({"tool": "write_file", "kind": "invalid_arguments"}, ("warn", "invalid_arguments")),
        ({"tool": "run_checks", "kind": "timeout"}, ("fail", "timeout")),
        ({"tool": "nope", "kind": "unknown_tool"}, ("fail", "unknown_tool")),
        ({"tool": "fetch_url", "kind": "unavailable"}, ("fail", "unavailable")),
        ({"tool": "read_file", "kind": "success"}, ("ok", "")),  # standard log level: no result body
        ({"tool": "read_file", "kind": "success", "result": {"kind": "success", "data": "text"}}, ("ok", "")),
        ({"tool": "x"}, ("fail", "malformed result")),
    ],
)
def test_tool_results(payload: dict[str, object], expected: tuple[str, str]) -> None:
    assert tuple(classify_tool_result(payload)) == expected


def test_a_checker_list_reports_its_first_failing_command() -> None:
    entries = [{"command": "a", "exitCode": 0}, {"command": "b", "exitCode": 4}, {"command": "c", "exitCode": 127}]
    payload = {"tool": "run_checks", "kind": "success", "result": {"kind": "success", "data": entries}}
    assert tuple(classify_tool_result(payload)) == ("warn", "command 2: exit 4")
    one = {"tool": "run_checks", "kind": "success", "result": {"kind": "success", "data": entries[2:]}}
    assert tuple(classify_tool_result(one)) == ("fail", "exit 127: command not found")


def test_cards() -> None:
    assert classify_card("success").ok
    assert classify_card("needs_clarification").ok
    assert tuple(classify_card("error", {"kind": "tests_failed", "message": "m"})) == ("fail", "tests_failed")
    assert tuple(classify_card("error")) == ("fail", "failed")
    # issue 25: an implicit finish that is no answer is a red failure badge naming the kind
    assert tuple(classify_card("error", {"kind": "incomplete"})) == ("fail", "incomplete")
