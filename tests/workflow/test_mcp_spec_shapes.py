"""Issue 15 items 1–9 through the official client, over stdio and Streamable HTTP (the ``mcp`` fixture and
``transport`` parameter run each test on both).

1 inspect_session views · 2 repo_binding literal · 3 planning_slug always present · 4 undeclared planning-folder
files on every move · 5 YAML 1.2-safe quoting · 6 step artifacts by file name, own outputs · 7 one outcome per
visit · 8 progress_published on the entered activity · 9 legacy ``workflow-state.json`` migration.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.helpers import PUBLIC_CORPUS, needs_public_corpus
from tests.workflow.conftest import TRANSPORTS, McpProcess

from orchestrator.workflow.session.keys import verify_seal
from orchestrator.workflow.tools.render import needs_quotes, to_yaml


def start(mcp: McpProcess, **args: Any) -> tuple[str, Path]:
    reply = mcp.ok("start_session", **args)
    return reply.parsed["session_index"], Path(reply.parsed["planning_folder_path"])


def session_json(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "session.json").read_text())


def events(folder: Path, kind: str) -> list[dict[str, Any]]:
    return [e for e in session_json(folder)["history"] if e["type"] == kind]


# ------------------------------------------------------------------------------------------ 2 and 3


def test_repo_binding_is_the_spec_literal(mcp: McpProcess) -> None:
    assert "repo_binding: required_on_start_session" in mcp.ok("discover").text.splitlines()
    assert mcp.ok("health_check").parsed["repo_binding"] == "required_on_start_session"


def test_transient_meta_start_always_has_planning_slug(mcp: McpProcess) -> None:
    plain = mcp.ok("start_session", user_request="pick something").parsed
    assert plain["repo_unbound"] is True and "planning_folder_path" not in plain
    assert plain["planning_slug"] == ""
    durable = mcp.ok("start_session", workflow_id="bug-fix").parsed
    assert durable["planning_slug"] == Path(durable["planning_folder_path"]).name


# ------------------------------------------------------------------------------------------ 4, 7, 8


def test_undeclared_files_warn_on_every_transition(mcp: McpProcess) -> None:
    index, folder = start(mcp, workflow_id="bug-fix")
    mcp.ok("next_activity", session_index=index, activity_id="reproduce")
    (folder / "notes.txt").write_text("scratch")
    (folder / ".hidden").write_text("ignored")
    reply = mcp.ok("next_activity", session_index=index, activity_id="diagnose", step_manifest=[])
    warnings = reply.meta["validation"]["warnings"]
    assert any("not declared as artifacts" in w and "notes.txt" in w for w in warnings), warnings
    assert not any(".hidden" in w or "session.json" in w for w in warnings)
    declared = mcp.ok(
        "next_activity",
        session_index=index,
        activity_id="fix",
        step_manifest=[],
        artifacts_produced=[{"id": "notes", "name": "notes.txt"}],
    )
    assert not any("not declared" in w for w in declared.meta["validation"]["warnings"])


def test_activity_outcome_once_per_visit_and_progress_on_entered(mcp: McpProcess) -> None:
    index, folder = start(mcp, workflow_id="bug-fix")
    mcp.ok("next_activity", session_index=index, activity_id="reproduce", progress_published=True)
    outcome = [{"activity_id": "reproduce", "outcome": "seen"}]
    mcp.ok(
        "next_activity",
        session_index=index,
        activity_id="diagnose",
        step_manifest=[],
        activity_manifest=outcome,
        progress_published=False,
    )
    mcp.ok(
        "next_activity",
        session_index=index,
        activity_id="fix",
        step_manifest=[],
        activity_manifest=[*outcome, {"activity_id": "diagnose", "outcome": "found"}],
    )
    recorded = [(e["activity"], e["data"]["outcome"]) for e in events(folder, "activity_outcome")]
    assert recorded == [("reproduce", "seen"), ("diagnose", "found")]
    published = [(e["activity"], e["data"]["published"]) for e in events(folder, "progress_published")]
    assert published == [("reproduce", True), ("diagnose", False)]
    activities = mcp.ok("inspect_session", session_index=index, view="activities").parsed
    assert activities["outcomes"] == [
        {"activity": "reproduce", "outcome": "seen"},
        {"activity": "diagnose", "outcome": "found"},
    ]
    assert activities["progress_mark_unpublished"] == ["diagnose"]
    # a revisit is a new visit: its outcome is recorded again
    mcp.ok("next_activity", session_index=index, activity_id="reproduce", step_manifest=[])
    mcp.ok(
        "next_activity",
        session_index=index,
        activity_id="diagnose",
        step_manifest=[],
        activity_manifest=[{"activity_id": "reproduce", "outcome": "seen again"}],
    )
    assert [e["data"]["outcome"] for e in events(folder, "activity_outcome")][-1] == "seen again"


def test_an_outcome_given_in_the_call_that_enters_its_activity_is_recorded_once(mcp: McpProcess) -> None:
    """Issue 25: one visit, two ``activity_outcome`` rows — the outcome came with the entering call, and the
    next call repeating the manifest recorded it again."""
    index, folder = start(mcp, workflow_id="bug-fix")
    outcome = [{"activity_id": "reproduce", "outcome": "seen"}]
    mcp.ok("next_activity", session_index=index, activity_id="reproduce", activity_manifest=outcome)
    mcp.ok("next_activity", session_index=index, activity_id="diagnose", step_manifest=[], activity_manifest=outcome)
    mcp.ok("next_activity", session_index=index, activity_id="fix", step_manifest=[], activity_manifest=outcome)
    history = session_json(folder)["history"]
    rows = [(e["type"], e.get("activity")) for e in history if e["type"] in ("activity_entered", "activity_outcome")]
    assert rows == [
        ("activity_entered", "reproduce"),
        ("activity_outcome", "reproduce"),  # on the visit it entered
        ("activity_entered", "diagnose"),
        ("activity_entered", "fix"),
    ]
    # re-entering the activity it leaves: the outcome is the visit's that ends, and the new visit records again
    mcp.ok(
        "next_activity",
        session_index=index,
        activity_id="fix",
        step_manifest=[],
        activity_manifest=[{"activity_id": "fix", "outcome": "first try"}],
    )
    mcp.ok(
        "next_activity",
        session_index=index,
        activity_id="verify",
        step_manifest=[],
        activity_manifest=[{"activity_id": "fix", "outcome": "second try"}],
    )
    fixes = [
        (e["type"], e["data"]["outcome"] if e["type"] == "activity_outcome" else "")
        for e in session_json(folder)["history"]
        if e.get("activity") == "fix" and e["type"] in ("activity_entered", "activity_outcome")
    ]
    assert fixes == [
        ("activity_entered", ""),
        ("activity_outcome", "first try"),
        ("activity_entered", ""),
        ("activity_outcome", "second try"),
    ]


# ------------------------------------------------------------------------------------------ 1


def test_inspect_views_have_their_own_shape(mcp: McpProcess) -> None:
    index, _ = start(mcp, workflow_id="bug-fix", user_request="crash")
    identity = mcp.ok("inspect_session", session_index=index, view="identity")
    assert identity.parsed["sessionIndex"] == index and "view" not in identity.parsed
    assert identity.meta["view"] == "identity"
    assert mcp.ok("inspect_session", session_index=index, view="variables", variable="user_request").parsed == "crash"
    assert mcp.ok("inspect_session", session_index=index, view="variables", variable="nope").parsed == {
        "variable": "nope",
        "present": False,
    }
    history = mcp.ok("inspect_session", session_index=index, view="history").parsed
    assert set(history) == {"count", "byType", "milestones"}
    assert isinstance(mcp.ok("inspect_session", session_index=index, view="children").parsed, list)


# ------------------------------------------------------------------------------------------ 5

YAML_TOOLS = frozenset({"list_workflows", "get_workflow", "get_activity", "present_checkpoint", "get_technique"})


def _yaml12(text: str) -> Any:
    from ruamel.yaml import YAML

    reader = YAML(typ="safe", pure=True)
    reader.version = (1, 2)
    return reader.load(text)


def _yaml_parts(tool: str, text: str) -> list[str]:
    if tool == "get_technique":
        text = text.split("\n\n", 1)[1] if text.startswith("session_index:") else text
    return text.split("\n\n---\n\n") if tool in ("get_workflow", "get_activity") else [text]


def check_yaml12(tool: str, text: str) -> int:
    """Every YAML part of one answer reads the same under YAML 1.2 as under 1.1; returns the parts checked."""
    parts = _yaml_parts(tool, text)
    for part in parts:
        assert _yaml12(part) == yaml.safe_load(part), f"{tool}: a YAML 1.2 reader disagrees:\n{part[:2000]}"
    return len(parts)


@pytest.mark.parametrize(
    "value",
    [
        "08",
        "8",
        "1.5",
        ".5",
        "1e3",
        "0x1F",
        "0o7",
        "1_000",
        "true",
        "False",
        "null",
        "~",
        "",
        "12:30",
        "2024-01-02",
        ".inf",
        "-.INF",
        ".nan",
        "+1",
    ],
)
def test_numeric_looking_strings_are_quoted(value: str) -> None:
    assert needs_quotes(value)
    text = to_yaml({"artifactPrefix": value, "list": [value]})
    assert _yaml12(text) == yaml.safe_load(text) == {"artifactPrefix": value, "list": [value]}


@pytest.mark.parametrize("value", ["1.0.0", "abc", "v1", "08-notes.md", "a: b", "_", "."])
def test_ordinary_strings_stay_plain_or_survive(value: str) -> None:
    text = to_yaml({"k": value})
    assert _yaml12(text) == yaml.safe_load(text) == {"k": value}


def walk_and_check_yaml(mcp: McpProcess, workflow_id: str) -> int:
    """A full walk of one workflow (every activity in order, every technique step fetched); every YAML answer
    is read with a YAML 1.2 parser and compared. Returns the number of YAML parts checked."""
    checked = check_yaml12("list_workflows", mcp.ok("list_workflows").text)
    index, _ = start(mcp, workflow_id=workflow_id)
    summary = mcp.ok("get_workflow", session_index=index)
    checked += check_yaml12("get_workflow", summary.text)
    stubs = summary.parsed[1]["activities"]
    assert any(needs_quotes(stub["artifactPrefix"]) for stub in stubs)  # "01", "02" …: quoted in the text
    for stub in stubs:
        assert f"artifactPrefix: '{stub['artifactPrefix']}'" in summary.text
        mcp.ok("next_activity", session_index=index, activity_id=stub["id"], step_manifest=[])
        activity = mcp.ok("get_activity", session_index=index, context_tokens=200000, agent_id=f"w-{stub['id']}")
        checked += check_yaml12("get_activity", activity.text)
        body = activity.parsed[1]
        assert body["artifact_prefix"] == stub["artifactPrefix"]
        for step in body.get("steps") or []:
            if step.get("kind") == "technique":
                reply = mcp.call("get_technique", session_index=index, step_id=step["id"], full=True)
                if not reply.is_error:
                    checked += check_yaml12("get_technique", reply.text)
    return checked


def test_every_yaml_answer_of_a_walk_reads_the_same_under_yaml_1_2(mcp: McpProcess) -> None:
    assert walk_and_check_yaml(mcp, "bug-fix") > 10


# ------------------------------------------------------------------------------------------ 6


def _artifact_corpus(root: Path) -> None:
    (root / "meta").mkdir(parents=True)
    (root / "meta" / "workflow.yaml").write_text("id: meta\nversion: 1.0.0\ntitle: Meta\n")
    wf = root / "docs"
    (wf / "activities").mkdir(parents=True)
    (wf / "workflow.yaml").write_text("id: docs\nversion: 1.0.0\ntitle: Docs\ninitialActivity: write\n")
    (wf / "activities" / "01-write.yaml").write_text(
        "id: write\nversion: 1.0.0\nname: Write\nsteps:\n"
        "  - {kind: technique, technique: writing::draft}\n"
        "  - {kind: technique, technique: writing::polish}\n"
    )
    group = wf / "techniques" / "writing"
    group.mkdir(parents=True)

    def technique(path: Path, outputs: str) -> None:
        path.write_text(
            "---\nmetadata:\n  version: 1.0.0\n---\n\n## Capability\n\nWrite things.\n\n"
            f"## Outputs\n\n{outputs}\n## Protocol\n\n1. Do it.\n"
        )

    shared = "### report\n\nThe report.\n\n#### artifact\n\n`report.md`\n\n"
    technique(group / "TECHNIQUE.md", shared + "### log\n\nA log.\n\n#### artifact\n\n`group-log.md`\n\n")
    technique(
        group / "draft.md", "### draft_report\n\nDraft.\n\n#### artifact\n\n`report.md`\n\n#### audience\n\nhuman\n\n"
    )
    technique(
        group / "polish.md",
        "### final\n\nFinal.\n\n#### artifact\n\n`report.md`\n\n### notes\n\nNotes.\n\n#### artifact\n\n`notes.md`\n\n",
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_step_artifacts_by_file_name_own_outputs_only(
    transport: str, spawn_mcp: Callable[..., McpProcess], tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    _artifact_corpus(corpus)
    mcp = spawn_mcp(workflow_dir=corpus, transport=transport)
    index, _ = start(mcp, workflow_id="docs")
    mcp.ok("next_activity", session_index=index, activity_id="write")
    reply = mcp.ok("get_activity", session_index=index, context_tokens=100000)
    expected = [{"id": "draft_report", "name": "report.md", "audience": "human"}, {"id": "notes", "name": "notes.md"}]
    assert reply.parsed[1]["artifacts"] == expected
    assert reply.meta["artifacts"] == expected


# ------------------------------------------------------------------------------------------ 9


def _legacy_token(payload: dict[str, Any]) -> str:
    body = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")
    return f"{body}.{'ab' * 32}"


def write_legacy_folder(folder: Path, *, state: dict[str, Any], token: dict[str, Any] | None = None) -> None:
    """A planning folder as the older server left it (our own example data)."""
    folder.mkdir(parents=True)
    (folder / "workflow-state.json").write_text(
        json.dumps({"startedAt": "2026-03-04T05:06:07.000Z", "state": state}, indent=2)
    )
    (folder / "plan.md").write_text("# plan\n")
    if token is not None:
        (folder / ".session-token").write_text(_legacy_token(token) + "\n")


def test_legacy_folder_migrates_on_first_touch(mcp: McpProcess) -> None:
    folder = mcp.planning / "legacy-login-bug"
    token = {"wf": "bug-fix", "v": "1.0.0", "sid": "OLD123", "aid": "lead", "act": "diagnose"}
    write_legacy_folder(
        folder,
        token=token,
        state={
            "workflowId": "bug-fix",
            "currentActivity": "diagnose",
            "completedActivities": ["reproduce"],
            "variables": {"bug_summary": "login fails", "attempts": 2},
            "checkpointResponses": {"reproduce-confirm-repro": "yes", "bogus": 7},
        },
    )
    old_token = (folder / ".session-token").read_bytes()
    reply = mcp.ok("start_session", planning_folder=str(folder))
    assert reply.parsed["migrated"] is True and reply.parsed["planning_slug"] == "legacy-login-bug"
    index = reply.parsed["session_index"]
    data = (folder / "session.json").read_bytes()
    assert verify_seal((mcp.key_dir / "secret").read_bytes(), data, (folder / ".session-token").read_bytes())
    state = json.loads(data)
    assert (state["workflowId"], state["currentActivity"], state["agentId"]) == ("bug-fix", "diagnose", "orchestrator")
    assert state["completedActivities"] == ["reproduce"] and state["variables"]["attempts"] == 2
    assert state["checkpointResponses"] == {
        "reproduce-confirm-repro": {"optionId": "yes", "respondedAt": "1970-01-01T00:00:00.000Z"}
    }
    assert state["startedAt"] == "2026-03-04T05:06:07.000Z"
    assert state["history"][0]["data"] == {"migratedFrom": "workflow-state.json"}
    # nothing lost: the old files are kept beside the new pair
    assert (folder / ".session-token.legacy").read_bytes() == old_token
    assert json.loads((folder / "workflow-state.json.migrated").read_text())["state"]["workflowId"] == "bug-fix"
    assert not (folder / "workflow-state.json").exists() and (folder / "plan.md").exists()
    # it is an ordinary session now: resumed (not migrated again), navigable, found by index
    again = mcp.ok("start_session", planning_folder=str(folder)).parsed
    assert again["session_index"] == index and "migrated" not in again
    status = mcp.ok("get_workflow_status", session_index=index).parsed
    assert status["current_activity"] == "diagnose" and status["completed_activities"] == ["reproduce"]
    mcp.ok("next_activity", session_index=index, activity_id="fix", step_manifest=[])


def test_legacy_folder_from_token_only_fields_and_a_broken_one(mcp: McpProcess) -> None:
    folder = mcp.planning / "legacy-token-only"
    write_legacy_folder(folder, state={"variables": {"x": 1}}, token={"wf": "code-review", "v": "9", "act": ""})
    parsed = mcp.ok("start_session", planning_folder=str(folder)).parsed
    assert parsed["migrated"] is True and parsed["workflow"]["id"] == "code-review"
    assert session_json(folder)["workflowVersion"] == parsed["workflow"]["version"]  # "9" is no version: re-stamped
    broken = mcp.planning / "legacy-broken"
    broken.mkdir(parents=True)
    (broken / "workflow-state.json").write_text("{not json")
    before = sorted(os.listdir(broken))
    text = mcp.err("start_session", planning_folder=str(broken))
    assert text.startswith("MIGRATION_FAILED: ") and "workflow-state.json" in text and "not valid JSON" in text
    assert sorted(os.listdir(broken)) == before and (broken / "workflow-state.json").read_text() == "{not json"


REAL_CORPUS = PUBLIC_CORPUS


@needs_public_corpus
def test_real_corpus_walk_reads_the_same_under_yaml_1_2(spawn_mcp: Callable[..., McpProcess]) -> None:
    """work-package's ``artifactPrefix: 08`` was read as the number 8 by YAML 1.2 readers."""
    mcp = spawn_mcp(workflow_dir=REAL_CORPUS)
    assert walk_and_check_yaml(mcp, "work-package") > 30
