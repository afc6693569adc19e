"""The interim briefing (the continuation block is ``engine.runner``'s: ``tests/engine/test_runner.py``)."""

from __future__ import annotations

from typing import Any

from orchestrator.conversation import ResultCard
from orchestrator.engine.runfolder import RunMeta
from orchestrator.service.briefing import BRIEFING_RUN_LIMIT, cancelled_since, completed_since, interim_briefing
from orchestrator.service.queue import QueueItem

QUEUED = "2024-05-01T10:00:00.000Z"


def meta(n: int, status: str = "success", *, end: str | None = None, summary: str | None = None, **f: Any) -> RunMeta:
    run_id = f"run-20240501-{n:06d}"
    card = ResultCard(status=status, summary=summary) if summary is not None else None  # type: ignore[arg-type]
    return RunMeta(
        run_id=run_id,
        task=f.pop("task", f"task {n}"),
        status=status,
        effort="standard",
        log_level="full",
        guild_path="/g",
        start_time="2024-05-01T09:00:00.000Z",
        end_time=end,
        result=card,
        **f,
    )


def item(item_id: str, status: str = "waiting", **fields: Any) -> QueueItem:
    return QueueItem(id=item_id, task=fields.pop("task", f"task {item_id}"), status=status, queued_at=QUEUED, **fields)


# --- completed_since / cancelled_since ---------------------------------------------------------------


def test_completed_since_keeps_terminal_runs_ended_after_queued_at_sorted_by_end() -> None:
    metas = [
        meta(3, end="2024-05-01T12:00:00.000Z"),
        meta(1, end="2024-05-01T09:59:59.999Z"),  # before
        meta(2, "error", end="2024-05-01T11:00:00+00:00"),  # other ISO spelling
        meta(4, "running"),  # not terminal
        meta(5, "interrupted", end="2024-05-01T10:30:00.000Z"),
        meta(6, end=QUEUED),  # not strictly after
        meta(7, end="garbage"),
    ]
    assert [m.run_id for m in completed_since(metas, QUEUED)] == [
        "run-20240501-000005",
        "run-20240501-000002",
        "run-20240501-000003",
    ]


def test_completed_since_keeps_the_last_twenty() -> None:
    metas = [meta(n, end=f"2024-05-01T11:{n:02d}:00.000Z") for n in range(25)]
    kept = completed_since(reversed(metas), QUEUED)
    assert len(kept) == BRIEFING_RUN_LIMIT == 20
    assert [m.run_id for m in kept] == [m.run_id for m in metas[5:]]


def test_completed_since_with_an_unparseable_queued_at_is_empty() -> None:
    assert completed_since([meta(1, end="2024-05-01T11:00:00Z")], "whenever") == []


def test_cancelled_since_lists_tasks_cancelled_after_queued_at() -> None:
    items = [
        item("a", "cancelled", settled_at="2024-05-01T11:00:00.000Z"),
        item("b", "cancelled", settled_at="2024-05-01T09:00:00.000Z"),
        item("c", "done", settled_at="2024-05-01T11:00:00.000Z"),
        item("d", "cancelled", settled_at="2024-05-01T10:30:00.000Z"),
        item("e"),
    ]
    assert cancelled_since(items, QUEUED) == ["task d", "task a"]
    assert cancelled_since(["already chosen"], QUEUED) == ["already chosen"]


# --- the interim briefing ------------------------------------------------------------------------------


def test_interim_briefing_full_text() -> None:
    metas = [
        meta(1, end="2024-05-01T11:00:00.000Z", summary="Added the login form."),
        meta(2, "error", end="2024-05-01T11:30:00.000Z", summary=""),
        meta(3, "interrupted", end="2024-05-01T11:45:00.000Z", task=""),
    ]
    cancelled = [item("x", "cancelled", task="rename the repo", settled_at="2024-05-01T10:10:00.000Z")]
    assert interim_briefing(QUEUED, metas, cancelled) == "\n".join(
        [
            "[Platform briefing — this task waited in the queue]",
            f"Queued at {QUEUED}.",
            "Runs completed meanwhile:",
            "- run-20240501-000001: Added the login form.",
            "- run-20240501-000002: task 2",
            "- run-20240501-000003: (no summary)",
            "Queue items cancelled meanwhile:",
            "- rename the repo",
            "The workspace may have changed since this task was queued: check its current state before acting, "
            "and if a run above already did this task, say so (naming that run) instead of redoing it.",
            "[End of briefing]",
        ]
    )


def test_interim_briefing_with_nothing_meanwhile() -> None:
    text = interim_briefing(QUEUED, [], [])
    assert "Runs completed meanwhile: none." in text
    assert "Queue items cancelled meanwhile: none." in text
    assert "paused to ask" not in text and "operator answered" not in text


def test_interim_briefing_on_an_answered_park_quotes_question_and_answer() -> None:
    text = interim_briefing(QUEUED, [], [], question="Which database?", answer="Postgres 16")
    assert "Before this run, the task paused to ask: Which database?" in text
    assert "The operator answered: Postgres 16" in text
    assert "Which database" not in interim_briefing(QUEUED, [], [], question="Which database?")


def test_interim_briefing_flattens_and_bounds_each_line() -> None:
    long = "line one\nline two " + "x" * 1000
    text = interim_briefing(QUEUED, [meta(1, end="2024-05-01T11:00:00Z", summary=long)], [])
    line = next(row for row in text.splitlines() if row.startswith("- run-"))
    assert "line one line two" in line and line.endswith("…") and len(line) < 340
