"""What every tool shares: the call context, the outcome value and the result constructors.

A tool never raises into the engine: every failure is a ``ToolResult`` with an error ``kind``
(``invalid_arguments``, ``timeout``, ``unavailable``, ``permission_denied`` …).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from orchestrator.runlog.events import ResultCard, ToolResult

if TYPE_CHECKING:
    from orchestrator.engine.state import RoleFrame

__all__ = ["NativeTool", "ToolContext", "ToolError", "ToolOutcome", "failure", "success"]


def success(data: Any) -> ToolResult:
    return ToolResult(kind="success", data=data)


def failure(kind: str, message: str, details: Any = UNSET) -> ToolResult:
    return ToolResult(kind=kind, message=message, details=details)


class ToolError(Exception):
    """Raised inside a tool's own code to stop with an error result; the tool turns it into one.

    Never crosses into the engine: each native tool catches it at its boundary (``except ToolError as
    exc: return exc.result()``).
    """

    def __init__(self, kind: str, message: str, details: Any = UNSET) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.details = details

    def result(self) -> ToolResult:
        return failure(self.kind, self.message, self.details)


@dataclass
class ToolOutcome:
    """A tool's result, plus an optional card that ends the calling role (e.g. ``compaction_failed``)."""

    result: ToolResult
    terminate: ResultCard | None = None


@dataclass
class ToolContext:
    """What a tool may see: the workspace, the calling frame, the timeout and the run's services."""

    workspace: Path
    frame: RoleFrame
    timeout_seconds: float
    services: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


#: A native tool: ``await tool(ctx, arguments) -> ToolResult``. Runs inside the tool's timeout scope;
#: cancellation must release whatever it holds (kill subprocesses) before propagating.
NativeTool = Callable[[ToolContext, dict[str, Any]], Awaitable[ToolResult]]
