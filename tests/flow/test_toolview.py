"""``flow.toolview``: tool results by type, call pairing, what a write replaced and its diff (pure)."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from orchestrator.flow.toolview import (
    TEXT_CHARS,
    FileView,
    PlainView,
    Previous,
    SearchView,
    TerminalView,
    WriteView,
    diff_view,
    pair_calls,
    previous_content,
    tool_view,
)


def _ok(data: Any) -> dict[str, Any]:
    return {"kind": "success", "data": data}


def test_a_shell_result_is_a_terminal_block_with_its_streams_as_text() -> None:
    result = _ok({"command": "make", "exitCode": 2, "stdout": "building\n", "stderr": 'err: "x"\n'})
    view = tool_view("run_shell", json.dumps({"command": "make"}), result, call_id="c1", index=7, call_index=6)
    assert isinstance(view.body, TerminalView)
    (command,) = view.body.commands
    assert (command.command, command.exit_code, command.stdout, command.stderr) == (
        "make",
        2,
        "building\n",
        'err: "x"\n',
    )
    assert (view.severity, view.note, view.call_id, view.index, view.call_index) == ("warn", "exit 2", "c1", 7, 6)
    wire = msgspec.to_builtins(view)
    assert wire["body"]["view"] == "terminal" and wire["body"]["commands"][0]["exitCode"] == 2


def test_checkers_list_every_command_and_a_timeout_keeps_its_partial_entries() -> None:
    entries = [
        {"command": "ruff", "exitCode": 0, "stdout": "", "stderr": ""},
        {"command": "pytest", "exitCode": None, "timedOut": True, "stdout": "..", "stderr": ""},
    ]
    view = tool_view(
        "test", {"commands": ["ruff", "pytest"]}, {"kind": "timeout", "message": "stopped", "details": entries}
    )
    assert isinstance(view.body, TerminalView)
    assert [c.command for c in view.body.commands] == ["ruff", "pytest"] and view.body.commands[1].timed_out
    assert (view.severity, view.note, view.message) == ("fail", "timeout", "stopped")


def test_an_entry_without_its_command_takes_the_calls() -> None:
    view = tool_view("run_shell", '{"command": "pytest -q"}', _ok({"exitCode": 1, "stdout": "1 failed\n"}))
    assert isinstance(view.body, TerminalView)
    assert (view.body.commands[0].command, view.body.commands[0].exit_code) == ("pytest -q", 1)
    assert view.body.commands[0].stdout == "1 failed\n"


def test_a_pending_shell_call_shows_its_command_without_a_status() -> None:
    view = tool_view("run_shell", '{"command": "sleep 5"}', None)
    assert view.kind is None and view.severity == "ok"
    assert isinstance(view.body, TerminalView) and view.body.commands[0].exit_code is None


def test_long_streams_are_clipped_with_their_full_length() -> None:
    big = "x" * (TEXT_CHARS + 10)
    view = tool_view("run_shell", "{}", _ok({"command": "yes", "exitCode": 0, "stdout": big, "stderr": ""}))
    assert isinstance(view.body, TerminalView) and view.clipped
    assert len(view.body.commands[0].stdout) == TEXT_CHARS and view.body.commands[0].stdout_chars == len(big)
    full = tool_view(
        "run_shell", "{}", _ok({"command": "yes", "exitCode": 0, "stdout": big, "stderr": ""}), limit=10**6
    )
    assert isinstance(full.body, TerminalView) and not full.clipped and full.body.commands[0].stdout == big


def test_reads_are_file_views_with_their_first_line() -> None:
    view = tool_view(
        "read_file", '{"path": "./a.py"}', _ok({"path": "a.py", "content": "x = 1\n", "size": 6, "truncated": False})
    )
    assert view.body == FileView(path="a.py", content="x = 1\n", size=6, chars=6)
    partial = tool_view(
        "read_file_partial", "{}", _ok({"path": "b", "lines": ["l11", "l12"], "offset": 10, "total": 40})
    )
    assert isinstance(partial.body, FileView) and (partial.body.first_line, partial.body.content) == (11, "l11\nl12")
    assert partial.body.total_lines == 40


def test_a_write_shows_the_content_it_wrote() -> None:
    view = tool_view(
        "write_file", json.dumps({"path": "./n.txt", "content": "new\n"}), _ok({"path": "n.txt", "bytes": 4})
    )
    assert view.body == WriteView(path="n.txt", content="new\n", bytes=4, chars=4)


def test_searches_are_tables() -> None:
    grep = tool_view(
        "search_text",
        '{"pattern": "TODO"}',
        _ok({"pattern": "TODO", "matches": [{"path": "a", "line": 3, "text": "# TODO"}], "truncated": False}),
    )
    assert grep.body == SearchView(
        pattern="TODO", columns=["path", "line", "text"], rows=[["a", "3", "# TODO"]], total=1
    )
    glob = tool_view(
        "glob_files", "{}", _ok({"pattern": "*.py", "matches": ["a.py", "b.py"], "count": 2, "truncated": False})
    )
    assert isinstance(glob.body, SearchView) and glob.body.rows == [["a.py"], ["b.py"]]
    listing = tool_view(
        "list_directory",
        "{}",
        _ok({"path": ".", "entries": [{"name": "src", "type": "directory"}, {"name": "x", "type": "file", "size": 3}]}),
    )
    assert isinstance(listing.body, SearchView) and listing.body.rows == [["src/", "directory", ""], ["x", "file", "3"]]


def test_errors_and_unknown_tools_fall_back_to_plain_text() -> None:
    missing = tool_view(
        "read_file",
        '{"path": "nope"}',
        {"kind": "not_found", "message": "no such file: nope", "details": {"path": "nope"}},
    )
    assert isinstance(missing.body, PlainView) and missing.body.text.startswith("no such file: nope")
    assert (missing.severity, missing.note) == ("warn", "not_found")
    other = tool_view("fetch_url", "{}", _ok({"status": 200}))
    assert isinstance(other.body, PlainView) and json.loads(other.body.text) == {"status": 200}
    unlogged = tool_view("run_shell", "not json", None, kind="success")
    assert isinstance(unlogged.body, PlainView) and unlogged.kind == "success"


def test_calls_pair_with_their_events_in_order_skipping_calls_never_run() -> None:
    calls = [("a", "read_file"), ("b", "run_shell"), ("c", "write_file")]
    events = [
        (10, "tool_call", "read_file"),
        (11, "tool_result", "read_file"),
        (12, "tool_call", "write_file"),
        (13, "tool_result", "write_file"),
    ]
    assert pair_calls(calls, events) == {"a": (10, 11), "b": (None, None), "c": (12, 13)}
    assert pair_calls(calls, [(5, "tool_call", "read_file")]) == {"a": (5, None), "b": (None, None), "c": (None, None)}


def _event(type_: str, role_id: str = "r1", **payload: Any) -> dict[str, Any]:
    return {"type": type_, "timestamp": "t", "payload": {"roleId": role_id, **payload}}


def _read(path: str, content: str, truncated: bool = False) -> dict[str, Any]:
    return _event(
        "tool_result",
        tool="read_file",
        kind="success",
        result=_ok({"path": path, "content": content, "truncated": truncated}),
    )


def _write(path: str, content: str) -> list[dict[str, Any]]:
    return [
        _event("tool_call", tool="write_file", arguments=json.dumps({"path": path, "content": content})),
        _event("tool_result", tool="write_file", kind="success", result=_ok({"path": path, "bytes": len(content)})),
    ]


def test_the_previous_content_is_the_last_read_or_write_of_that_path() -> None:
    events = [_read("a", "v1\n"), _read("b", "other\n"), *_write("a", "v2\n"), *_write("a", "v3\n")]
    assert previous_content(events, 4, "a") == Previous(
        content="v2\n", index=3, source="write_file", reason="as written at event 3"
    )
    assert previous_content(events, 2, "a").content == "v1\n"
    assert previous_content(events, 2, "a", candidates=[0, 3, 5]).index == 0  # the aggregate's index agrees
    assert previous_content(events, 5, "zzz").content is None
    cut = [_read("a", "head", truncated=True), *_write("a", "x")]
    unknown = previous_content(cut, 1, "a")
    assert unknown.content is None and "cut short" in unknown.reason


def test_a_diff_marks_the_changed_lines_and_an_unknown_previous_shows_all_added() -> None:
    old = "".join(f"line {n}\n" for n in range(1, 21))
    new = old.replace("line 10\n", "line ten\n")
    diff = diff_view("f", Previous(content=old, index=4, source="read_file", reason="as read at event 4"), new)
    assert diff.known and (diff.added, diff.removed, diff.previous_index) == (1, 1, 4)
    assert [(d.op, d.text) for d in diff.lines if d.op in "+-"] == [("-", "line 10"), ("+", "line ten")]
    assert len(diff.lines) == 2 + 6  # three context lines on each side
    assert [d.old for d in diff.lines if d.op == " "][:3] == [7, 8, 9]
    blind = diff_view("f", Previous(content=None, index=None, source=None, reason="never read"), "a\nb\n")
    assert not blind.known and [(d.op, d.text) for d in blind.lines] == [("+", "a"), ("+", "b")]
    assert "unknown" in blind.note and blind.added == 2
    same = diff_view("f", Previous(content="a\n", index=1, source="read_file", reason="as read at event 1"), "a\n")
    assert same.lines == [] and same.note.startswith("No change")
