"""An operation's *subject*: the few words that say what a call was about or what a return said.

"Coder calls Read file" says nothing; "Coder calls Read file · src/app.py" does. The flow model carries
no arguments (they can be large), so the adapter derives one short line per operation here, from the
event it folds anyway:

- a tool call → its main argument: the path for file tools, the command for ``run_shell`` (the first one
  for the checkers, ``+N`` for the rest), the pattern or query for searches, the URL (scheme, host and
  path only) for fetches, the target role for the context tools;
- a delegation (``role_start``) → the task's first words; a question (``ask_human``) → the question's;
- a tool return → the exit status when the result carries one (``exit 0``), else the non-success kind;
- a role return (``role_finished``) → the summary's first words; an answer → the answer's;
- an observe or terminate → the first words of its ``details``.

Every subject is one line (control characters and runs of whitespace become one space), at most
:data:`MAX_CHARS` characters (cut with ``…``), and ``None`` when there is nothing to say. The arguments
are already redacted in the log; the cap and the URL trimming keep the model small and keep query
strings (which may carry keys) out of it. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

__all__ = ["MAX_CHARS", "call_subject", "clip", "result_subject", "text_subject"]

#: The longest subject, in characters (the ``…`` included).
MAX_CHARS = 80
#: A free-text subject (task, question, summary, answer) keeps only its first words.
TEXT_CHARS = 60

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069]+")
_SPACE = re.compile(r"\s+")

#: The argument that names what a tool call is about, by tool; other tools try :data:`_GENERIC`.
_BY_TOOL: dict[str, tuple[str, ...]] = {
    "run_shell": ("command",),
    "test": ("commands",),
    "typecheck": ("commands",),
    "search_text": ("pattern",),
    "glob_files": ("pattern",),
    "search_run_log": ("query",),
    "web_search": ("query",),
    "search_role_blocks": ("pattern", "targetRole"),
    "fetch_url": ("url",),
    "trigger_interrupt": ("targetRole",),
}
_GENERIC = ("path", "command", "commands", "pattern", "query", "url", "targetRole", "role", "runId")


def clip(value: str, limit: int = MAX_CHARS) -> str | None:
    """``value`` on one line, control characters stripped, at most ``limit`` characters; ``None`` if empty."""
    text = _SPACE.sub(" ", _CONTROL.sub(" ", value)).strip()
    if not text:
        return None
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def text_subject(value: Any) -> str | None:
    """The first words of a free text (a task, a question, a summary, an answer)."""
    return clip(value, TEXT_CHARS) if isinstance(value, str) else None


def _url(value: str) -> str:
    """Scheme, host and path of a URL: never its user info, query or fragment."""
    try:
        parts = urlsplit(value.strip())
    except ValueError:
        return ""
    if not parts.scheme or not parts.hostname:
        return value.split("?", 1)[0].split("#", 1)[0]
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{parts.hostname}{port}{parts.path}"


def _value(key: str, value: Any) -> str | None:
    if isinstance(value, str):
        return clip(_url(value) if key == "url" else value)
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return clip(str(value))
    if isinstance(value, Sequence) and value:
        first = next((s for s in (_value(key, item) for item in value if isinstance(item, str)) if s), None)
        if first is None:
            return None
        more = len(value) - 1
        return f"{clip(first, MAX_CHARS - 6)} +{more}" if more else first
    return None


def call_subject(tool: str, arguments: Any) -> str | None:
    """The subject of a call of ``tool`` with ``arguments`` (the log's raw JSON string, or a mapping)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return None
    if not isinstance(arguments, Mapping):
        return None
    for key in (*_BY_TOOL.get(tool, ()), *_GENERIC):
        if key in arguments:
            subject = _value(key, arguments[key])
            if subject:
                return subject
    return None


def _exit(entry: Any) -> int | None:
    if not isinstance(entry, Mapping):
        return None
    code = entry.get("exitCode")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def result_subject(payload: Mapping[str, Any]) -> str | None:
    """The subject of a ``tool_result`` payload: ``exit N`` (the first failing command's, for a list of
    commands), else the kind when it is not ``success``; ``None`` when the result says neither."""
    kind = payload.get("kind")
    if isinstance(kind, str) and kind != "success":
        return clip(kind)
    result = payload.get("result")
    data = result.get("data") if isinstance(result, Mapping) else None
    if isinstance(data, Mapping):
        code = _exit(data)
        return None if code is None else f"exit {code}"
    if isinstance(data, list):
        codes = [code for code in (_exit(entry) for entry in data) if code is not None]
        if not codes:
            return None
        failing = next((code for code in codes if code != 0), 0)
        return f"exit {failing}" if len(codes) == 1 else f"{len(codes)} commands · exit {failing}"
    return None
