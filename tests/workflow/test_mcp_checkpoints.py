"""The checkpoint tools (yield / present / respond / resume) on the project's own ``workflows/``.

Three layers:

* over stdio (the real ``orchestrator mcp`` subprocess) with ``MIN_CHECKPOINT_RESPONSE_SECONDS=0``: the
  lock, every answer mode, effects, replay, resume, ad hoc gates and the session file they leave;
* in-process through ``WorkflowMCP.dispatch`` (the same validate → handler → trace pipeline, no transport)
  with the server clock replaced by a controllable one: the 3-second floor and the auto-advance timers to
  the millisecond, ``skipActivities`` and ``#`` base ids (a small extra workflow next to a copy of ours);
* one real-time stdio test of the default 3-second floor (the only test that waits).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from orchestrator.workflow.session.sessionfile import SessionFile
from orchestrator.workflow.tools import checkpoints

from .conftest import WORKFLOWS, McpProcess
from .conftest import InProcess as _InProcess

# ---------------------------------------------------------------------------------------------- helpers


def _file(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "session.json").read_text())


def _history(folder: Path, kind: str) -> list[dict[str, Any]]:
    return [event for event in _file(folder)["history"] if event["type"] == kind]


class InProcess(_InProcess):
    """The in-process server (``conftest.InProcess``) plus a helper to open a session at an activity."""

    def session_at(self, workflow_id: str, activity_id: str, slug: str) -> tuple[str, Path]:
        folder = self.planning / slug
        index = self.ok("start_session", workflow_id=workflow_id, planning_folder=str(folder)).parsed["session_index"]
        self.ok("next_activity", session_index=index, activity_id=activity_id)
        return index, folder


def _session_at(mcp: McpProcess, workflow_id: str, activity_id: str, slug: str) -> tuple[str, Path]:
    folder = mcp.planning / slug
    index = mcp.ok("start_session", workflow_id=workflow_id, planning_folder=str(folder)).parsed["session_index"]
    mcp.ok("next_activity", session_index=index, activity_id=activity_id)
    return index, folder


# ---------------------------------------------------------------------------------------------- stdio, floor 0


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpProcess]:
    """One stdio server on ``workflows/`` with the response-time floor switched off."""
    server = McpProcess(tmp_path_factory.mktemp("cp"), env={"MIN_CHECKPOINT_RESPONSE_SECONDS": "0"}).start()
    try:
        yield server
    finally:
        server.stop()


LOCKED = ("get_workflow", "next_activity", "get_activity", "get_technique", "get_resource", "get_trace")


def test_tools_are_listed_with_explicit_schemas(quick: McpProcess) -> None:
    tools = {tool.name: tool for tool in quick.list_tools()}
    for spec in checkpoints.TOOLS:
        assert spec.name in tools
        assert tools[spec.name].input_schema["required"][0] == "session_index"
    respond = tools["respond_checkpoint"].input_schema["properties"]
    assert set(respond) == {"session_index", "option_id", "auto_advance", "condition_not_met", "reply"}


def test_lock_setvariable_resume_and_replay(quick: McpProcess) -> None:
    index, folder = _session_at(quick, "code-review", "scope-review", "cp-lock")
    yielded = quick.ok("yield_checkpoint", session_index=index, checkpoint_id="confirm-scope").parsed
    assert yielded["status"] == "yielded" and yielded["checkpoint_id"] == "confirm-scope"
    active = _file(folder)["activeCheckpoint"]
    assert active["checkpointId"] == "confirm-scope" and active["activityId"] == "scope-review"
    assert active["yieldedAt"].endswith("Z") and "adhoc" not in active
    assert [e["checkpoint"] for e in _history(folder, "checkpoint_reached")] == ["confirm-scope"]

    assert set(LOCKED) <= {tool.name for tool in quick.list_tools()}
    for tool in LOCKED:
        args: dict[str, Any] = {"session_index": index}
        if tool == "next_activity":
            args["activity_id"] = "read-changes"
        if tool == "get_activity":
            args["context_tokens"] = 100000
        if tool == "get_resource":
            args["resource_id"] = "review-checklist"
        assert "Active checkpoint 'confirm-scope'" in quick.err(tool, **args), tool
    assert "already active" in quick.err("yield_checkpoint", session_index=index, checkpoint_id="confirm-scope")
    assert "Cannot resume" in quick.err("resume_checkpoint", session_index=index)
    assert quick.ok("get_workflow_status", session_index=index).parsed["status"] == "blocked"
    quick.ok("inspect_session", session_index=index)
    quick.ok("record_usage", session_index=index, activity="scope-review", usage={"input_tokens": 5}, basis="delta")

    seq_before = _file(folder)["seq"]
    shown = quick.ok("present_checkpoint", session_index=index).parsed
    assert _file(folder)["seq"] == seq_before  # present never writes
    assert shown["id"] == "confirm-scope" and shown["session_index"] == index
    assert [o["id"] for o in shown["options"]] == ["proceed", "go-deeper", "skim", "narrow"]
    assert shown["options"][1]["effect"] == {"setVariable": {"review_depth": "deep"}}
    assert shown["message"].startswith("{changed_file_count} file(s) changed in {pr_reference}")  # not interpolated
    assert "condition" not in shown and "autoAdvanceMs" not in shown

    answered = quick.ok("respond_checkpoint", session_index=index, option_id="go-deeper").parsed
    assert answered == {
        "checkpoint_id": "confirm-scope",
        "resolved": True,
        "session_index": index,
        "resolved_option": "go-deeper",
        "effect": {"setVariable": {"review_depth": "deep"}},
    }
    data = _file(folder)
    assert "activeCheckpoint" not in data
    assert data["variables"]["review_depth"] == "deep"
    stored = data["checkpointResponses"]["scope-review-confirm-scope"]
    assert stored["optionId"] == "go-deeper" and stored["effects"] == {"variablesSet": {"review_depth": "deep"}}
    assert [e["data"]["optionId"] for e in _history(folder, "checkpoint_response")] == ["go-deeper"]
    assert [e["data"] for e in _history(folder, "variable_set")][-1] == {
        "name": "review_depth",
        "value": "deep",
        "source": "setVariable",
        "declaredType": "string",
        "valueType": "string",
    }
    assert quick.ok("get_workflow_status", session_index=index).parsed["status"] != "blocked"

    seq_before = _file(folder)["seq"]
    resumed = quick.ok("resume_checkpoint", session_index=index).parsed
    assert _file(folder)["seq"] == seq_before + 1
    assert resumed["status"] == "resumed" and resumed["checkpoint_id"] == "confirm-scope"
    assert resumed["resolved_option"] == "go-deeper" and resumed["variables_set"] == {"review_depth": "deep"}
    assert "exit" not in resumed

    replay = quick.ok("yield_checkpoint", session_index=index, checkpoint_id="confirm-scope").parsed
    assert replay["status"] == "replayed" and replay["resolved_option"] == "go-deeper"
    assert replay["effect"] == {"setVariable": {"review_depth": "deep"}}
    assert "activeCheckpoint" not in _file(folder)
    assert [e["data"] for e in _history(folder, "checkpoint_replayed")] == [{"optionId": "go-deeper"}]
    assert "No active checkpoint" in quick.err("present_checkpoint", session_index=index)
    assert "No active checkpoint" in quick.err("respond_checkpoint", session_index=index, option_id="proceed")


def test_mode_errors_and_recorded_reply(quick: McpProcess) -> None:
    index, folder = _session_at(quick, "code-review", "scope-review", "cp-modes")
    quick.ok("yield_checkpoint", session_index=index, checkpoint_id="confirm-scope")
    before = (folder / "session.json").read_bytes()
    refusals = [
        ({"option_id": "bogus"}, "CHECKPOINT_OPTION", "Valid options: [proceed, go-deeper, skim, narrow]"),
        ({"option_id": "proceed", "auto_advance": True}, "CHECKPOINT_MODE", "Exactly one of"),
        ({}, "CHECKPOINT_MODE", "Exactly one of"),
        ({"auto_advance": False}, "CHECKPOINT_MODE", "Exactly one of"),
        ({"auto_advance": True}, "CHECKPOINT_MODE", "missing defaultOption or autoAdvanceMs"),
        ({"condition_not_met": True}, "CHECKPOINT_MODE", "has no condition field"),
        ({"option_id": "proceed", "reply": "hi"}, "REPLY_NOT_ACCEPTED", "declares no recordReply"),
    ]
    for args, code, phrase in refusals:
        text = quick.err("respond_checkpoint", session_index=index, **args)
        assert text.startswith(f"{code}: ") and phrase in text, (args, text)
    assert (folder / "session.json").read_bytes() == before  # refusals have no effect
    assert "InvalidParams" in quick.err("respond_checkpoint", session_index=index, auto_advance="yes")

    answered = quick.ok("respond_checkpoint", session_index=index, option_id="narrow", reply="only src/api").parsed
    assert answered["effect"] == {"recordReply": "review_focus", "reply": "only src/api"}
    data = _file(folder)
    assert data["variables"]["review_focus"] == "only src/api"
    assert data["checkpointResponses"]["scope-review-confirm-scope"]["effects"] == {
        "variablesSet": {"review_focus": "only src/api"},
        "reply": "only src/api",
    }
    assert _history(folder, "variable_set")[-1]["data"]["source"] == "recordReply"
    resumed = quick.ok("resume_checkpoint", session_index=index).parsed
    assert resumed["variables_set"] == {"review_focus": "only src/api"}


def test_condition_dismissal_and_fragment_reply(quick: McpProcess) -> None:
    index, folder = _session_at(quick, "bug-fix", "reproduce", "cp-dismiss")
    quick.ok("yield_checkpoint", session_index=index, checkpoint_id="cannot-reproduce")
    shown = quick.ok("present_checkpoint", session_index=index).parsed
    assert shown["condition"] == {"type": "simple", "variable": "repro_confirmed", "operator": "==", "value": False}
    bag = _file(folder)["variables"]
    answered = quick.ok("respond_checkpoint", session_index=index, condition_not_met=True).parsed
    assert answered == {
        "checkpoint_id": "cannot-reproduce",
        "resolved": True,
        "session_index": index,
        "dismissed": True,
    }
    data = _file(folder)
    assert data["variables"] == bag
    assert data["checkpointResponses"]["reproduce-cannot-reproduce"]["optionId"] == "__condition_not_met__"
    assert "effects" not in data["checkpointResponses"]["reproduce-cannot-reproduce"]
    resumed = quick.ok("resume_checkpoint", session_index=index).parsed
    assert resumed["resolved_option"] == "__condition_not_met__" and resumed["variables_set"] == {}
    replay = quick.ok("yield_checkpoint", session_index=index, checkpoint_id="cannot-reproduce").parsed
    assert replay["status"] == "replayed" and replay["dismissed"] is True

    # a checkpoint materialised from a meta fragment: recordReply plus the fragment's message
    quick.ok("next_activity", session_index=index, activity_id="diagnose")
    quick.ok("yield_checkpoint", session_index=index, checkpoint_id="confirm-fix-plan")
    shown = quick.ok("present_checkpoint", session_index=index).parsed
    assert shown["message"] == "About to continue with: {pending_action_summary}. Go ahead?"
    quick.ok("respond_checkpoint", session_index=index, option_id="revise", reply="add a unit test first")
    assert _file(folder)["variables"]["plan_feedback"] == "add a unit test first"


def test_transition_exit_and_undismissable(quick: McpProcess) -> None:
    index, folder = _session_at(quick, "bug-fix", "reproduce", "cp-exit")
    quick.ok("yield_checkpoint", session_index=index, checkpoint_id="cannot-reproduce")
    answered = quick.ok("respond_checkpoint", session_index=index, option_id="stop").parsed
    assert answered["effect"] == {"transitionTo": "__terminal__"}
    data = _file(folder)
    assert data["currentActivity"] == "reproduce" and data["status"] == "running"  # transitionTo is only reported
    assert data["checkpointResponses"]["reproduce-cannot-reproduce"]["effects"] == {"transitionedTo": "__terminal__"}
    resumed = quick.ok("resume_checkpoint", session_index=index).parsed
    assert resumed["exit"] == {"to": "__terminal__", "ends_activity": True}

    # meta end-workflow / completion-confirmed has no condition: it cannot be dismissed
    meta = quick.ok("start_session", workflow_id="meta", user_request="just close out").parsed["session_index"]
    quick.ok("next_activity", session_index=meta, activity_id="select-workflow")
    quick.ok("next_activity", session_index=meta, activity_id="dispatch-client-workflow")
    quick.ok("next_activity", session_index=meta, activity_id="end-workflow")
    quick.ok("yield_checkpoint", session_index=meta, checkpoint_id="completion-confirmed")
    assert "no condition" in quick.err("respond_checkpoint", session_index=meta, condition_not_met=True)
    answered = quick.ok("respond_checkpoint", session_index=meta, option_id="return").parsed
    assert answered["effect"]["transitionTo"] == "dispatch-client-workflow"
    status = quick.ok("get_workflow_status", session_index=meta).parsed
    assert status["current_activity"] == "end-workflow"
    assert status["variables"]["session_closed"] is False and status["variables"]["client_workflow_completed"] is False
    resumed = quick.ok("resume_checkpoint", session_index=meta).parsed
    assert resumed["exit"] == {"to": "dispatch-client-workflow", "ends_activity": True}
    assert resumed["variables_set"] == {"session_closed": False, "client_workflow_completed": False}


def test_adhoc_gates(quick: McpProcess) -> None:
    index, folder = _session_at(quick, "code-review", "report", "cp-adhoc")
    options = [{"id": "a", "label": "Only the API"}, {"id": "b", "label": "Everything", "description": "all files"}]
    assert "Checkpoint not found" in quick.err(
        "yield_checkpoint", session_index=index, checkpoint_id="scope-question", message="Which part?"
    )
    assert "Checkpoint not found" in quick.err(
        "yield_checkpoint", session_index=index, checkpoint_id="scope-question", message="?", options=options[:1]
    )
    assert "by id alone" in quick.err(
        "yield_checkpoint", session_index=index, checkpoint_id="publish-report", message="Post it?"
    )
    assert "by id alone" in quick.err(
        "yield_checkpoint", session_index=index, checkpoint_id="publish-report", options=options
    )
    assert "CHECKPOINT_OPTION" in quick.err(
        "yield_checkpoint", session_index=index, checkpoint_id="dup", message="?", options=[options[0], options[0]]
    )
    assert "InvalidParams" in quick.err(
        "yield_checkpoint", session_index=index, checkpoint_id="x", message="?", options=[{"id": "a"}, {"id": "b"}]
    )
    assert "activeCheckpoint" not in _file(folder)

    yielded = quick.ok(
        "yield_checkpoint", session_index=index, checkpoint_id="scope-question", message="Which part?", options=options
    ).parsed
    assert yielded["status"] == "yielded"
    assert _file(folder)["activeCheckpoint"]["adhoc"] == {"message": "Which part?", "options": options}
    shown = quick.ok("present_checkpoint", session_index=index).parsed
    assert shown == {
        "id": "scope-question",
        "message": "Which part?",
        "options": options,
        "blocking": True,
        "declared": False,
        "session_index": index,
    }
    assert "missing defaultOption" in quick.err("respond_checkpoint", session_index=index, auto_advance=True)
    assert "no condition" in quick.err("respond_checkpoint", session_index=index, condition_not_met=True)
    assert "Valid options: [a, b]" in quick.err("respond_checkpoint", session_index=index, option_id="c")
    assert "REPLY_NOT_ACCEPTED" in quick.err("respond_checkpoint", session_index=index, option_id="a", reply="x")
    bag = _file(folder)["variables"]
    answered = quick.ok("respond_checkpoint", session_index=index, option_id="b").parsed
    assert answered == {
        "checkpoint_id": "scope-question",
        "resolved": True,
        "session_index": index,
        "resolved_option": "b",
    }
    data = _file(folder)
    assert data["variables"] == bag and data["checkpointResponses"]["report-scope-question"]["optionId"] == "b"
    replay = quick.ok(
        "yield_checkpoint", session_index=index, checkpoint_id="scope-question", message="Which part?", options=options
    ).parsed
    assert replay["status"] == "replayed" and replay["resolved_option"] == "b" and "effect" not in replay


def test_timer_refused_before_it_runs_out(quick: McpProcess) -> None:
    index, folder = _session_at(quick, "code-review", "report", "cp-timer")
    quick.ok("yield_checkpoint", session_index=index, checkpoint_id="publish-report")
    shown = quick.ok("present_checkpoint", session_index=index).parsed
    assert shown["defaultOption"] == "keep-local" and shown["autoAdvanceMs"] == 30000
    text = quick.err("respond_checkpoint", session_index=index, auto_advance=True)
    assert text.startswith("CHECKPOINT_TIMER: ") and "timer not elapsed" in text
    assert _file(folder)["activeCheckpoint"]["checkpointId"] == "publish-report"
    quick.ok("respond_checkpoint", session_index=index, option_id="post")
    assert _file(folder)["variables"]["post_report"] is True


# ---------------------------------------------------------------------------------------------- in-process clock

GATES_WORKFLOW = """\
id: gates
version: 1.0.0
title: Gates
description: Checkpoint shapes the shipped workflows do not use.
initialActivity: first
variables:
  - { name: fast_path, type: boolean, defaultValue: false }
  - { name: retry_count, type: number, defaultValue: 0 }
"""
GATES_FIRST = """\
id: first
version: 1.0.0
name: First
steps:
  - kind: checkpoint
    id: pick-path
    message: Take the fast path?
    defaultOption: normal
    autoAdvanceMs: 1500
    blocking: true
    options:
      - { id: normal, label: Normal }
      - id: fast
        label: Fast
        effect:
          setVariable: { fast_path: true, retry_count: "three" }
          skipActivities: [second, nowhere]
          transitionTo: third
  - kind: loop
    id: per-item
    loopType: forEach
    variable: current_item
    over: work_items
    steps:
      - kind: checkpoint
        id: "item-ok#{current_item}"
        message: Is this item fine?
        options: [ { id: fine, label: Fine }, { id: redo, label: Redo } ]
transitions:
  - { to: second, isDefault: true }
"""


@pytest.fixture(scope="module")
def gates_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus") / "workflows"
    shutil.copytree(WORKFLOWS, root)
    (root / "gates" / "activities").mkdir(parents=True)
    (root / "gates" / "workflow.yaml").write_text(GATES_WORKFLOW)
    (root / "gates" / "activities" / "01-first.yaml").write_text(GATES_FIRST)
    for n, name in ((2, "second"), (3, "third")):
        (root / "gates" / "activities" / f"0{n}-{name}.yaml").write_text(
            f"id: {name}\nversion: 1.0.0\nname: {name.title()}\n"
        )
    return root


@pytest.fixture
def local(tmp_path: Path, gates_dir: Path) -> InProcess:
    return InProcess(tmp_path, gates_dir)


def test_floor_to_the_millisecond(local: InProcess) -> None:
    index, folder = local.session_at("code-review", "scope-review", "floor")
    local.now += 0.0004  # yieldedAt keeps milliseconds only
    local.ok("yield_checkpoint", session_index=index, checkpoint_id="confirm-scope")
    yielded_at = local.now
    local.now = yielded_at + 2.998
    text = local.err("respond_checkpoint", session_index=index, option_id="proceed")
    assert text.startswith("CHECKPOINT_TOO_FAST: ") and "too fast" in text
    # the floor is checked before the option id
    assert "too fast" in local.err("respond_checkpoint", session_index=index, option_id="bogus")
    local.now = yielded_at + 3.0
    assert "Valid options" in local.err("respond_checkpoint", session_index=index, option_id="bogus")
    local.ok("respond_checkpoint", session_index=index, option_id="proceed")
    assert _file(folder)["checkpointResponses"]["scope-review-confirm-scope"]["optionId"] == "proceed"
    # the too-fast attempt is traced as an error
    local.ok("resume_checkpoint", session_index=index)
    events = local.ok("get_trace", session_index=index).parsed["events"]
    failed = [e for e in events if e["name"] == "respond_checkpoint" and e["s"] == "error"]
    assert failed and "too fast" in failed[0]["err"]


def test_timer_rounds_up_to_whole_seconds_and_ignores_blocking(local: InProcess) -> None:
    index, folder = local.session_at("gates", "first", "timer")
    local.ok("yield_checkpoint", session_index=index, checkpoint_id="pick-path")
    start = local.now
    local.now = start + 1.999  # autoAdvanceMs 1500 waits ceil(1.5) = 2 s
    assert "timer not elapsed" in local.err("respond_checkpoint", session_index=index, auto_advance=True)
    local.now = start + 2.0
    answered = local.ok("respond_checkpoint", session_index=index, auto_advance=True).parsed
    assert answered["resolved_option"] == "normal" and "effect" not in answered
    assert _file(folder)["checkpointResponses"]["first-pick-path"] == {
        "optionId": "normal",
        "respondedAt": _file(folder)["checkpointResponses"]["first-pick-path"]["respondedAt"],
    }


def test_code_review_publish_timer(local: InProcess) -> None:
    index, folder = local.session_at("code-review", "report", "publish")
    local.ok("yield_checkpoint", session_index=index, checkpoint_id="publish-report")
    start = local.now
    local.now = start + 5
    assert "timer not elapsed" in local.err("respond_checkpoint", session_index=index, auto_advance=True)
    local.now = start + 30
    answered = local.ok("respond_checkpoint", session_index=index, auto_advance=True).parsed
    assert answered["resolved_option"] == "keep-local"
    assert _file(folder)["variables"]["post_report"] is False


def test_skip_activities_type_warning_and_exit(local: InProcess) -> None:
    index, folder = local.session_at("gates", "first", "skip")
    local.ok("yield_checkpoint", session_index=index, checkpoint_id="pick-path")
    local.now += 10
    reply = local.ok("respond_checkpoint", session_index=index, option_id="fast")
    assert reply.parsed["effect"] == {
        "setVariable": {"fast_path": True, "retry_count": "three"},
        "transitionTo": "third",
        "skipActivities": ["second", "nowhere"],
    }
    warnings = reply.meta["validation"]["warnings"]
    assert reply.meta["validation"]["status"] == "warning"
    assert any("retry_count" in w and "number" in w for w in warnings)
    assert any("nowhere" in w for w in warnings)
    data = _file(folder)
    assert data["skippedActivities"] == ["second", "nowhere"]
    assert [e["activity"] for e in _history(folder, "activity_skipped")] == ["second", "nowhere"]
    mismatch = [e["data"] for e in _history(folder, "variable_set") if e["data"]["name"] == "retry_count"]
    assert mismatch == [
        {
            "name": "retry_count",
            "value": "three",
            "source": "setVariable",
            "declaredType": "number",
            "valueType": "string",
            "typeMismatch": True,
        }
    ]
    assert data["checkpointResponses"]["first-pick-path"]["effects"] == {
        "variablesSet": {"fast_path": True, "retry_count": "three"},
        "transitionedTo": "third",
        "activitiesSkipped": ["second", "nowhere"],
    }
    resumed = local.ok("resume_checkpoint", session_index=index).parsed
    assert resumed["exit"] == {"to": "third", "ends_activity": True}
    replay = local.ok("yield_checkpoint", session_index=index, checkpoint_id="pick-path").parsed
    assert replay["effect"]["skipActivities"] == ["second", "nowhere"]
    assert len(_history(folder, "activity_skipped")) == 2  # a replay applies nothing


def test_base_ids_key_each_iteration(local: InProcess) -> None:
    index, folder = local.session_at("gates", "first", "loop")
    local.ok("yield_checkpoint", session_index=index, checkpoint_id="item-ok#a1")
    shown = local.ok("present_checkpoint", session_index=index).parsed
    assert shown["id"] == "item-ok#a1" and shown["name"] == "item-ok#{current_item}"
    assert [o["id"] for o in shown["options"]] == ["fine", "redo"]
    local.now += 4
    local.ok("respond_checkpoint", session_index=index, option_id="redo")
    assert local.ok("yield_checkpoint", session_index=index, checkpoint_id="item-ok#a2").parsed["status"] == "yielded"
    local.now += 4
    local.ok("respond_checkpoint", session_index=index, option_id="fine")
    again = local.ok("yield_checkpoint", session_index=index, checkpoint_id="item-ok#a1").parsed
    assert again["status"] == "replayed" and again["resolved_option"] == "redo"
    responses = _file(folder)["checkpointResponses"]
    assert {k: v["optionId"] for k, v in responses.items()} == {"first-item-ok#a1": "redo", "first-item-ok#a2": "fine"}
    # the exact id beats the base id, and a declared id never takes an ad hoc body
    assert "by id alone" in local.err("yield_checkpoint", session_index=index, checkpoint_id="item-ok#a3", message="x")


def test_session_file_stays_valid(local: InProcess) -> None:
    index, folder = local.session_at("gates", "first", "valid")
    local.ok(
        "yield_checkpoint",
        session_index=index,
        checkpoint_id="adhoc-1",
        message="?",
        options=[{"id": "x", "label": "X"}, {"id": "y", "label": "Y"}],
    )
    msgspec.json.decode((folder / "session.json").read_bytes(), type=SessionFile)
    local.now += 3
    local.ok("respond_checkpoint", session_index=index, option_id="y")
    decoded = msgspec.json.decode((folder / "session.json").read_bytes(), type=SessionFile)
    assert decoded.active_checkpoint is None and decoded.checkpoint_responses["first-adhoc-1"].option_id == "y"


# ---------------------------------------------------------------------------------------------- server clock


def test_default_floor_on_the_servers_clock(spawn_mcp: Callable[..., McpProcess], tmp_path: Path) -> None:
    """The default 3-second floor on a real server, time moved through its clock-offset hook (no sleep)."""
    offset = tmp_path / "clock-offset"
    server = spawn_mcp(env={"WORKFLOW_SERVER_CLOCK_OFFSET_FILE": str(offset)})
    index, folder = _session_at(server, "code-review", "scope-review", "cp-real-floor")
    server.ok("yield_checkpoint", session_index=index, checkpoint_id="confirm-scope")
    assert "too fast" in server.err("respond_checkpoint", session_index=index, option_id="skim")
    offset.write_text("2.5")
    assert "too fast" in server.err("respond_checkpoint", session_index=index, option_id="skim")
    offset.write_text("3.1")
    answered = server.ok("respond_checkpoint", session_index=index, option_id="skim").parsed
    assert answered["effect"] == {"setVariable": {"review_depth": "quick"}}
    assert _file(folder)["variables"]["review_depth"] == "quick"
