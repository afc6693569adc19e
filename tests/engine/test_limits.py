"""TurnLimits against a real RunContext: cut-off turns, context pressure, rejections and the backstop."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import make_settings

from orchestrator import vocabulary as names
from orchestrator.config.secrets import Redactor
from orchestrator.conversation import FunctionCall, Message, ToolCall
from orchestrator.engine.interrupts import InterruptQueue
from orchestrator.engine.limits import (
    CUT_OFF_NOTICE,
    MAX_CONSECUTIVE_CUT_OFFS,
    MAX_CONSECUTIVE_REJECTIONS,
    TurnLimits,
    error_card,
)
from orchestrator.engine.runcontext import RunContext
from orchestrator.engine.state import RunState
from orchestrator.llm import ContextRejected
from orchestrator.runlog import read_events
from orchestrator.runlog.writer import RunLog

ROLES = {"lead": ["agent", "finish"], "janitor": ["finish"]}
MAX_TOKENS = 1000
WINDOW = 9000


class Limits:
    """A TurnLimits over a real RunContext whose log is read back after each step."""

    def __init__(self, tmp_path: Path, log: RunLog, **executor: Any) -> None:
        settings = make_settings(
            tmp_path,
            "http://127.0.0.1:9/v1",
            ROLES,
            model={"contextWindow": WINDOW, "generation": {"temperature": 0.2, "maxTokens": MAX_TOKENS}},
            **executor,
        )
        self.log_path = tmp_path / "log.jsonl"
        self.context = RunContext(
            settings=settings,
            workspace=tmp_path,
            state=RunState(run_id="run-1", started_at="2025-01-01T12:00:00Z"),
            log=log,
            redactor=Redactor(),
            interrupts=InterruptQueue(),
            human=None,
            checkpointer=None,
        )
        self.limits = TurnLimits(self.context)
        self.frame = self.context.new_frame("lead", 0, "the task", None)

    def events(self) -> list[dict[str, Any]]:
        return read_events(self.log_path)


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Limits]:
    with RunLog(tmp_path / "log.jsonl") as log:
        yield Limits(tmp_path, log)


def test_error_card_carries_kind_and_message() -> None:
    card = error_card("context_budget_exceeded", "too big")
    assert (card.status, card.summary) == ("error", "too big")
    assert card.error is not None and (card.error.kind, card.error.message) == ("context_budget_exceeded", "too big")


def test_a_cut_off_text_turn_is_kept_and_followed_by_a_notice(run: Limits) -> None:
    before = len(run.frame.history)
    assistant = Message(role="assistant", content="a very long answer that")
    assert run.limits.cut_off(run.frame, assistant) is None
    assert run.frame.cut_off_turns == 1
    assert run.frame.history[before:] == [
        assistant,
        Message(role="user", content=CUT_OFF_NOTICE.format(limit=MAX_TOKENS)),
    ]


def test_a_cut_off_turn_with_calls_goes_ahead_untouched(run: Limits) -> None:
    call = ToolCall(id="c1", function=FunctionCall(name="finish", arguments='{"status": "succ'))
    assistant = Message(role="assistant", tool_calls=[call])
    before = list(run.frame.history)
    assert run.limits.cut_off(run.frame, assistant) is assistant
    assert run.frame.history == before


def test_repeated_cut_offs_end_the_role_llm_unavailable(run: Limits) -> None:
    outcomes = [run.limits.cut_off(run.frame, Message(role="assistant", content="x")) for _ in range(3)]
    assert outcomes[:-1] == [None] * (MAX_CONSECUTIVE_CUT_OFFS - 1)
    card = outcomes[-1]
    assert card is not None and not isinstance(card, Message)
    assert card.error is not None and card.error.kind == "llm_unavailable"
    assert f"({MAX_TOKENS} tokens) {MAX_CONSECUTIVE_CUT_OFFS} times in a row" in card.summary
    [failure] = [e for e in run.events() if e["type"] == names.LLM_UNAVAILABLE]
    assert failure["payload"]["attempts"] == MAX_CONSECUTIVE_CUT_OFFS


def test_pressure_fires_once_at_the_threshold(run: Limits) -> None:
    budget = run.context.budget
    assert budget == WINDOW - MAX_TOKENS
    run.limits.check_pressure(run.frame, int(0.8 * budget) - 1)
    assert not run.frame.pressure_fired
    run.limits.check_pressure(run.frame, int(0.8 * budget))
    run.limits.check_pressure(run.frame, budget)
    assert run.frame.pressure_fired and run.frame.pressure_notice_due
    pressure = [e["payload"] for e in run.events() if e["type"] == names.CONTEXT_PRESSURE]
    assert pressure == [
        {"role": "lead", "roleId": run.frame.instance_id, "promptTokens": int(0.8 * budget), "effectiveBudget": budget}
    ]


def test_a_rejection_with_a_handler_role_is_parked_and_the_ceiling_learned(tmp_path: Path) -> None:
    with RunLog(tmp_path / "log.jsonl") as log:
        run = Limits(tmp_path, log, contextHandlerRole="janitor")
        assert run.limits.rejected(run.frame, ContextRejected(prompt_tokens=7000, message="too long")) is None
        assert run.limits.rejected(run.frame, ContextRejected(prompt_tokens=7500, message="still")) is None
    assert run.context.state.learned_ceiling == 7000  # the smallest reported size wins
    assert run.frame.parked_rejection is not None and run.frame.parked_rejection.prompt_tokens == 7500
    rejected = [e["payload"] for e in run.events() if e["type"] == names.CONTEXT_BUDGET_EXCEEDED]
    assert [(p["promptTokens"], p["rejections"]) for p in rejected] == [(7000, 1), (7500, 2)]


def test_consecutive_rejections_end_the_role(tmp_path: Path) -> None:
    with RunLog(tmp_path / "log.jsonl") as log:
        run = Limits(tmp_path, log, contextHandlerRole="janitor")
        outcomes = [
            run.limits.rejected(run.frame, ContextRejected(prompt_tokens=None, message="no"))
            for _ in range(MAX_CONSECUTIVE_REJECTIONS)
        ]
    assert outcomes[:-1] == [None] * (MAX_CONSECUTIVE_REJECTIONS - 1)
    card = outcomes[-1]
    assert card is not None and card.error is not None and card.error.kind == "context_budget_exceeded"
    assert run.context.state.learned_ceiling is None  # no size was reported


def test_without_a_handler_role_the_backstop_compacts_in_place(run: Limits) -> None:
    for turn in range(12):
        call = ToolCall(id=f"c{turn}", function=FunctionCall(name="agent", arguments="{}"))
        run.frame.history.append(Message(role="assistant", tool_calls=[call]))
        run.frame.history.append(Message(role="tool", content="y" * 4000, tool_call_id=f"c{turn}"))
    run.frame.logged_upto = len(run.frame.history)
    preamble = run.frame.history[: run.frame.preamble]
    assert run.limits.rejected(run.frame, ContextRejected(prompt_tokens=13000, message="too long")) is None
    history = run.frame.history
    assert history[: run.frame.preamble] == preamble
    assert len(history) < 2 + 24 + 1
    assert history[-1].role == "user" and "context window exceeded" in history[-1].content
    assert (run.frame.logged_upto, run.frame.history_epoch) == (0, 1)
    [compacted] = [e["payload"] for e in run.events() if e["type"] == names.CONTEXT_COMPACTED]
    assert compacted["droppedMessages"] > 0 and compacted["contextWindow"] == WINDOW
    assert f"{compacted['droppedMessages']} older messages were removed" in history[-1].content


def test_the_backstop_gives_up_when_even_the_last_turn_cannot_fit(run: Limits) -> None:
    run.frame.history.append(Message(role="assistant", content="z" * 200_000))
    card = run.limits.backstop(run.frame, None)
    assert card is not None and card.error is not None and card.error.kind == "context_budget_exceeded"
