"""Names every layer agrees on, defined once: effort tiers, run-log levels, run-log event types and
the JSON type names that validation messages use.

A leaf module (it imports nothing of the project). The CLI, the HTTP API, the queue, project
settings, the engine and the run log all accept or emit these exact strings; they are part of the
wire, log and checkpoint formats, so a value here never changes meaning.
"""

from __future__ import annotations

from typing import Any, Final, Literal, get_args

__all__ = [
    "AGENT_CALL",
    "ASK_HUMAN",
    "CONTEXT_BUDGET_EXCEEDED",
    "CONTEXT_COMPACTED",
    "CONTEXT_PRESSURE",
    "DEFAULT_EFFORT",
    "DEFAULT_LOG_LEVEL",
    "DEPTH_EXCEEDED",
    "EFFORT_SET",
    "EFFORT_TIERS",
    "HUMAN_ANSWER",
    "IMPLICIT_FINISH",
    "INQUIRY_DROPPED",
    "INTERLUDE_ACTIONS",
    "INTERRUPT",
    "INTERRUPT_RESOLVED",
    "INVALID_TOOL_CALL",
    "LLM_CALL",
    "LLM_CALL_START",
    "LLM_RETRY",
    "LLM_UNAVAILABLE",
    "LOG_LEVELS",
    "OBSERVE",
    "OPERATOR_NOTICE",
    "PLAN_MODIFICATION",
    "ROLE_FINISHED",
    "ROLE_NOT_FOUND",
    "ROLE_START",
    "RUN_RESUMED",
    "RUN_STOPPED",
    "STOP_ORIGINS",
    "TERMINATE",
    "TOOL_CALL",
    "TOOL_RESULT",
    "UNKNOWN_TOOL",
    "Effort",
    "InterludeAction",
    "LogLevel",
    "StopOrigin",
    "json_type",
]

#: A run's quality tier: the entry role is told it, and loop checks scale with it.
Effort = Literal["quick", "standard", "thorough"]
EFFORT_TIERS: tuple[str, ...] = get_args(Effort)
#: The tier of a run nobody chose one for.
DEFAULT_EFFORT: Final = "standard"

#: How much a run log keeps: ``full`` writes every payload; ``standard`` drops the bulky ones.
LogLevel = Literal["full", "standard"]
LOG_LEVELS: tuple[str, ...] = get_args(LogLevel)
#: The level of a run when neither the run, the project nor the deployment sets one.
DEFAULT_LOG_LEVEL: Final = "full"

#: Who stopped a run (``run_stopped.by``): an HTTP client, the MCP runs face, the web UI's Stop button.
StopOrigin = Literal["api", "mcp", "ui"]
STOP_ORIGINS: tuple[str, ...] = get_args(StopOrigin)
#: How a handler interlude ended: the ``action`` of ``interrupt_resolved``. A context interlude is
#: ``compacted`` only when its handler ended ``success`` and the target's history got smaller, else
#: ``failed``; a loop check ends ``continue``, ``redirect`` or ``abort``; an inquiry ``answered`` or
#: ``failed``.
InterludeAction = Literal["compacted", "failed", "continue", "redirect", "abort", "answered"]
INTERLUDE_ACTIONS: tuple[str, ...] = get_args(InterludeAction)

# --- run-log event types: the ``type`` of each ``log.jsonl`` line ----------------------------------

ROLE_START: Final = "role_start"
EFFORT_SET: Final = "effort_set"
ROLE_FINISHED: Final = "role_finished"
AGENT_CALL: Final = "agent_call"
LLM_CALL_START: Final = "llm_call_start"
LLM_RETRY: Final = "llm_retry"
LLM_CALL: Final = "llm_call"
TOOL_CALL: Final = "tool_call"
TOOL_RESULT: Final = "tool_result"
DEPTH_EXCEEDED: Final = "depth_exceeded"
ROLE_NOT_FOUND: Final = "role_not_found"
CONTEXT_COMPACTED: Final = "context_compacted"
CONTEXT_PRESSURE: Final = "context_pressure"
LLM_UNAVAILABLE: Final = "llm_unavailable"
CONTEXT_BUDGET_EXCEEDED: Final = "context_budget_exceeded"
IMPLICIT_FINISH: Final = "implicit_finish"
UNKNOWN_TOOL: Final = "unknown_tool"
INVALID_TOOL_CALL: Final = "invalid_tool_call"
INTERRUPT: Final = "interrupt"
INTERRUPT_RESOLVED: Final = "interrupt_resolved"
INQUIRY_DROPPED: Final = "inquiry_dropped"
PLAN_MODIFICATION: Final = "plan_modification"
OBSERVE: Final = "observe"
ASK_HUMAN: Final = "ask_human"
HUMAN_ANSWER: Final = "human_answer"
OPERATOR_NOTICE: Final = "operator_notice"
RUN_RESUMED: Final = "run_resumed"
#: The operator stopped the run: its root scope was cancelled; the run ends ``cancelled``.
RUN_STOPPED: Final = "run_stopped"
#: A handler ended its target role. The flow view and the log window read it; no writer emits it yet.
TERMINATE: Final = "terminate"


# --- JSON type names ---------------------------------------------------------------------------------


def json_type(value: Any, *, integer: bool = False) -> str:
    """The JSON Schema type name of a decoded JSON value, as "expected X, got Y" messages say it.

    ``null``, ``boolean``, ``number``, ``string``, ``array``, ``object``; with ``integer``, a whole
    number (``3`` or ``3.0``) is ``integer``. A value JSON cannot hold is named by its Python type.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        whole = isinstance(value, int) or value.is_integer()
        return "integer" if integer and whole else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
