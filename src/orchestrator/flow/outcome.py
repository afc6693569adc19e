"""One classifier of what a tool result or a result card means for the person reading the run.

A tool result of kind ``success`` can still be a failure: ``run_shell`` reports a command that exited 1
(or 127, "command not found") as a successful *call*. Every answer that badges an outcome — the flow
model's returns, the call tree, and through them the web views — asks ``classify_tool_result`` or
``classify_card``, so there is one rule:

- ``ok``: the tool did what was asked (exit 0, or a result with no exit status).
- ``warn`` (amber): the tool ran and reported a problem the model can act on — a non-zero exit,
  ``not_found``, ``invalid_arguments``, ``already_exists`` and other argument-level refusals.
- ``fail`` (red): the call did not get to do its job — exit 127 (command not found), a process ended by
  a signal, ``timeout``, ``unknown_tool``, ``unavailable``, any other error kind, or an error card.

Pure: no I/O; inputs are the log payload mappings as read from ``log.jsonl``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

__all__ = ["OK", "WARN_KINDS", "Severity", "Verdict", "classify_card", "classify_tool_message", "classify_tool_result"]

Severity = Literal["ok", "warn", "fail"]

#: Error kinds the model can fix by changing its arguments: amber, not red.
WARN_KINDS = frozenset({"not_found", "invalid_arguments", "invalid_tool_call", "permission_denied"})
_NOT_FOUND_EXIT = 127


class Verdict(NamedTuple):
    """``severity`` and a short reason (``exit 1``, ``not_found``) — ``""`` when ok."""

    severity: Severity
    note: str

    @property
    def ok(self) -> bool:
        return self.severity == "ok"


OK = Verdict("ok", "")


def _exit_verdict(entry: Mapping[str, Any]) -> Verdict | None:
    """The verdict of one ``{command, exitCode, …}`` entry; ``None`` when it carries no exit status."""
    if "exitCode" not in entry:
        return None
    if entry.get("timedOut") is True:
        return Verdict("fail", "timeout")
    code = entry.get("exitCode")
    if code is None:
        return Verdict("fail", "killed by a signal")
    if not isinstance(code, int) or isinstance(code, bool):
        return None
    if code == 0:
        return OK
    if code == _NOT_FOUND_EXIT:
        return Verdict("fail", "exit 127: command not found")
    return Verdict("warn", f"exit {code}")


def _data_verdict(data: Any) -> Verdict:
    """A successful call's data: a shell entry, or a checker's list of entries (the first failure)."""
    if isinstance(data, Mapping):
        return _exit_verdict(data) or OK
    if isinstance(data, list):
        for number, entry in enumerate(data, start=1):
            if isinstance(entry, Mapping):
                verdict = _exit_verdict(entry)
                if verdict is not None and not verdict.ok:
                    prefix = f"command {number}: " if len(data) > 1 else ""
                    return Verdict(verdict.severity, prefix + verdict.note)
    return OK


def classify_tool_result(payload: Mapping[str, Any]) -> Verdict:
    """The verdict of a ``tool_result`` payload (``{tool, kind, result?}``).

    ``result`` is absent at the ``standard`` log level: then only ``kind`` speaks."""
    kind = payload.get("kind")
    result = payload.get("result")
    if not isinstance(kind, str):
        return Verdict("fail", "malformed result")
    if kind != "success":
        return Verdict("warn" if kind in WARN_KINDS else "fail", kind)
    if isinstance(result, Mapping):
        return _data_verdict(result.get("data"))
    return OK


def classify_tool_message(content: Any) -> Verdict | None:
    """The verdict of a ``tool`` conversation message (the encoded ``ToolResult`` the model read);
    ``None`` when the content is not one (e.g. cut short by the tool-output limit)."""
    if not isinstance(content, str) or not content.startswith("{"):
        return None
    try:
        result = json.loads(content)
    except (ValueError, RecursionError):
        return None
    if not isinstance(result, Mapping) or not isinstance(result.get("kind"), str):
        return None
    return classify_tool_result({"kind": result["kind"], "result": result})


def classify_card(status: Any, error: Any = None) -> Verdict:
    """The verdict of a role's result card (``role_finished`` status and error)."""
    if status != "error":
        return OK
    kind = error.get("kind") if isinstance(error, Mapping) else None
    return Verdict("fail", kind if isinstance(kind, str) and kind else "failed")
