"""Helpers for the flow tests: terse synthetic logs and compact views of a model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from orchestrator.flow import InteractionModel, Operation

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def at(second: float) -> str:
    """The timestamp ``second`` seconds after T0, as the engine writes it."""
    return (T0 + timedelta(seconds=second)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def log(*entries: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Events one second apart: ``log(("role_start", {...}), ...)``; event ``i`` is at ``at(i)``."""
    return [{"timestamp": at(i), "type": kind, "payload": payload} for i, (kind, payload) in enumerate(entries)]


def start(role: str, n: int = 1, depth: int = 0, task: str = "t", **extra: Any) -> tuple[str, dict[str, Any]]:
    return "role_start", {"role": role, "roleId": f"{role}-{depth}-{n}", "depth": depth, "task": task, **extra}


def done(role: str, n: int = 1, depth: int = 0, status: str = "success", **extra: Any) -> tuple[str, dict[str, Any]]:
    payload = {"role": role, "roleId": f"{role}-{depth}-{n}", "depth": depth, "status": status, "summary": "s"}
    return "role_finished", {**payload, **extra}


def tcall(role: str, tool: str, arguments: str = "{}") -> tuple[str, dict[str, Any]]:
    return "tool_call", {"role": role, "tool": tool, "arguments": arguments}


def tresult(role: str, tool: str, kind: str = "success", **extra: Any) -> tuple[str, dict[str, Any]]:
    return "tool_result", {"role": role, "tool": tool, "kind": kind, **extra}


def think(role: str) -> tuple[str, dict[str, Any]]:
    return "llm_call_start", {"role": role}


def usage(role: str, total: int | None = None, cached: int | None = None, **counts: int) -> tuple[str, dict[str, Any]]:
    numbers: dict[str, int] = dict(counts)
    if total is not None:
        numbers["totalTokens"] = total
    if cached is not None:
        numbers["cachedPromptTokens"] = cached
    return "llm_call", {"role": role, "messageCount": 3, "usage": numbers}


def interrupt(trigger: str = "loop_check", **extra: Any) -> tuple[str, dict[str, Any]]:
    return "interrupt", {"trigger": trigger, "handler": "h", "target": "x", **extra}


def shape(op: Operation) -> tuple[str, str, str, str]:
    return op.kind, op.stack, op.source, op.destination


def shapes(model: InteractionModel) -> list[tuple[str, str, str, str]]:
    return [shape(op) for op in model.operations]


def ids(model: InteractionModel) -> list[str]:
    return [p.id for p in model.participants]


# --- random logs over a small vocabulary (hypothesis) ----------------------------------------------

ROLES = ["o", "c", "h"]
_role = st.sampled_from(ROLES)
_payloads: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "role_start": st.fixed_dictionaries(
        {"role": _role, "roleId": st.sampled_from(["o-0-1", "c-1-2", "c-1-3", "h-0-4"])}
    ),
    "role_finished": st.fixed_dictionaries(
        {"role": _role, "status": st.sampled_from(["success", "error", "needs_clarification"])},
        optional={"roleId": st.sampled_from(["o-0-1", "c-1-2", "x"])},
    ),
    "tool_call": st.fixed_dictionaries({"role": _role, "tool": st.sampled_from(["t", "u", "agent", "finish"])}),
    "tool_result": st.fixed_dictionaries(
        {
            "role": _role,
            "tool": st.sampled_from(["t", "u", "ask_human"]),
            "kind": st.sampled_from(["success", "timeout"]),
        }
    ),
    "llm_call_start": st.fixed_dictionaries({"role": _role}),
    "llm_call": st.fixed_dictionaries(
        {"role": _role, "usage": st.fixed_dictionaries({"totalTokens": st.integers(0, 9)})}
    ),
    "interrupt": st.fixed_dictionaries(
        {"trigger": st.sampled_from(["loop_check", "inquiry"])}, optional={"message": st.text(max_size=3)}
    ),
    "interrupt_resolved": st.just({"action": "continue"}),
    "observe": st.fixed_dictionaries({"role": _role, "details": st.just("x")}),
    "terminate": st.fixed_dictionaries({"role": _role}),
    "ask_human": st.fixed_dictionaries({"id": st.sampled_from(["q1", "q2"]), "question": st.just("?")}),
    "human_answer": st.fixed_dictionaries({"id": st.sampled_from(["q1", "q2"]), "answer": st.just("!")}),
    "run_resumed": st.just({"runId": "r", "resumedFrames": 1}),
    "effort_set": st.just({"effort": "quick"}),
}
_event = st.sampled_from(sorted(_payloads)).flatmap(lambda kind: st.tuples(st.just(kind), _payloads[kind]))
#: Logs of up to 40 events over every kind the adapter reads, payloads sometimes partial.
random_logs = st.lists(_event, max_size=40).map(lambda entries: log(*entries))
