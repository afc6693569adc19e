"""``engine.runner``: the continuation check and its block, ``prepare_run`` with a checked continuation,
and the question a ``needs_clarification`` outcome carries (a parked run: ``test_parking.py``; the
``RunControls`` hand-over: ``test_interludes.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.engine.harness import FAST, finish, turn
from tests.helpers import make_settings

from orchestrator.conversation import CardError, ResultCard
from orchestrator.engine.runfolder import RunMeta, read_meta, runs_root, write_meta
from orchestrator.engine.runner import (
    Continuation,
    InvalidContinuation,
    RunRequest,
    RunServices,
    continuation_briefing,
    execute_run,
    prepare_run,
)

PRIOR = "run-20240501-000001"


def _prior(workspace: Path, status: str = "error", *, summary: str | None = None, error: str | None = None) -> None:
    run_dir = runs_root(workspace) / PRIOR
    run_dir.mkdir(parents=True)
    meta = RunMeta(
        run_id=PRIOR,
        task="fix it",
        status=status,
        effort="standard",
        log_level="full",
        guild_path="/g",
        start_time="2024-05-01T09:00:00.000Z",
        result=ResultCard(status="error", summary=summary) if summary is not None else None,
        error=CardError(kind="interrupted", message=error) if error is not None else None,
    )
    write_meta(run_dir, meta)


def test_the_continuation_block_quotes_the_prior_task_and_result(tmp_path: Path) -> None:
    _prior(tmp_path, summary="")
    assert continuation_briefing(tmp_path, PRIOR) == Continuation(
        prior_id=PRIOR,
        block="\n".join(
            [
                "[Platform briefing — this run continues run run-20240501-000001]",
                "Prior task: fix it",
                "Prior result (error): (no summary)",
                'Prior plan: read it with read_plan using runId "run-20240501-000001".',
                "[End of briefing]",
            ]
        ),
    )


def test_without_a_result_the_block_quotes_the_error_message(tmp_path: Path) -> None:
    _prior(tmp_path, "interrupted", error="the machine stopped")
    assert "Prior result (interrupted): the machine stopped" in continuation_briefing(tmp_path, PRIOR).block


def test_only_a_finished_readable_run_continues(tmp_path: Path) -> None:
    with pytest.raises(InvalidContinuation, match="is not a run id"):
        continuation_briefing(tmp_path, "yesterday")
    with pytest.raises(InvalidContinuation, match="names no readable run"):
        continuation_briefing(tmp_path, PRIOR)
    _prior(tmp_path, "running")
    with pytest.raises(InvalidContinuation, match="still running"):
        continuation_briefing(tmp_path, PRIOR)


def test_the_meta_reader_is_the_caller_s(tmp_path: Path) -> None:
    """A caller holding the metas already (the scheduler's tick) answers the read itself."""
    seen: list[Path] = []

    def read(run_dir: Path) -> RunMeta | None:
        seen.append(run_dir)
        return RunMeta(
            run_id=PRIOR, task="t", status="success", effort="standard", log_level="full", guild_path="/g",
            start_time="2024-05-01T09:00:00.000Z",
        )  # fmt: skip

    assert continuation_briefing(tmp_path, PRIOR, read=read).prior_id == PRIOR
    assert seen == [runs_root(tmp_path) / PRIOR]


def test_prepare_run_uses_a_checked_continuation_without_checking_again(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, "http://127.0.0.1:9/v1")
    checked = Continuation(prior_id=PRIOR, block="[the block]")  # no such run on disk: not read again
    request = RunRequest(task="go on", continues_from=PRIOR)
    prepared = prepare_run(settings, tmp_path, request, briefing="[the briefing]", continuation=checked)
    assert prepared.task == "go on\n\n[the block]\n\n[the briefing]"
    meta = read_meta(prepared.run_dir)
    assert meta is not None and (meta.task, meta.continues_from) == ("go on", PRIOR)
    with pytest.raises(InvalidContinuation):  # without one, prepare_run checks (the CLI's path)
        prepare_run(settings, tmp_path, request)


async def test_an_entry_card_finishing_needs_clarification_carries_its_summary_as_the_question(
    tmp_path: Path, sim_for
) -> None:
    script = {"turns": [turn("lead", finish("Which region?", status="needs_clarification"))]}
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles={"lead": ["finish"]})
        outcome = await execute_run(settings, tmp_path, RunRequest(task="deploy"), RunServices(timeouts=FAST))
    assert (outcome.card.status, outcome.question) == ("needs_clarification", "Which region?")
