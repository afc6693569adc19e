"""Tool results by type: what the inspector and the operation card show for one tool call (pure, no I/O).

A tool result in the log is a ``ToolResult`` (``{kind, data?, message?, details?}``); the conversation the
model read carries the same thing as an encoded JSON string, which a reader should never have to decode by
eye. ``tool_view`` turns a call (tool name and JSON arguments) and its result into one typed body:

- ``terminal`` for ``run_shell`` and the checkers (``typecheck``, ``test``): each command with its exit
  status, stdout and stderr as text;
- ``file`` for reads (``read_file``, ``read_file_partial``, ``read_plan``): the path and the content, with
  the number of its first line;
- ``write`` for ``write_file``: the path and the content written (the diff against the previous content
  is ``diff_view``, asked for on demand);
- ``search`` for ``search_text``, ``glob_files`` and ``list_directory``: a table;
- ``plain`` for anything else (an error's message, or the result as indented JSON).

The severity and note come from the one classifier (``flow/outcome.py``). Every text is cut to ``limit``
characters (``clipped`` says so, with the full lengths), so a windowed answer stays small; a "show all"
asks again with a larger limit. ``previous_content`` finds what a write replaced, from the log alone.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from orchestrator import vocabulary as names
from orchestrator.flow.outcome import classify_tool_result

__all__ = [
    "FULL_CHARS",
    "ROW_LIMIT",
    "TEXT_CHARS",
    "Command",
    "DiffLine",
    "DiffView",
    "FileView",
    "PlainView",
    "Previous",
    "SearchView",
    "TerminalView",
    "ToolView",
    "WriteView",
    "diff_view",
    "pair_calls",
    "previous_content",
    "tool_view",
]

#: Characters of each text a windowed answer carries (stdout, a file's content …).
TEXT_CHARS = 4000
#: Characters of each text a "show all" answer carries.
FULL_CHARS = 1_000_000
#: Rows of a search table a windowed answer carries.
ROW_LIMIT = 200
#: Lines of a diff an answer carries.
DIFF_LINES = 4000

TERMINAL_TOOLS = frozenset({"run_shell", "typecheck", "test"})
READ_TOOLS = frozenset({"read_file", "read_file_partial", "read_plan"})
WRITE_TOOLS = frozenset({"write_file"})
SEARCH_TOOLS = frozenset({"search_text", "glob_files", "list_directory"})


class Command(msgspec.Struct, kw_only=True, rename="camel"):
    """One command a terminal block shows; ``stdoutChars``/``stderrChars`` are the full lengths."""

    command: str
    exit_code: int | None
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""
    stdout_chars: int = 0
    stderr_chars: int = 0


class TerminalView(msgspec.Struct, kw_only=True, rename="camel", tag_field="view", tag="terminal"):
    commands: list[Command]


class FileView(msgspec.Struct, kw_only=True, rename="camel", tag_field="view", tag="file"):
    """``firstLine`` is 1-based; ``truncated``: the tool itself read only part of the file."""

    path: str
    content: str
    first_line: int = 1
    total_lines: int | None = None
    size: int | None = None
    truncated: bool = False
    chars: int = 0


class WriteView(msgspec.Struct, kw_only=True, rename="camel", tag_field="view", tag="write"):
    path: str
    content: str
    bytes: int | None = None
    chars: int = 0


class SearchView(msgspec.Struct, kw_only=True, rename="camel", tag_field="view", tag="search"):
    """A table; ``total`` rows exist (``rows`` may hold fewer), ``truncated``: the tool itself capped them."""

    pattern: str | None
    columns: list[str]
    rows: list[list[str]]
    total: int
    truncated: bool = False


class PlainView(msgspec.Struct, kw_only=True, rename="camel", tag_field="view", tag="plain"):
    text: str
    chars: int = 0


Body = TerminalView | FileView | WriteView | SearchView | PlainView


class ToolView(msgspec.Struct, kw_only=True, rename="camel"):
    """One call and its result. ``kind`` is ``None`` while the result is not in the log yet; ``index`` is
    the ``tool_result`` event's log index, ``callIndex`` the ``tool_call``'s (``None`` when unknown)."""

    call_id: str | None
    tool: str
    kind: str | None
    severity: str
    note: str
    message: str | None
    index: int | None
    call_index: int | None
    clipped: bool
    body: Body


class DiffLine(msgspec.Struct, kw_only=True, rename="camel", array_like=False):
    """``op``: ``" "`` context, ``"+"`` added, ``"-"`` removed, ``"…"`` a gap between hunks."""

    op: str
    text: str
    old: int | None = None
    new: int | None = None


class Previous(msgspec.Struct, kw_only=True, rename="camel"):
    """What a path held before a write, as far as the log tells: ``content`` ``None`` when unknown."""

    content: str | None
    index: int | None
    source: str | None
    reason: str


class DiffView(msgspec.Struct, kw_only=True, rename="camel"):
    path: str
    known: bool
    note: str
    previous_index: int | None
    added: int
    removed: int
    lines: list[DiffLine]
    clipped: bool


# --- helpers ------------------------------------------------------------------------------------


def _clip(value: Any, limit: int) -> tuple[str, int, bool]:
    text = value if isinstance(value, str) else "" if value is None else str(value)
    return (text, len(text), False) if len(text) <= limit else (text[:limit], len(text), True)


def _arguments(raw: Any) -> Mapping[str, Any]:
    if isinstance(raw, Mapping):
        return raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except (ValueError, RecursionError):
            return {}
        return parsed if isinstance(parsed, Mapping) else {}
    return {}


def _str(mapping: Mapping[str, Any], key: str) -> str | None:
    value = mapping.get(key)
    return value if isinstance(value, str) else None


def _int(mapping: Mapping[str, Any], key: str) -> int | None:
    value = mapping.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _pretty(value: Any) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        return str(value)


# --- the bodies -----------------------------------------------------------------------------------


def _commands(value: Any, limit: int, fallback: str) -> tuple[list[Command], bool] | None:
    """The commands of a shell or checker result: entries carrying a ``command`` or an ``exitCode``
    (``fallback``, the call's own command, names an entry without one)."""
    entries = [value] if isinstance(value, Mapping) else value if isinstance(value, list) else None
    if not entries or not all(isinstance(e, Mapping) and ("command" in e or "exitCode" in e) for e in entries):
        return None
    out: list[Command] = []
    clipped = False
    for entry in entries:
        stdout, out_chars, cut_out = _clip(entry.get("stdout"), limit)
        stderr, err_chars, cut_err = _clip(entry.get("stderr"), limit)
        clipped = clipped or cut_out or cut_err
        out.append(
            Command(
                command=str(entry["command"]) if "command" in entry else fallback,
                exit_code=_int(entry, "exitCode"),
                timed_out=entry.get("timedOut") is True,
                stdout=stdout,
                stderr=stderr,
                stdout_chars=out_chars,
                stderr_chars=err_chars,
            )
        )
    return out, clipped


def _terminal(args: Mapping[str, Any], result: Mapping[str, Any], limit: int) -> tuple[Body, bool] | None:
    command = _str(args, "command")
    if command is None and isinstance(args.get("commands"), list):
        command = " && ".join(str(c) for c in args["commands"])
    found = _commands(result.get("data"), limit, command or "?") or _commands(
        result.get("details"), limit, command or "?"
    )
    if found is not None:
        return TerminalView(commands=found[0]), found[1]
    if command is None:
        return None
    return TerminalView(commands=[Command(command=command, exit_code=None)]), False


def _file(tool: str, args: Mapping[str, Any], data: Mapping[str, Any], limit: int) -> tuple[Body, bool] | None:
    path = _str(data, "path") or _str(args, "path") or ("plan.md" if tool == "read_plan" else None)
    if tool == "read_file_partial" and isinstance(data.get("lines"), list):
        raw = "\n".join(str(line) for line in data["lines"])
        first = (_int(data, "offset") or 0) + 1
        text, chars, clipped = _clip(raw, limit)
        return FileView(
            path=path or "?", content=text, first_line=first, total_lines=_int(data, "total"), chars=chars
        ), clipped
    content = data.get("content", data.get("plan"))
    if path is None or not isinstance(content, str):
        return None
    text, chars, clipped = _clip(content, limit)
    return FileView(
        path=path, content=text, size=_int(data, "size"), truncated=data.get("truncated") is True, chars=chars
    ), clipped


def _write(args: Mapping[str, Any], data: Mapping[str, Any], limit: int) -> tuple[Body, bool] | None:
    path = _str(data, "path") or _str(args, "path")
    content = _str(args, "content")
    if path is None or content is None:
        return None
    text, chars, clipped = _clip(content, limit)
    return WriteView(path=path, content=text, bytes=_int(data, "bytes"), chars=chars), clipped


def _search(tool: str, args: Mapping[str, Any], data: Mapping[str, Any], limit: int) -> tuple[Body, bool] | None:
    rows: list[list[str]]
    if tool == "search_text" and isinstance(data.get("matches"), list):
        columns = ["path", "line", "text"]
        rows = [
            [str(m.get("path", "")), str(m.get("line", "")), str(m.get("text", ""))]
            for m in data["matches"]
            if isinstance(m, Mapping)
        ]
    elif tool == "glob_files" and isinstance(data.get("matches"), list):
        columns = ["path"]
        rows = [[str(m)] for m in data["matches"]]
    elif tool == "list_directory" and isinstance(data.get("entries"), list):
        columns = ["name", "type", "size"]
        rows = [
            [
                str(e.get("name", "")) + ("/" if e.get("type") == "directory" else ""),
                str(e.get("type", "")),
                "" if e.get("size") is None else str(e.get("size")),
            ]
            for e in data["entries"]
            if isinstance(e, Mapping)
        ]
    else:
        return None
    total = len(rows)
    rows = [[cell if len(cell) <= 1000 else cell[:1000] + "…" for cell in row] for row in rows[:limit]]
    pattern = (
        _str(data, "pattern") or _str(args, "pattern") or (_str(data, "path") if tool == "list_directory" else None)
    )
    return SearchView(
        pattern=pattern, columns=columns, rows=rows, total=total, truncated=data.get("truncated") is True
    ), total > limit


def _plain(result: Mapping[str, Any] | None, limit: int) -> tuple[Body, bool]:
    if result is None:
        return PlainView(text="", chars=0), False
    message = _str(result, "message")
    if result.get("kind") == "success":
        raw = result.get("data")
        value = raw if isinstance(raw, str) else _pretty(raw)
    else:
        extra = result.get("details")
        value = (message or "") + ("" if extra is None else "\n\n" + _pretty(extra))
    text, chars, clipped = _clip(value, limit)
    return PlainView(text=text, chars=chars), clipped


def tool_view(
    tool: str,
    arguments: Any,
    result: Mapping[str, Any] | None,
    *,
    kind: str | None = None,
    call_id: str | None = None,
    index: int | None = None,
    call_index: int | None = None,
    limit: int = TEXT_CHARS,
) -> ToolView:
    """The typed view of one call. ``result`` is the logged ``ToolResult`` (``None`` while pending or at
    the ``standard`` log level, where only ``kind`` is known); ``limit`` bounds every text."""
    args = _arguments(arguments)
    kind = _str(result, "kind") if result is not None else kind
    success = kind == "success"
    data = result.get("data") if result is not None and success else None
    data = data if isinstance(data, Mapping) else {}
    body: tuple[Body, bool] | None = None
    if tool in TERMINAL_TOOLS:
        body = _terminal(args, result or {}, limit)
    elif tool in WRITE_TOOLS and kind in (None, "success"):
        body = _write(args, data, limit)
    elif success and tool in READ_TOOLS:
        body = _file(tool, args, data, limit)
    elif success and tool in SEARCH_TOOLS:
        body = _search(tool, args, data, ROW_LIMIT if limit <= TEXT_CHARS else limit)
    if body is None:
        body = _plain(result, limit)
    verdict = classify_tool_result({"kind": kind, "result": result}) if kind is not None else None
    message = _str(result, "message") if result is not None else None
    return ToolView(
        call_id=call_id,
        tool=tool,
        kind=kind,
        severity=verdict.severity if verdict else "ok",
        note=verdict.note if verdict else "",
        message=message,
        index=index,
        call_index=call_index,
        clipped=body[1],
        body=body[0],
    )


# --- pairing --------------------------------------------------------------------------------------


def pair_calls(
    calls: Sequence[tuple[str, str]], tool_events: Sequence[tuple[int, str, str]]
) -> dict[str, tuple[int | None, int | None]]:
    """``{callId: (tool_call index, tool_result index)}`` for one turn's calls ``[(id, tool)]``.

    ``tool_events`` are the instance's ``(index, type, tool)`` tool events after the turn, in log order.
    Calls run one after another in order, so the n-th ``tool_call`` is the next call of that name still
    unmatched (a call the engine never ran — the role had already finished — has none); each
    ``tool_result`` answers the latest matched call without one.
    """
    out: dict[str, tuple[int | None, int | None]] = {call_id: (None, None) for call_id, _ in calls}
    position = 0
    open_call: str | None = None
    for index, kind, tool in tool_events:
        if kind == names.TOOL_CALL:
            while position < len(calls) and calls[position][1] != tool:
                position += 1
            if position >= len(calls):
                break
            open_call = calls[position][0]
            out[open_call] = (index, None)
            position += 1
        elif kind == names.TOOL_RESULT and open_call is not None:
            out[open_call] = (out[open_call][0], index)
            open_call = None
    return out


# --- what a write replaced -----------------------------------------------------------------------------


def _payload(event: Mapping[str, Any] | None) -> Mapping[str, Any]:
    payload = event.get("payload") if isinstance(event, Mapping) else None
    return payload if isinstance(payload, Mapping) else {}


def _written_content(events: Sequence[Mapping[str, Any]], result_index: int) -> str | None:
    """The content a successful ``write_file`` result at ``result_index`` wrote: its ``tool_call``'s."""
    role_id = _payload(events[result_index]).get("roleId")
    for i in range(result_index - 1, max(-1, result_index - 50), -1):
        p = _payload(events[i])
        if events[i].get("type") == names.TOOL_CALL and p.get("tool") == "write_file" and p.get("roleId") == role_id:
            return _str(_arguments(p.get("arguments")), "content")
    return None


def previous_content(
    events: Sequence[Mapping[str, Any]], before: int, path: str, candidates: Sequence[int] | None = None
) -> Previous:
    """What ``path`` held just before log index ``before``: the last successful ``read_file`` or
    ``write_file`` of that path before it (``candidates``: those results' indices, ascending, when an
    index is at hand; else the log is scanned backwards). Needs the ``full`` log level (result bodies).

    Unknown (``content`` ``None``) when no such event exists, or the last read was cut short; a shell
    command that changed the file in between is invisible to the log, so this is "as the run last saw it".
    """
    scan = reversed([i for i in candidates if i < before]) if candidates is not None else range(before - 1, -1, -1)
    for i in scan:
        event = events[i]
        p = _payload(event)
        if event.get("type") != names.TOOL_RESULT or p.get("kind") != "success":
            continue
        tool = p.get("tool")
        if tool not in ("read_file", "write_file"):
            continue
        result = p.get("result")
        data = result.get("data") if isinstance(result, Mapping) else None
        if not isinstance(data, Mapping) or data.get("path") != path:
            continue
        if tool == "read_file":
            content = data.get("content")
            if data.get("truncated") is True or not isinstance(content, str):
                return Previous(content=None, index=i, source="read_file", reason="the last read of it was cut short")
            return Previous(content=content, index=i, source="read_file", reason=f"as read at event {i}")
        written = _written_content(events, i)
        if written is None:
            return Previous(content=None, index=i, source="write_file", reason="the last write's content is not logged")
        return Previous(content=written, index=i, source="write_file", reason=f"as written at event {i}")
    return Previous(content=None, index=None, source=None, reason="the run never read or wrote it before")


def diff_view(path: str, previous: Previous, new: str, *, context: int = 3, limit: int = DIFF_LINES) -> DiffView:
    """A line diff of ``previous.content`` → ``new`` with ``context`` lines around each change; when the
    previous content is unknown, every line of ``new`` is shown as added, with a note saying why."""
    new_lines = new.splitlines()
    lines: list[DiffLine] = []
    if previous.content is None:
        lines = [DiffLine(op="+", text=text, new=n) for n, text in enumerate(new_lines, start=1)]
        note = f"The previous content of {path} is unknown ({previous.reason}): the written content is shown as added."
        added, removed = len(new_lines), 0
    else:
        old_lines = previous.content.splitlines()
        matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
        added = removed = 0
        for number, group in enumerate(matcher.get_grouped_opcodes(context)):
            if number:
                lines.append(DiffLine(op="…", text=""))
            for tag, i1, i2, j1, j2 in group:
                if tag == "equal":
                    lines.extend(
                        DiffLine(op=" ", text=old_lines[i], old=i + 1, new=j1 + i - i1 + 1) for i in range(i1, i2)
                    )
                    continue
                lines.extend(DiffLine(op="-", text=old_lines[i], old=i + 1) for i in range(i1, i2))
                lines.extend(DiffLine(op="+", text=new_lines[j], new=j + 1) for j in range(j1, j2))
                removed += i2 - i1
                added += j2 - j1
        note = f"Against the content {previous.reason}." if added or removed else f"No change {previous.reason}."
    return DiffView(
        path=path,
        known=previous.content is not None,
        note=note,
        previous_index=previous.index,
        added=added,
        removed=removed,
        lines=lines[:limit],
        clipped=len(lines) > limit,
    )
