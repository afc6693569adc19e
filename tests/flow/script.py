"""A tiny builder for synthetic run logs, shaped exactly like the engine's events.

Used by the scenarios (``fixtures.py``) so they carry real payloads (``roleId``, ``depth``,
``parent``, usage, raw argument strings) one second apart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["Instance", "Script"]

_EPOCH = datetime(2026, 1, 1, 9, 0, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Instance:
    """A role instance the script started."""

    role: str
    role_id: str
    depth: int
    parent: Instance | None


class Script:
    """Appends events to ``events`` with increasing timestamps (one second apart)."""

    def __init__(self, start: datetime = _EPOCH) -> None:
        self.events: list[dict[str, Any]] = []
        self._start = start
        self._counter = 0

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        moment = self._start + timedelta(seconds=len(self.events))
        timestamp = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        self.events.append({"timestamp": timestamp, "type": kind, "payload": payload})

    # --- roles --------------------------------------------------------------------------------------

    def start(self, role: str, task: str, parent: Instance | None = None) -> Instance:
        """``role_start``; without ``parent`` the instance is a depth-0 root (entry or handler)."""
        self._counter += 1
        depth = 0 if parent is None else parent.depth + 1
        instance = Instance(role, f"{role}-{depth}-{self._counter}", depth, parent)
        payload: dict[str, Any] = {"role": role, "roleId": instance.role_id, "depth": depth, "task": task}
        if parent is not None:
            payload.update(parent=parent.role, parentRoleId=parent.role_id)
        self.emit("role_start", payload)
        return instance

    def finish(self, who: Instance, summary: str, status: str = "success", error: str | None = None) -> None:
        payload: dict[str, Any] = {
            "role": who.role,
            "roleId": who.role_id,
            "depth": who.depth,
            "status": status,
            "summary": summary,
        }
        if error is not None:
            payload["error"] = {"kind": error}
        if who.parent is not None:
            payload["parent"] = who.parent.role
        self.emit("role_finished", payload)

    def think(self, who: Instance) -> None:
        """``llm_call_start``: the instance's turn is in flight."""
        self.emit("llm_call_start", {"role": who.role, "roleId": who.role_id})

    def reply(self, who: Instance, prompt: int, completion: int, cached: int = 0) -> None:
        """``llm_call`` (standard level: no bodies) with its usage."""
        usage = {
            "promptTokens": prompt,
            "completionTokens": completion,
            "totalTokens": prompt + completion,
            "cachedPromptTokens": cached,
        }
        self.emit("llm_call", {"role": who.role, "roleId": who.role_id, "messageCount": 3, "usage": usage})

    # --- tools and humans ---------------------------------------------------------------------------

    def tool_call(self, who: Instance, tool: str, **arguments: Any) -> None:
        payload = {"role": who.role, "tool": tool, "arguments": json.dumps(arguments), "roleId": who.role_id}
        self.emit("tool_call", payload)

    def tool_result(self, who: Instance, tool: str, data: Any = None, *, error: tuple[str, str] | None = None) -> None:
        if error is None:
            result: dict[str, Any] = {"kind": "success", "data": data}
        else:
            result = {"kind": error[0], "message": error[1]}
        payload = {"role": who.role, "tool": tool, "kind": result["kind"], "result": result, "roleId": who.role_id}
        self.emit("tool_result", payload)

    def tool(self, who: Instance, tool: str, data: Any = None, **arguments: Any) -> None:
        """A successful tool call and its result."""
        self.tool_call(who, tool, **arguments)
        self.tool_result(who, tool, data)

    def ask(self, who: Instance, question_id: str, question: str, context: str | None = None) -> None:
        payload: dict[str, Any] = {"id": question_id, "question": question, "role": who.role, "roleId": who.role_id}
        if context is not None:
            payload["context"] = context
        self.emit("ask_human", payload)

    def answer(self, question_id: str, answer: str) -> None:
        self.emit("human_answer", {"id": question_id, "answer": answer})

    # --- interrupts ---------------------------------------------------------------------------------

    def interrupt(self, trigger: str, handler: str, target: Instance, message: str | None = None) -> None:
        payload: dict[str, Any] = {"trigger": trigger, "handler": handler, "target": target.role_id}
        if message is not None:
            payload["message"] = message
        self.emit("interrupt", payload)

    def observe(self, target: Instance, tool: str) -> None:
        self.emit("observe", {"role": target.role, "roleId": target.role_id, "details": tool})

    def terminate(self, target: Instance, details: str) -> None:
        """``terminate`` as the seed shapes it: the role name only (no instance id)."""
        self.emit("terminate", {"role": target.role, "details": details})
