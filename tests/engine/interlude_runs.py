"""Shared by ``test_interludes.py`` and ``test_toolcalls.py``: a role table with handler roles, the handler
settings, a context-pressure usage, and a driver that runs a task to the end against the real sim."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
from tests.engine.harness import FAST

from orchestrator.engine.controls import RunControls
from orchestrator.engine.runner import RunOutcome, RunRequest, RunServices, execute_run
from orchestrator.runlog import read_events

INSPECT = ["list_role_messages", "read_message_window", "search_role_blocks", "recent_role_tool_calls"]
ROLES = {
    "lead": ["agent", "finish"],
    "planner": ["agent", "finish"],
    "coder": ["run_shell", "finish", "ask_human", "context_info", "edit_context"],
    "loop_detector": [*INSPECT, "trigger_interrupt", "finish"],
    "context_manager": ["context_info", "edit_context", *INSPECT, "finish"],
    "inquiry_responder": [*INSPECT, "context_info", "read_run_log", "search_run_log", "finish"],
}
HANDLERS = {"contextHandlerRole": "context_manager", "inquiryHandlerRole": "inquiry_responder"}
PRESSURE = {"promptTokens": 25000, "completionTokens": 5}


async def run(
    settings, workspace: Path, *, effort: str = "standard", controls: list[RunControls] | None = None, **services: Any
):
    """Run to the end; ``controls`` (when given) receives the run's ``RunControls`` as the engine hands it over."""
    services.setdefault("timeouts", FAST)
    request = RunRequest(task="do it", effort=effort)
    outcomes: list[RunOutcome] = []

    async def execute(task_status: trio.TaskStatus[RunControls] = trio.TASK_STATUS_IGNORED) -> None:
        outcomes.append(
            await execute_run(settings, workspace, request, RunServices(**services), task_status=task_status)
        )

    async with trio.open_nursery() as nursery:
        handle = await nursery.start(execute)
        if controls is not None:
            controls.append(handle)
    outcome = outcomes[0]
    return outcome, read_events(outcome.run_dir / "log.jsonl")
