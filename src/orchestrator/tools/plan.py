"""``read_plan`` / ``write_plan``: the sanctioned way to a run's ``plan.md`` inside ``.orchestration``.

The plan lives at ``<workspace>/.orchestration/runs/<run_id>/plan.md``. ``write_plan`` replaces the
current run's plan atomically (no path parameter); ``read_plan`` reads the current run's plan or,
given ``runId``, another run's, capped with a ``truncated`` flag and the full length.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from orchestrator.conversation import ToolResult
from orchestrator.fsutil import atomic_write
from orchestrator.tools.base import ToolContext, ToolError, success
from orchestrator.tools.paths import ORCHESTRATION, workspace_root

__all__ = ["PLAN_CAP", "PLAN_FILE", "current_run_id", "plan_path", "read_plan", "write_plan"]

PLAN_FILE = "plan.md"
#: read_plan returns at most this many characters of a plan.
PLAN_CAP = 50_000
#: Run ids are folder names: no separators, no leading dot, so ``runId`` cannot leave ``runs/``.
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def current_run_id(ctx: ToolContext) -> str | None:
    """The calling run's id (``ctx.run_id``); ``None`` outside a run."""
    return ctx.run_id or None


def plan_path(workspace: Path | str, run_id: str) -> Path:
    """Where ``run_id``'s plan lives. Raises ``ToolError("invalid_arguments")`` for a malformed id."""
    if not _RUN_ID.match(run_id):
        raise ToolError("invalid_arguments", f"runId {run_id!r} is not a run id (e.g. run-20250101-120000)")
    return Path(workspace_root(workspace)) / ORCHESTRATION / "runs" / run_id / PLAN_FILE


async def read_plan(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """``{runId?}`` → ``{runId, content, truncated, total}``; no plan (or no such run) → ``unavailable``."""
    requested = arguments.get("runId")
    try:
        if requested is not None and not isinstance(requested, str):
            raise ToolError("invalid_arguments", "runId must be a string")
        run_id = requested or current_run_id(ctx)
        if run_id is None:
            raise ToolError("unavailable", "there is no current run to read a plan from; pass runId")
        path = plan_path(ctx.workspace, run_id)
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            where = "this run" if requested is None else f"run {run_id}"
            if not path.parent.is_dir():
                raise ToolError("unavailable", f"no run {run_id} exists in this workspace") from None
            raise ToolError("unavailable", f"{where} has no plan yet (write_plan creates it)") from None
        except OSError as exc:
            raise ToolError("unavailable", f"the plan of run {run_id} cannot be read ({exc.strerror})") from None
    except ToolError as exc:
        return exc.result()
    return success({"runId": run_id, "content": text[:PLAN_CAP], "truncated": len(text) > PLAN_CAP, "total": len(text)})


async def write_plan(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """``{content}`` → ``{runId, bytes}``: replaces the current run's plan in full, atomically."""
    content = arguments.get("content")
    try:
        if not isinstance(content, str):
            raise ToolError("invalid_arguments", "content must be a string")
        run_id = current_run_id(ctx)
        if run_id is None:
            raise ToolError("unavailable", "there is no current run to write a plan for")
        path = plan_path(ctx.workspace, run_id)
        payload = content.encode("utf-8", "surrogatepass")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, payload)
        except OSError as exc:
            raise ToolError("unavailable", f"the plan cannot be written ({exc.strerror})") from None
    except ToolError as exc:
        return exc.result()
    return success({"runId": run_id, "bytes": len(payload)})
