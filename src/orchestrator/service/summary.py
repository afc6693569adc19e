"""``summary.txt``: a one-line description of a run for the run list (best effort, never affects a run).

A task-only line is written as soon as the run starts; at completion the configured model is asked
for one line from the task, the interrupt history and the result, with a derived line as fallback
when the model does not answer in time.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import trio

from orchestrator import vocabulary as names
from orchestrator.config import Settings
from orchestrator.conversation import Message, ResultCard
from orchestrator.fsutil import atomic_write
from orchestrator.llm import LlmClient, LlmTimeouts, Turn, build_request
from orchestrator.runlog.reader import decode_line

__all__ = ["derived_summary", "first_line", "interrupt_history", "summarize_run", "write_summary"]

SUMMARY_CHARS = 120
_PROMPT = (
    "You write one-line summaries of finished agent runs for a run list. Reply with a single plain line of at "
    "most 15 words: what was asked and how it ended. No preamble, no quotes, no tool calls."
)


def first_line(text: str, limit: int = SUMMARY_CHARS) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def derived_summary(task: str, card: ResultCard | None) -> str:
    """The fallback line: the task's first line, and the outcome when there is one."""
    head = first_line(task, 80)
    if card is None:
        return head
    return first_line(f"{head} — {card.status}: {first_line(card.summary, 60)}")


def interrupt_history(run_dir: Path) -> list[str]:
    """The operator interrupts of a run (inquiries and plan modifications), oldest first, from its log.

    A byte scan: only the few lines that can be such events are decoded."""
    history: list[str] = []
    try:
        with (run_dir / "log.jsonl").open("rb") as handle:
            for line in handle:
                if b'"interrupt"' not in line and b'"plan_modification"' not in line:
                    continue
                event = decode_line(line)
                payload = event.get("payload") if event is not None else None
                if event is None or not isinstance(payload, dict) or not isinstance(payload.get("message"), str):
                    continue
                if event["type"] == names.INTERRUPT and payload.get("trigger") == "inquiry":
                    history.append(f"inquiry: {first_line(payload['message'])}")
                elif event["type"] == names.PLAN_MODIFICATION:
                    history.append(f"plan modification: {first_line(payload['message'])}")
    except OSError:
        pass
    return history


def write_summary(run_dir: Path, line: str) -> None:
    atomic_write(run_dir / "summary.txt", (first_line(line) + "\n").encode(), durable=False)


async def summarize_run(
    settings: Settings,
    run_dir: Path,
    task: str,
    card: ResultCard | None,
    interrupts: list[str],
    *,
    budget_seconds: float = 20,
) -> str:
    """Ask the model for the line, fall back to ``derived_summary``; write it; return it."""
    line = derived_summary(task, card)
    model = settings.deployment.model
    facts = {"task": first_line(task, 300), "interrupts": interrupts[-5:]}
    if card is not None:
        facts["result"] = {"status": card.status, "summary": first_line(card.summary, 300)}
    request = build_request(
        model=model.name or "",
        history=[
            Message(role="system", content=_PROMPT),
            Message(role="user", content=msgspec.json.encode(facts).decode()),
        ],
        tools=[],
        max_output_tokens=min(256, model.generation.max_tokens),
        temperature=0.2,
    )
    timeouts = LlmTimeouts(headers_seconds=budget_seconds, idle_seconds=budget_seconds, attempts=1)
    with trio.move_on_after(budget_seconds):
        try:
            async with LlmClient(model.api_base, api_key=settings.api_key, timeouts=timeouts) as client:
                outcome = await client.complete(request)
        except Exception:  # best effort: the summary never fails anything
            outcome = None
        if isinstance(outcome, Turn) and outcome.content.strip() and not outcome.tool_calls:
            line = first_line(outcome.content)
    write_summary(run_dir, line)
    return line
