"""The harness's checks catch what they claim to (so a green crash run means something)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.crash.checks import (
    Baseline,
    Reference,
    check_finished_workspace,
    check_log_lines,
    check_pairs,
    classify_kill,
)
from tests.crash.scenario import crash_script

from orchestrator.sim import parse_script

RUN = "run-20260101-000000"


def _line(kind: str, **payload: Any) -> bytes:
    return json.dumps({"timestamp": "t", "type": kind, "payload": payload}).encode() + b"\n"


def _start(rid: str) -> bytes:
    return _line("role_start", roleId=rid, role=rid.split("-")[0])


def _done(rid: str, summary: str = "ok") -> bytes:
    return _line("role_finished", roleId=rid, role=rid.split("-")[0], status="success", summary=summary)


def test_the_script_loads_and_every_turn_is_reusable() -> None:
    script = parse_script(json.dumps(crash_script()).encode())
    assert script.turns and all(t.reusable for t in script.turns)


def test_a_torn_line_is_allowed_only_at_the_end_of_a_segment() -> None:
    torn = _start("lead-0-1")[:20]
    assert check_log_lines(_start("lead-0-1") + torn, finished=False) == []
    assert check_log_lines(_start("lead-0-1") + torn, finished=True)
    assert check_log_lines(torn + b"\n" + _line("run_resumed", runId=RUN), finished=True) == []
    glued = torn + _line("run_resumed", runId=RUN) + _start("leaf-1-2")
    assert "not the end of a segment" in check_log_lines(glued, finished=True)[0]


def test_pairs_must_be_exactly_one_start_and_one_finish() -> None:
    def events(*lines: bytes) -> list[dict[str, Any]]:
        return [json.loads(line) for line in lines]

    assert check_pairs(events(_start("a-0-1"), _done("a-0-1"))) == []
    twice = events(_start("a-0-1"), _start("a-0-1"), _done("a-0-1"))
    assert check_pairs(twice) == ["role_start for a-0-1 logged 2 times"]
    assert "unpaired" in check_pairs(events(_start("a-0-1")))[0]


def _run_dir(workspace: Path, status: str, log: bytes, *extra: str) -> Path:
    run_dir = workspace / ".orchestration" / "runs" / RUN
    run_dir.mkdir(parents=True)
    card = {"status": "success", "summary": "ok", "artifacts": []}
    meta = {
        "runId": RUN,
        "task": "t",
        "status": status,
        "effort": "standard",
        "logLevel": "full",
        "guildPath": "g",
        "startTime": "t",
        "result": card,
    }
    (run_dir / "meta.json").write_text(json.dumps(meta))
    (run_dir / "log.jsonl").write_bytes(log)
    for name in extra:
        (run_dir / name).write_text("{}")
    return run_dir


def test_a_finished_workspace_with_a_checkpoint_or_temp_file_left_fails(tmp_path: Path) -> None:
    _run_dir(tmp_path, "success", _start("lead-0-1") + _done("lead-0-1"), "state.json", "meta.json.7.tmp")
    reference = Reference(
        card={"status": "success", "summary": "ok", "artifacts": [], "error": None},
        files={},
        outcomes={"lead-0-1": ("lead", "success", "ok")},
        duration=1.0,
        working=1.0,
    )
    problems = check_finished_workspace(
        tmp_path, reference, run_id=RUN, checkpoint_seen=set(), printed_cards=[], resumed_ids=[RUN]
    )
    assert problems == [f"{RUN} has a terminal meta (success) but still holds ['state.json', 'meta.json.7.tmp']"]


def test_an_interrupted_run_that_had_a_checkpoint_fails(tmp_path: Path) -> None:
    _run_dir(tmp_path, "interrupted", _line("effort_set", effort="standard"))
    reference = Reference(card={}, files={}, outcomes={}, duration=1.0, working=1.0)
    problems = check_finished_workspace(
        tmp_path, reference, run_id=RUN, checkpoint_seen={RUN}, printed_cards=[], resumed_ids=[]
    )
    assert any("although a checkpoint existed" in p for p in problems)


def test_kills_are_classified_by_what_the_process_left(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path, "running", _start("lead-0-1"))
    baseline = Baseline.take(tmp_path)
    assert classify_kill(tmp_path, 42, baseline) == "startup"
    with (run_dir / "log.jsonl").open("ab") as log:
        log.write(_line("llm_call_start", roleId="lead-0-1"))
    assert classify_kill(tmp_path, 42, baseline) == "model-stream"
    with (run_dir / "log.jsonl").open("ab") as log:
        log.write(_line("tool_call", roleId="lead-0-1", tool="run_shell"))
    assert classify_kill(tmp_path, 42, baseline) == "tool"
    (run_dir / "journal.jsonl").write_bytes(b'0badc0de {"seq": 3, "ru')
    assert classify_kill(tmp_path, 42, baseline) == "checkpoint-write"
