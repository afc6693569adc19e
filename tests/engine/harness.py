"""Helpers for driving the real engine against the real sim model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.config import Settings
from orchestrator.engine.run import StreamDelta
from orchestrator.engine.runner import RunOutcome, RunRequest, RunServices, execute_run
from orchestrator.llm import LlmTimeouts
from orchestrator.runlog import read_events

#: Quick retries so failure paths finish in milliseconds; stall bounds stay generous.
FAST = LlmTimeouts(headers_seconds=5.0, idle_seconds=5.0, attempts=3, backoff_seconds=0.01)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def finish(summary: str = "done", status: str = "success", **extra: Any) -> dict[str, Any]:
    return call("finish", status=status, summary=summary, **extra)


def turn(role: str | None = None, *calls: dict[str, Any], last: str | None = None, **fields: Any) -> dict[str, Any]:
    """A script turn answering ``role`` (matched on its system prompt) with ``calls``."""
    expect: dict[str, Any] = {}
    if role:
        expect["systemContains"] = f"You are the {role}."
    if last:
        expect["lastInputContains"] = last
    entry: dict[str, Any] = {**fields}
    if expect:
        entry["expect"] = expect
    if calls:
        entry["toolCalls"] = list(calls)
    return entry


async def run_task(
    settings: Settings,
    workspace: Path,
    task: str = "do the thing",
    *,
    effort: str = "standard",
    log_level: str = "full",
    timeouts: LlmTimeouts = FAST,
    deltas: list[StreamDelta] | None = None,
) -> tuple[RunOutcome, list[dict[str, Any]]]:
    services = RunServices(timeouts=timeouts, on_delta=deltas.append if deltas is not None else None)
    request = RunRequest(task=task, effort=effort, log_level=log_level)  # type: ignore[arg-type]
    outcome = await execute_run(settings, workspace, request, services)
    return outcome, read_events(outcome.run_dir / "log.jsonl")


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e["payload"] for e in events if e["type"] == kind]
