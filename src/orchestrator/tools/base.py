"""What every tool shares: the call context, the outcome value and the result constructors.

A tool never raises into the engine: every failure is a ``ToolResult`` with an error ``kind``
(``invalid_arguments``, ``timeout``, ``unavailable``, ``permission_denied`` …).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from msgspec import UNSET

from orchestrator.config.redaction import Redactor
from orchestrator.conversation import ResultCard, ToolResult

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


@dataclass(frozen=True, kw_only=True)
class ToolContext:
    """What a native tool may see of its call. The engine fills all but ``env``, ``secrets_dir`` and
    ``fetch_exempt_addresses`` (``toolcalls.tool_context``); those replace process-wide inputs and are
    set only by tests and benchmarks."""

    #: the workspace root every file tool is contained to
    workspace: Path
    #: the call's timeout (the engine's scope around the call enforces it)
    timeout_seconds: float
    #: the calling run's id (``read_plan``/``write_plan`` address its plan); ``None`` outside a run
    run_id: str | None = None
    #: the calling role instance's id (``<role>-<depth>-<counter>``); ``None`` outside a run
    role_id: str | None = None
    #: the executor's default tool timeout: ``typecheck``/``test`` apply it per command
    default_tool_timeout_seconds: float | None = None
    #: replaces ``os.environ`` for the tools' subprocesses and the web tools' settings
    env: Mapping[str, str] | None = None
    #: replaces ``/run/secrets`` for the web tools' keys
    secrets_dir: Path | None = None
    #: addresses the direct fetch may reach although they are not public
    fetch_exempt_addresses: tuple[str, ...] = ()
    #: the deployment's ``toolEnvironment``: variables subprocesses get besides the base list
    tool_env_allow: tuple[str, ...] = ()
    #: the run's redactor: ``fetch_url`` refuses a request that carries a secret it knows (``None``: only
    #: the credential shapes)
    redactor: Redactor | None = None
    #: the deployment's ``fetchUrl.allowHosts``: the only hosts ``fetch_url`` may reach (``None``: any public one)
    fetch_allow_hosts: tuple[str, ...] | None = None


#: A native tool: ``await tool(ctx, arguments) -> ToolResult``. Runs inside the tool's timeout scope;
#: cancellation must release whatever it holds (kill subprocesses) before propagating.
NativeTool = Callable[[ToolContext, dict[str, Any]], Awaitable[ToolResult]]
