"""The project's error tree and the closed set of result-card error kinds.

    OrchestratorError            root; ``kind`` is a stable, API-visible string
    ├── ConfigError              invalid deployment / guild / environment (exit code 2)
    └── LlmUnavailable           the model endpoint failed every attempt

Tool failures never raise into the engine: they are ``ToolResult`` error values (see
``orchestrator.tools``). Misuse of our own APIs stays a ``RuntimeError``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

__all__ = [
    "ERROR_KINDS",
    "ConfigError",
    "ErrorKind",
    "LlmUnavailable",
    "OrchestratorError",
]

#: The closed set of ``error.kind`` values a result card may carry.
ErrorKind = Literal[
    "invalid_tool_call",
    "unknown_tool",
    "invalid_arguments",
    "timeout",
    "llm_unavailable",
    "unavailable",
    "context_budget_exceeded",
    "context_handoff",
    "tool_budget_exceeded",
    "loop_detected",
    "interrupted",
    "compaction_failed",
    "incomplete",
]
ERROR_KINDS: frozenset[str] = frozenset(ErrorKind.__args__)  # type: ignore[attr-defined]


class OrchestratorError(Exception):
    """Root of the project's errors. ``kind`` is API: tests assert it, clients branch on it."""

    kind: ClassVar[str] = "unavailable"

    def __init__(self, message: str, **detail: object) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class ConfigError(OrchestratorError):
    """Startup configuration is invalid. ``problems`` lists every finding, each naming its key."""

    kind = "invalid_configuration"

    def __init__(self, problems: list[str] | str) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("; ".join(self.problems))


class LlmUnavailable(OrchestratorError):
    """The model endpoint did not produce a usable turn after every retry."""

    kind = "llm_unavailable"
