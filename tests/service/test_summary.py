"""``summary.txt``: the first-line rule, the derived fallback, the interrupt scan and the written file."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.helpers import make_settings

from orchestrator.conversation import ResultCard
from orchestrator.engine import events
from orchestrator.engine.state import RoleFrame
from orchestrator.runlog.writer import RunLog
from orchestrator.service.summary import (
    SUMMARY_CHARS,
    derived_summary,
    first_line,
    interrupt_history,
    summarize_run,
    write_summary,
)


def test_first_line_skips_blank_lines_and_strips() -> None:
    assert first_line("\n   \n  Build the parser  \nthen test it") == "Build the parser"
    assert first_line("") == "" and first_line(" \n\t") == ""


def test_first_line_shortens_with_an_ellipsis_within_the_limit() -> None:
    assert first_line("x" * SUMMARY_CHARS) == "x" * SUMMARY_CHARS
    long = first_line("word " * 60)
    assert len(long) <= SUMMARY_CHARS and long.endswith("word…")
    assert first_line("abcdefghij", 5) == "abcd…"


def test_derived_summary_without_and_with_a_card() -> None:
    assert derived_summary("Add a login page\nwith OAuth", None) == "Add a login page"
    card = ResultCard(status="error", summary="\nTests failed: 3 of 40\nmore")
    assert derived_summary("Add a login page", card) == "Add a login page — error: Tests failed: 3 of 40"


def test_derived_summary_stays_one_bounded_line() -> None:
    card = ResultCard(status="success", summary="s" * 500)
    line = derived_summary("t" * 500, card)
    assert len(line) <= SUMMARY_CHARS and "\n" not in line and line.endswith("…")


def test_interrupt_history_keeps_inquiries_and_plan_modifications_in_order(tmp_path: Path) -> None:
    frame = RoleFrame(instance_id="lead-0-1", role="lead", depth=0, task="t")
    with RunLog(tmp_path / "log.jsonl") as log:
        log.emit(events.role_start(frame))
        log.emit(events.interrupt("inquiry", "inquirer", "lead-0-1", "How far along?\nsecond line"))
        log.emit(events.interrupt("loop", "loop_checker", "lead-0-1", "looping"))
        log.emit(events.plan_modification(frame, "Use sqlite", []))
        log.emit(events.interrupt("inquiry", "inquirer", "lead-0-1"))  # no message: skipped
    with (tmp_path / "log.jsonl").open("ab") as handle:
        handle.write(b'{"type": "interrupt", "payload": {"trigger": "inquiry", "mess\n')  # torn line
    assert interrupt_history(tmp_path) == ["inquiry: How far along?", "plan modification: Use sqlite"]


def test_interrupt_history_of_a_run_without_a_log_is_empty(tmp_path: Path) -> None:
    assert interrupt_history(tmp_path / "missing") == []


def test_write_summary_writes_one_line(tmp_path: Path) -> None:
    write_summary(tmp_path, "\n  Fixed the bug  \nextra")
    assert (tmp_path / "summary.txt").read_text() == "Fixed the bug\n"


async def test_summarize_run_falls_back_to_the_derived_line_when_no_model_answers(tmp_path: Path) -> None:
    with socket.socket() as held:  # bound, never listening: a connection to it is refused, and nobody else takes it
        held.bind(("127.0.0.1", 0))
        settings = make_settings(tmp_path, f"http://127.0.0.1:{held.getsockname()[1]}/v1")
        card = ResultCard(status="success", summary="Added it")
        line = await summarize_run(settings, tmp_path, "Add a page", card, ["inquiry: why?"], budget_seconds=5)
    assert line == "Add a page — success: Added it"
    assert (tmp_path / "summary.txt").read_text() == line + "\n"
