"""The pre-write rule: a queue-dispatched run that asks before any writing role started parks."""

from __future__ import annotations

from pathlib import Path

from tests.engine.harness import FAST, call, finish, of_type, turn
from tests.helpers import make_settings

from orchestrator.engine.runner import RunRequest, RunServices, execute_run
from orchestrator.runlog import read_events

ROLES = {
    "lead": ["agent", "ask_human", "finish"],
    "planner": ["agent", "ask_human", "finish"],
    "coder": ["run_shell", "ask_human", "finish"],
}


async def test_an_early_question_parks_every_role_and_starts_nothing_more(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="planner", task="plan")),
            turn("planner", call("ask_human", question="Which database?"), call("agent", role="coder", task="code")),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        outcome = await execute_run(
            settings, tmp_path, RunRequest(task="go"), RunServices(timeouts=FAST, queue_tracked=True)
        )
        requests = await sim.responses_requests()
    events = read_events(outcome.run_dir / "log.jsonl")
    assert outcome.card.status == "needs_clarification"
    assert outcome.card.summary == "waiting for an answer to: Which database?"
    assert outcome.question == "Which database?"  # typed: the queue never parses the summary
    assert [s["role"] for s in of_type(events, "role_start")] == ["lead", "planner"]  # no coder
    assert {f["status"] for f in of_type(events, "role_finished")} == {"needs_clarification"}
    assert of_type(events, "ask_human")[0]["question"] == "Which database?" and not of_type(events, "human_answer")
    assert len(requests) == 2  # nothing was sent after the park
    assert outcome.meta.status == "needs_clarification"


async def test_after_a_writing_role_started_a_question_waits_for_the_human(tmp_path: Path, sim_for) -> None:
    class Human:
        async def ask(self, question_id: str, question: str, context: str | None) -> str:
            return "postgres"

    script = {
        "turns": [
            turn("lead", call("agent", role="coder", task="code")),
            turn("coder", call("ask_human", question="Which database?")),
            turn("coder", finish("used postgres"), last="postgres"),
            turn("lead", finish("done")),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        services = RunServices(timeouts=FAST, queue_tracked=True, human=Human())
        outcome = await execute_run(settings, tmp_path, RunRequest(task="go"), services)
    assert outcome.card.summary == "done" and outcome.question is None
    assert of_type(read_events(outcome.run_dir / "log.jsonl"), "human_answer")[0]["answer"] == "postgres"
