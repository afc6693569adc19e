"""The session and navigation tools over the real stdio wire (``orchestrator mcp`` as a subprocess).

One server (the ``mcp`` fixture, the repository's ``workflows/``) serves most tests; each test opens its own
sessions. Sealed files are edited only through the session package's own canonical writer and the key the
server created (to open a checkpoint or break a seal), never by patching server code.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from tests.workflow.conftest import PINNED_DAY as TODAY
from tests.workflow.conftest import REPO, McpProcess

from orchestrator.workflow.session.canonical import canonical_bytes
from orchestrator.workflow.session.keys import seal
from orchestrator.workflow.session.sessionfile import ActiveCheckpoint, SessionFile, new_history

MY_TOOLS = {
    "discover",
    "list_workflows",
    "health_check",
    "start_session",
    "dispatch_child",
    "get_workflow",
    "next_activity",
    "get_workflow_status",
    "inspect_session",
    "record_usage",
    "get_trace",
}


# ---------------------------------------------------------------------------------------------- helpers


@pytest.fixture
def day_pinned(mcp: McpProcess) -> Iterator[str]:
    """The server's clock on ``TODAY`` (noon UTC) for one test, so dated slugs do not depend on the run's date."""
    with mcp.pinned_day() as day:
        yield day


def session_json(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "session.json").read_text())


def reseal(mcp: McpProcess, folder: Path, edit: Callable[[SessionFile], SessionFile]) -> None:
    """Rewrite a session file through ``edit`` and seal it with the server's key (test setup only)."""
    key = (mcp.key_dir / "secret").read_bytes()
    top = msgspec.json.decode((folder / "session.json").read_bytes(), type=SessionFile)
    data = canonical_bytes(edit(top))
    (folder / "session.json").write_bytes(data)
    (folder / ".session-token").write_text(seal(key, data))


def start(mcp: McpProcess, **args: Any) -> tuple[str, Path]:
    reply = mcp.ok("start_session", **args)
    return reply.parsed["session_index"], Path(reply.parsed["planning_folder_path"])


def history_types(state: dict[str, Any]) -> list[str]:
    return [event["type"] for event in state["history"]]


def make_checkout(path: Path, origin: str) -> Path:
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {origin}\n')
    return path


def transients(mcp: McpProcess) -> list[Path]:
    return sorted(mcp.tmp_dir.glob("workflow-server-transient-*"))


# ---------------------------------------------------------------------------------------------- cold


def test_tools_list_advertises_explicit_schemas(mcp: McpProcess) -> None:
    tools = {tool.name: tool for tool in mcp.list_tools()}
    assert set(tools) >= MY_TOOLS
    start_schema = tools["start_session"].input_schema
    assert start_schema["additionalProperties"] is False
    assert start_schema["properties"]["context_mode"]["enum"] == ["persistent", "fresh"]
    assert tools["dispatch_child"].input_schema["required"] == ["session_index", "workflow_id"]
    assert tools["dispatch_child"].input_schema["additionalProperties"] is False
    assert tools["next_activity"].input_schema["required"] == ["session_index", "activity_id"]
    assert tools["record_usage"].input_schema["properties"]["basis"]["enum"] == ["delta", "cumulative"]


def test_discover_list_workflows_health(mcp: McpProcess) -> None:
    text = mcp.ok("discover").text
    lines = text.splitlines()
    assert lines[:3] == ["server: workflow-server", "version: 2.1.0", "repo_binding: required_on_start_session"]
    assert lines[3] == "" and "Bootstrap" in text

    listed = mcp.ok("list_workflows").parsed
    assert isinstance(listed, list)
    ids = [entry["id"] for entry in listed]
    assert ids == ["bug-fix", "code-review"] and "meta" not in ids
    bug = listed[0]
    assert bug["version"] == "1.0.0" and "bug" in bug["tags"] and bug["title"] == "Bug Fix" and bug["description"]

    health = mcp.ok("health_check").parsed
    assert health["status"] == "healthy" and health["server"] == "workflow-server"
    assert health["workflows_available"] == 2 and health["uptime_seconds"] >= 0
    assert health["repo_binding"] == "required_on_start_session"


def test_parameters_are_validated_before_the_handler(mcp: McpProcess) -> None:
    assert "InvalidParams" in (text := mcp.err("start_session", workflow_id="bug-fix", bogus=1)) and "bogus" in text
    assert "Unknown parameter" in mcp.err("dispatch_child", session_index="AAAAAA", workflow_id="x", extra=True)
    assert "Missing required parameter 'session_index'" in mcp.err("get_workflow")
    assert "Missing required parameter 'basis'" in mcp.err(
        "record_usage", session_index="AAAAAA", activity="a", usage={}
    )
    assert "expected string" in mcp.err("next_activity", session_index="AAAAAA", activity_id=5)
    assert "not one of" in mcp.err("inspect_session", session_index="AAAAAA", view="bogus")
    assert "must be > 0" in mcp.err("next_activity", session_index="AAAAAA", activity_id="x", context_tokens=0)
    assert "Missing required parameter 'step_manifest[0].output'" in mcp.err(
        "next_activity", session_index="AAAAAA", activity_id="x", step_manifest=[{"step_id": "a"}]
    )
    assert "INVALID_INDEX" in mcp.err("get_workflow_status", session_index="abc")
    assert "NOT_FOUND" in mcp.err("get_workflow_status", session_index="AAAAAA")


# ---------------------------------------------------------------------------------------------- start_session


def test_start_session_new_folder_then_resume_with_drift(mcp: McpProcess) -> None:
    folder = mcp.planning / "acc-2"
    reply = mcp.ok("start_session", workflow_id="bug-fix", planning_folder=str(folder), user_request="login fails")
    body = reply.parsed
    index = body["session_index"]
    assert re.fullmatch(r"[A-Z2-7]{6}", index)
    assert body["planning_slug"] == "acc-2" and body["planning_folder_path"] == str(folder)
    assert body["workflow"] == {
        "id": "bug-fix",
        "version": "1.0.0",
        "title": "Bug Fix",
        "description": body["workflow"]["description"],
    }
    assert body["execution_path"] == "agent"
    assert reply.meta["session_index"] == index and reply.meta["validation"] == {"status": "valid", "warnings": []}
    state = session_json(folder)
    assert state["workflowVersion"] == "1.0.0" and state["seq"] == 0 and state["agentId"] == "orchestrator"
    assert state["variables"]["fix_attempts"] == 0 and state["variables"]["repro_confirmed"] is False
    assert state["variables"]["user_request"] == "login fails"
    assert state["variables"]["planning_folder_path"] == str(folder)
    assert history_types(state) == ["workflow_started", "variables_seeded"]

    again = mcp.ok(
        "start_session",
        workflow_id="code-review",
        planning_folder=str(folder),
        agent_id="orch-2",
        user_request="login still fails",
        repo="https://github.com/acme/widgets.git",
    ).parsed
    assert again["session_index"] == index and again["workflow"]["id"] == "bug-fix"
    assert again["repo"] == "acme/widgets"
    state = session_json(folder)
    assert state["seq"] == 1 and state["agentId"] == "orch-2" and state["repo"] == "acme/widgets"
    assert state["variables"]["user_request"] == "login still fails"

    mcp.ok("start_session", planning_folder=str(folder), agent_id="orch-2")
    assert session_json(folder)["seq"] == 1  # nothing drifted: no write
    assert "REPO_MISMATCH" in mcp.err("start_session", planning_folder=str(folder), repo="other/thing")


def test_start_session_path_and_workflow_errors(mcp: McpProcess) -> None:
    assert "must be an absolute path" in mcp.err("start_session", workflow_id="bug-fix", planning_folder="rel/acc")
    outside = mcp.root / "x" / "y"
    text = mcp.err("start_session", workflow_id="bug-fix", planning_folder=str(outside))
    assert "PLANNING_FOLDER_OUTSIDE_ROOT" in text and str(mcp.planning) in text
    assert not outside.exists()
    assert "Workflow not found" in mcp.err("start_session", workflow_id="nope")


@pytest.mark.usefixtures("day_pinned")
def test_start_session_derives_the_next_free_dated_slug(mcp: McpProcess) -> None:
    _, first = start(mcp, workflow_id="code-review")
    _, second = start(mcp, workflow_id="code-review")
    assert first == mcp.planning / f"{TODAY}-code-review"
    assert second == mcp.planning / f"{TODAY}-code-review-2"


def test_context_mode_persistent_collapses_the_repeated_bundle(mcp: McpProcess) -> None:
    index, folder = start(mcp, workflow_id="code-review", context_mode="persistent")
    bundle, _ = mcp.ok("get_workflow", session_index=index).parsed
    assert "techniques" in bundle
    bundle, summary = mcp.ok("get_workflow", session_index=index).parsed
    assert bundle["delivery"] == "unchanged" and re.fullmatch(r"[0-9a-f]{16}", bundle["content_hash"])
    assert summary["initialActivity"] == "scope-review"
    assert session_json(folder)["contextMode"] == "persistent"


# ---------------------------------------------------------------------------------------------- transients


def test_transient_meta_session_is_promoted_by_dispatch_child(mcp: McpProcess) -> None:
    before = set(transients(mcp))
    reply = mcp.ok("start_session", user_request="fix login")
    body = reply.parsed
    meta_index = body["session_index"]
    assert body["workflow"]["id"] == "meta" and body["repo_unbound"] is True
    assert "planning_folder_path" not in body
    (tmp,) = set(transients(mcp)) - before
    assert session_json(tmp)["sessionIndex"] == meta_index and "planningFolderPath" not in session_json(tmp)

    child = mcp.ok(
        "dispatch_child", session_index=meta_index, workflow_id="bug-fix", planning_slug="acc-18", repo="acme/widgets"
    )
    target = mcp.planning / "acc-18"
    assert child.parsed["session_index"] != meta_index
    assert child.parsed["workflow"] == {"id": "bug-fix", "version": "1.0.0", "initialActivity": "reproduce"}
    assert child.parsed["planning_slug"] == "acc-18" and child.parsed["planning_folder_path"] == str(target)
    assert child.parsed["execution_path"] == "agent" and child.meta["session_index"] == child.parsed["session_index"]
    assert not tmp.exists()
    top = session_json(target)
    assert top["sessionIndex"] == meta_index and top["repo"] == "acme/widgets"
    entry = top["triggeredWorkflows"][0]
    assert entry["sessionIndex"] == child.parsed["session_index"] and entry["status"] == "running"
    assert entry["state"]["variables"]["user_request"] == "fix login"
    assert entry["state"]["agentId"] == "worker" and entry["state"]["repo"] == "acme/widgets"
    assert "workflow_triggered" in history_types(top)

    status = mcp.ok("get_workflow_status", session_index=meta_index).parsed
    assert status["children"] == [
        {"index": 0, "session_index": child.parsed["session_index"], "workflow_id": "bug-fix", "status": "running"}
    ]
    child_status = mcp.ok("get_workflow_status", session_index=child.parsed["session_index"]).parsed
    assert child_status["parent"]["session_index"] == meta_index and child_status["workflow"]["id"] == "bug-fix"

    second = mcp.ok("dispatch_child", session_index=meta_index, workflow_id="code-review").parsed
    assert second["session_index"] not in (meta_index, child.parsed["session_index"])
    assert [e["workflowId"] for e in session_json(target)["triggeredWorkflows"]] == ["bug-fix", "code-review"]
    assert "Workflow not found" in mcp.err("dispatch_child", session_index=meta_index, workflow_id="nope")


def test_promotion_onto_an_occupied_folder_writes_nothing(mcp: McpProcess) -> None:
    occupied = mcp.planning / "acc-19"
    start(mcp, workflow_id="bug-fix", planning_folder=str(occupied))
    before = set(transients(mcp))
    meta_index = mcp.ok("start_session", user_request="another").parsed["session_index"]
    (tmp,) = set(transients(mcp)) - before
    snapshot = {
        p: p.read_bytes()
        for p in (occupied / "session.json", occupied / ".session-token", tmp / "session.json", tmp / ".session-token")
    }

    text = mcp.err("dispatch_child", session_index=meta_index, workflow_id="bug-fix", planning_slug="acc-19")
    assert text.startswith("FOLDER_OCCUPIED")
    assert {p: p.read_bytes() for p in snapshot} == snapshot
    assert mcp.ok("get_workflow_status", session_index=meta_index).parsed["status"] == "active"


def test_parent_chain_deeper_than_five_warns(mcp: McpProcess) -> None:
    index, _ = start(mcp, workflow_id="code-review")
    warnings: list[str] = []
    for _ in range(6):
        reply = mcp.ok("dispatch_child", session_index=index, workflow_id="code-review")
        index = reply.parsed["session_index"]
        warnings = reply.meta["validation"]["warnings"]
    assert any("Parent chain depth 6 exceeds" in w for w in warnings)


# ---------------------------------------------------------------------------------------------- working_directory


@pytest.mark.usefixtures("day_pinned")
def test_working_directory_derives_repo_planning_root_and_bag(mcp: McpProcess) -> None:
    checkout = make_checkout(mcp.root / "p" / "widgets", "git@github.com:acme/widgets.git")
    (checkout / "src").mkdir()
    reply = mcp.ok(
        "start_session", workflow_id="bug-fix", working_directory=str(checkout / "src"), user_request="add export"
    )
    root = checkout / ".engineering" / "artifacts" / "planning"
    assert reply.parsed["planning_folder_path"] == str(root / f"{TODAY}-bug-fix")
    assert reply.parsed["repo"] == "acme/widgets" and reply.parsed["execution_path"] == "agent"
    bag = session_json(root / f"{TODAY}-bug-fix")["variables"]
    assert bag["target_repo"] == "acme/widgets" and bag["host_repo_path"] == str(checkout)
    assert bag["component_path"] == "." and bag["is_monorepo"] is False
    assert bag["planning_folder_path"] == str(root / f"{TODAY}-bug-fix")
    # the project root is searched from now on
    assert mcp.ok("get_workflow_status", session_index=reply.parsed["session_index"]).parsed["status"] == "active"

    again = mcp.ok("start_session", workflow_id="bug-fix", working_directory=str(checkout)).parsed
    assert again["planning_folder_path"] == str(root / f"{TODAY}-bug-fix-2")
    assert "REPO_MISMATCH" in mcp.err(
        "start_session", workflow_id="bug-fix", working_directory=str(checkout), repo="other/thing"
    )
    assert "PLANNING_FOLDER_OUTSIDE_ROOT" in mcp.err(
        "start_session",
        workflow_id="bug-fix",
        working_directory=str(checkout),
        planning_folder=str(mcp.root / "x" / "y"),
    )
    assert "must be an absolute path" in mcp.err("start_session", workflow_id="bug-fix", working_directory="p/w")


def test_working_directory_must_lie_under_a_configured_root(mcp: McpProcess, tmp_path: Path) -> None:
    outside = make_checkout(tmp_path / "elsewhere" / "widgets", "git@github.com:acme/widgets.git")
    missing = tmp_path / "elsewhere" / "no-such-checkout"
    texts = [
        mcp.err("start_session", workflow_id="bug-fix", working_directory=str(path))
        for path in (outside, missing, tmp_path / "elsewhere" / "file.txt")
    ]
    for text, path in zip(texts, (outside, missing, tmp_path / "elsewhere" / "file.txt"), strict=True):
        assert text.startswith("PATH_OUTSIDE_ROOT: ") and "WORKFLOW_SERVER_WORKING_ROOTS" in text
        assert text.replace(str(path), "<path>") == texts[0].replace(str(outside), "<path>")  # existence not told
    # a symlink under a root that leads out of it is judged by where it leads
    (mcp.root / "p").mkdir(exist_ok=True)
    link = mcp.root / "p" / "sneaky"
    link.symlink_to(outside)
    assert mcp.err("start_session", workflow_id="bug-fix", working_directory=str(link)).startswith(
        "PATH_OUTSIDE_ROOT: "
    )
    assert not (outside / ".engineering").exists()


def test_a_checkouts_engineering_symlink_out_of_every_root_is_refused(mcp: McpProcess, tmp_path: Path) -> None:
    # a cloned repository can carry .engineering as a symlink (git keeps them) pointing anywhere
    checkout = make_checkout(mcp.root / "p" / f"linked-{tmp_path.name}", "git@github.com:acme/linked.git")
    outside = tmp_path / "outside"
    outside.mkdir()
    (checkout / ".engineering").symlink_to(outside)
    text = mcp.err("start_session", workflow_id="bug-fix", working_directory=str(checkout))
    assert text.startswith("PLANNING_FOLDER_OUTSIDE_ROOT: ") and "nothing was written" in text
    assert list(outside.iterdir()) == []


def test_a_planning_folder_that_resolves_outside_its_root_is_refused(mcp: McpProcess, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    mcp.planning.mkdir(parents=True, exist_ok=True)
    (mcp.planning / "planted").symlink_to(outside)
    text = mcp.err("start_session", workflow_id="bug-fix", planning_folder=str(mcp.planning / "planted"))
    assert text.startswith("PLANNING_FOLDER_OUTSIDE_ROOT: ") and "nothing was written" in text
    assert list(outside.iterdir()) == []


def test_a_session_folder_outside_the_roots_is_not_opened(mcp: McpProcess, tmp_path: Path) -> None:
    """Resume by path looks only where sessions live: outside, a folder with a session.json and a folder
    with nothing get the same refusal (no SEAL_MISMATCH that would tell a file is there)."""
    index, folder = start(mcp, workflow_id="bug-fix")
    copy = tmp_path / "elsewhere" / "copied"
    copy.mkdir(parents=True)
    for name in ("session.json", ".session-token"):
        (copy / name).write_bytes((folder / name).read_bytes())
    empty = tmp_path / "elsewhere" / "empty"
    texts = [mcp.err("start_session", workflow_id="bug-fix", planning_folder=str(path)) for path in (copy, empty)]
    assert all(text.startswith("PLANNING_FOLDER_OUTSIDE_ROOT: ") for text in texts), texts
    assert texts[0].replace(str(copy), "<p>") == texts[1].replace(str(empty), "<p>")
    assert mcp.ok("start_session", planning_folder=str(folder)).parsed["session_index"] == index


def test_a_group_readable_key_stops_the_server_naming_the_fix(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "secret").write_bytes(os.urandom(32))
    (keys / "secret").chmod(0o640)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO / "src"),
        "WORKFLOW_WORKSPACE": str(tmp_path),
        "WORKFLOW_SERVER_KEY_DIR": str(keys),
    }
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "mcp"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and f"chmod 600 {keys / 'secret'}" in done.stderr and done.stdout == ""


@pytest.mark.usefixtures("day_pinned")
def test_durable_meta_start_opens_its_client_or_answers_a_decision(mcp: McpProcess) -> None:
    checkout = make_checkout(mcp.root / "p" / "gadgets", "https://github.com/acme/gadgets")
    root = checkout / ".engineering" / "artifacts" / "planning"

    for request, kind in [
        ("raise the quality", "workflow_ambiguous"),
        ("bake a cake", "workflow_unmatched"),
        ("resume where we left off", "resume_intent"),
    ]:
        reply = mcp.ok("start_session", working_directory=str(checkout), user_request=request)
        assert "session_index" not in reply.parsed, request
        decision = reply.parsed["decision"]
        assert decision["kind"] == kind
        assert decision["retry_with"] == ["user_request", "target_workflow_id", "planning_folder", "fresh"]
        assert not root.exists() or not any(root.iterdir())
    ambiguous = mcp.ok("start_session", working_directory=str(checkout), user_request="raise the quality")
    assert {c["id"] for c in ambiguous.parsed["decision"]["candidates"]} == {"bug-fix", "code-review"}

    reply = mcp.ok("start_session", working_directory=str(checkout), user_request="please fix the login bug")
    body = reply.parsed
    client = body["client"]
    assert body["workflow"]["id"] == "meta" and client["workflow_id"] == "bug-fix"
    assert client["initialActivity"] == "reproduce"
    assert client["planning_folder_path"] == str(root / f"{TODAY}-bug-fix")
    top = session_json(root / f"{TODAY}-bug-fix")
    assert top["sessionIndex"] == body["session_index"]
    assert top["triggeredWorkflows"][0]["sessionIndex"] == client["session_index"]
    assert top["variables"]["client_session_index"] == client["session_index"]
    _, summary = mcp.ok("get_workflow", session_index=client["session_index"]).parsed
    assert summary["id"] == "bug-fix"

    pinned = mcp.ok(
        "start_session",
        working_directory=str(checkout),
        target_workflow_id="code-review",
        user_request="resume the review",
        fresh=True,
    ).parsed
    assert pinned["client"]["workflow_id"] == "code-review"


# ---------------------------------------------------------------------------------------------- get_workflow


def test_get_workflow_bundle_summary_and_write(mcp: McpProcess) -> None:
    index, folder = start(mcp, workflow_id="bug-fix")
    reply = mcp.ok("get_workflow", session_index=index)
    assert reply.text.count("\n\n---\n\n") == 1
    bundle, summary = reply.parsed
    assert any("activity-worker" in key or "dispatch-activity" in key for key in bundle["techniques"])
    assert summary["id"] == "bug-fix" and summary["initialActivity"] == "reproduce"
    assert summary["session_index"] == index and summary["planning_folder_path"] == str(folder)
    assert summary["rules"] and isinstance(summary["variables"], list)
    stubs = {a["id"]: a for a in summary["activities"]}
    assert list(stubs) == ["reproduce", "diagnose", "fix", "verify", "report", "assess"]
    assert stubs["reproduce"]["artifactPrefix"] == "01" and stubs["assess"]["artifactPrefix"] == "03"
    assert stubs["reproduce"]["exits"][0] == {"to": "diagnose", "isDefault": True}
    assert {"to": "reproduce", "condition": "checkpoint:cannot-reproduce:more-detail"} in stubs["reproduce"]["exits"]
    assert stubs["verify"]["exits"][0] == {"to": "assess", "condition": "tests_passing == true"}
    assert session_json(folder)["seq"] == 1


# ---------------------------------------------------------------------------------------------- next_activity


def test_next_activity_first_move_errors_and_token(mcp: McpProcess) -> None:
    index, folder = start(mcp, workflow_id="bug-fix")
    reply = mcp.ok("next_activity", session_index=index, activity_id="diagnose")
    assert reply.parsed == {"activity_id": "diagnose", "name": "Find the Cause", "session_index": index}
    assert any("First activity must be 'reproduce'" in w for w in reply.meta["validation"]["warnings"])
    assert reply.meta["validation"]["status"] == "warning"
    assert "." in reply.meta["trace_token"]

    assert "Activity not found: nope" in mcp.err("next_activity", session_index=index, activity_id="nope")
    text = mcp.err("next_activity", session_index=index, activity_id="fix", returning_activity_id="reproduce")
    assert text.startswith("STALE_POSITION")
    state = session_json(folder)
    assert state["currentActivity"] == "diagnose" and history_types(state)[-1] == "activity_entered"

    ok = mcp.ok(
        "next_activity",
        session_index=index,
        activity_id="fix",
        returning_activity_id="diagnose",
        step_manifest=[
            {"step_id": "narrow-down", "output": "cause found"},
            {"step_id": "confirm-fix-plan", "output": "proceed"},
        ],
    )
    assert ok.parsed["name"] == "Fix the Bug"


def test_next_activity_manifest_and_variable_warnings(mcp: McpProcess) -> None:
    index, folder = start(mcp, workflow_id="bug-fix")
    first = mcp.ok("next_activity", session_index=index, activity_id="reproduce")
    assert first.meta["validation"] == {"status": "valid", "warnings": []}

    reply = mcp.ok(
        "next_activity",
        session_index=index,
        activity_id="diagnose",
        step_manifest=[{"step_id": "cannot-reproduce", "output": "skipped"}, {"step_id": "bogus", "output": ""}],
        transition_condition="default",
        variables_changed={"repro_confirmed": "yes", "repro_steps": "{recipe}"},
        agent_id="w1",
        context_tokens=1000,
    )
    warnings = reply.meta["validation"]["warnings"]
    assert "Missing steps in manifest: [make-it-fail]" in warnings
    assert "Unexpected steps in manifest: [bogus]" in warnings
    assert "Step 'bogus' has empty output" in warnings
    assert any("'repro_confirmed'" in w and "boolean" in w for w in warnings)
    assert not any("repro_steps" in w for w in warnings)  # a {placeholder} skips the type check
    assert not any("condition" in w.lower() for w in warnings)
    batch = reply.meta["batch"]
    assert batch["activities"] == 0 and batch["delivered_chars"] == 0 and batch["may_continue"] is True
    state = session_json(folder)
    assert state["completedActivities"] == ["reproduce"] and state["condition"] == "default"
    sets = [e["data"] for e in state["history"] if e["type"] == "variable_set"]
    assert sets[0]["name"] == "repro_confirmed" and sets[0]["typeMismatch"] is True
    assert sets[0]["source"] == "variables_changed"
    assert [e["data"]["stepId"] for e in state["history"] if e["type"] == "step_completed"] == ["cannot-reproduce"]

    reply = mcp.ok(
        "next_activity",
        session_index=index,
        activity_id="fix",
        step_manifest=[{"step_id": "confirm-fix-plan", "output": "ok"}, {"step_id": "narrow-down", "output": "x"}],
    )
    warnings = reply.meta["validation"]["warnings"]
    assert any(w.startswith("Step order mismatch") for w in warnings)
    assert any("'narrow-down'" in w and "without an in-session technique fetch" in w for w in warnings)

    reply = mcp.ok("next_activity", session_index=index, activity_id="report")
    warnings = reply.meta["validation"]["warnings"]
    assert "Activity 'report' is not a direct transition from 'fix'. Valid transitions: [verify]" in warnings
    assert any(w.startswith("No step_manifest provided for previous activity 'fix'") for w in warnings)


def test_next_activity_condition_activity_manifest_and_artifacts(mcp: McpProcess) -> None:
    index, folder = start(mcp, workflow_id="bug-fix")
    mcp.ok("next_activity", session_index=index, activity_id="verify")
    reply = mcp.ok(
        "next_activity", session_index=index, activity_id="assess", transition_condition="default", step_manifest=[]
    )
    assert any(
        "requires condition 'tests_passing == true' but 'default' was claimed" in w
        for w in reply.meta["validation"]["warnings"]
    )
    reply = mcp.ok("next_activity", session_index=index, activity_id="report", exit="checkpoint:x:y", step_manifest=[])
    assert any("is the default exit" in w for w in reply.meta["validation"]["warnings"])

    empty = mcp.ok("next_activity", session_index=index, activity_id="report", activity_manifest=[])
    assert any(w.startswith("Empty activity_manifest") for w in empty.meta["validation"]["warnings"])
    (folder / "stray.txt").write_text("x")
    (folder / "notes.md").write_text("x")
    reply = mcp.ok(
        "next_activity",
        session_index=index,
        activity_id="report",
        activity_manifest=[
            {"activity_id": "nope", "outcome": ""},
            {"activity_id": "reproduce", "outcome": "done", "transition_condition": "weird"},
        ],
        artifacts_produced=[
            {"id": "notes", "name": "notes.md"},
            {"id": "far", "name": "far.md", "path": str(mcp.root / "elsewhere" / "far.md")},
        ],
        progress_published=True,
    )
    warnings = reply.meta["validation"]["warnings"]
    assert "Activity manifest references unknown activity 'nope'" in warnings
    assert "Activity 'nope' has empty outcome" in warnings
    assert any("claims transition condition 'weird'" in w for w in warnings)
    assert any("Artifact 'far'" in w and "outside the planning folder" in w for w in warnings)
    assert "Planning folder files not declared as artifacts: [stray.txt]" in warnings
    state = session_json(folder)
    assert [a["id"] for a in state["declaredArtifacts"]] == ["notes", "far"]
    outcomes = [e for e in state["history"] if e["type"] == "activity_outcome"]
    assert outcomes[-1]["activity"] == "reproduce" and outcomes[-1]["data"]["transitionCondition"] == "weird"
    assert history_types(state).count("progress_published") == 1


def test_terminal_move_completes_the_child_and_flips_the_parent(mcp: McpProcess) -> None:
    parent, _ = start(mcp, workflow_id="code-review")
    child = mcp.ok("dispatch_child", session_index=parent, workflow_id="bug-fix").parsed["session_index"]
    mcp.ok("next_activity", session_index=child, activity_id="reproduce")
    reply = mcp.ok("next_activity", session_index=child, activity_id="__terminal__", step_manifest=[])
    assert reply.parsed["name"] == "Workflow Complete"
    assert mcp.ok("get_workflow_status", session_index=child).parsed["status"] == "completed"
    identity = mcp.ok("inspect_session", session_index=child, view="identity").parsed
    assert identity["status"] == "completed" and identity["currentActivity"] == "__terminal__"

    status = mcp.ok("get_workflow_status", session_index=parent).parsed
    assert status["children"][0]["status"] == "completed"
    top = session_json(_folder_of(mcp, parent))
    entry = top["triggeredWorkflows"][0]
    assert entry["status"] == "completed" and entry["completedAt"].endswith("Z")
    assert "workflow_returned" in history_types(top)
    assert "workflow_completed" in history_types(entry["state"])


def _folder_of(mcp: McpProcess, index: str) -> Path:
    summary = mcp.ok("get_workflow", session_index=index).parsed[1]
    return Path(summary["planning_folder_path"])


# ---------------------------------------------------------------------------------------------- lock and seal


def test_active_checkpoint_locks_navigation_but_not_status(mcp: McpProcess) -> None:
    index, folder = start(mcp, workflow_id="bug-fix")
    mcp.ok("next_activity", session_index=index, activity_id="reproduce")

    def gate(top: SessionFile) -> SessionFile:
        answered = new_history(
            "checkpoint_response",
            activity="reproduce",
            checkpoint="cannot-reproduce",
            data={"optionId": "diagnose-anyway"},
        )
        return msgspec.structs.replace(
            top,
            active_checkpoint=ActiveCheckpoint(
                checkpoint_id="cannot-reproduce", activity_id="reproduce", yielded_at="2026-01-01T00:00:00.000Z"
            ),
            history=[*top.history, answered],
        )

    reseal(mcp, folder, gate)
    for tool, args in [("get_workflow", {}), ("next_activity", {"activity_id": "diagnose"}), ("get_trace", {})]:
        text = mcp.err(tool, session_index=index, **args)
        assert "Active checkpoint 'cannot-reproduce'" in text and text.startswith("CHECKPOINT_ACTIVE"), tool
    status = mcp.ok("get_workflow_status", session_index=index).parsed
    assert status["status"] == "blocked"
    assert status["active_checkpoint"]["checkpoint_id"] == "cannot-reproduce"
    assert status["last_checkpoint"]["option_id"] == "diagnose-anyway"
    mcp.ok("inspect_session", session_index=index)
    mcp.ok("record_usage", session_index=index, activity="reproduce", usage={"input_tokens": 1}, basis="delta")
    mcp.ok("dispatch_child", session_index=index, workflow_id="code-review")


def test_hand_edited_session_fails_its_seal_until_restored(mcp: McpProcess) -> None:
    index, folder = start(mcp, workflow_id="bug-fix")
    original = (folder / "session.json").read_bytes()
    (folder / "session.json").write_bytes(original.replace(b'"fix_attempts": 0', b'"fix_attempts": 7'))
    for tool, args in [
        ("get_workflow_status", {}),
        ("get_workflow", {}),
        ("inspect_session", {}),
        ("next_activity", {"activity_id": "reproduce"}),
    ]:
        assert "SEAL_MISMATCH" in mcp.err(tool, session_index=index, **args), tool
    assert "SEAL_MISMATCH" in mcp.err("start_session", planning_folder=str(folder))
    (folder / "session.json").write_bytes(original)
    assert mcp.ok("get_workflow_status", session_index=index).parsed["status"] == "active"


# ---------------------------------------------------------------------------------------------- status tools


def test_inspect_session_views(mcp: McpProcess) -> None:
    index, folder = start(mcp, workflow_id="bug-fix", user_request="crash")
    mcp.ok("next_activity", session_index=index, activity_id="reproduce")
    mcp.ok(
        "next_activity",
        session_index=index,
        activity_id="diagnose",
        step_manifest=[],
        activity_manifest=[{"activity_id": "reproduce", "outcome": "seen"}],
    )
    child = mcp.ok("dispatch_child", session_index=index, workflow_id="code-review").parsed["session_index"]

    reply = mcp.ok("inspect_session", session_index=index)
    summary = reply.parsed
    assert reply.meta["view"] == "summary" and reply.meta["session_index"] == index
    assert set(summary) == {"identity", "activities", "variables", "checkpoints", "history", "children"}
    assert set(summary) >= {"identity", "activities", "variables", "checkpoints", "history", "children"}
    assert summary["identity"]["sessionIndex"] == index and summary["identity"]["planningFolderPath"] == str(folder)
    assert summary["activities"]["completed"] == ["reproduce"]
    assert summary["activities"]["outcomes"] == [{"activity": "reproduce", "outcome": "seen"}]
    assert summary["activities"]["progress_mark_unreported"] == ["reproduce"]
    assert summary["history"]["byType"]["activity_entered"] == 2
    assert [m["type"] for m in summary["history"]["milestones"]][:2] == ["activity_entered", "activity_exited"]
    assert summary["children"][0]["sessionIndex"] == child and summary["children"][0]["cost_known"] is False

    # each view answers with its own shape, one variable with its bare value
    one = mcp.ok("inspect_session", session_index=index, view="variables", variable="user_request")
    assert one.parsed == "crash" and one.text == '"crash"'
    unset = mcp.ok("inspect_session", session_index=index, view="variables", variable="nope").parsed
    assert unset == {"variable": "nope", "present": False}
    bag = mcp.ok("inspect_session", session_index=index, view="variables").parsed
    assert bag["user_request"] == "crash"
    assert mcp.ok("inspect_session", session_index=index, view="checkpoints").parsed == {}
    assert mcp.ok("inspect_session", session_index=index, view="activities").parsed["completed"] == ["reproduce"]
    nested = mcp.ok("inspect_session", session_index=index, view="identity", child_index=0)
    assert nested.parsed["workflowId"] == "code-review" and nested.meta["child_session_index"] == child
    assert set(nested.parsed) >= {"workflowId", "sessionIndex", "status", "seq"}
    assert "NOT_FOUND" in mcp.err("inspect_session", session_index=index, child_index=3)
    assert session_json(folder)["seq"] == 3  # inspect and status never write


def test_record_usage_and_the_usage_view(mcp: McpProcess) -> None:
    index, _ = start(mcp, workflow_id="code-review")
    first = mcp.ok(
        "record_usage",
        session_index=index,
        activity="scope-review",
        usage={"input_tokens": 100, "output_tokens": 50},
        basis="delta",
        agent_id="w1",
    )
    assert first.parsed["status"] == "recorded" and first.parsed["usage_events"] == 1
    mcp.ok(
        "record_usage",
        session_index=index,
        activity="scope-review",
        usage={"total_tokens": 900},
        basis="cumulative",
        agent_id="w1",
    )
    assert "InvalidParams" in mcp.err("record_usage", session_index=index, activity="x", usage={})
    usage = mcp.ok("inspect_session", session_index=index, view="usage").parsed
    assert usage["totals"] == {"input_tokens": 100, "output_tokens": 50}
    assert usage["cumulative_latest_by_agent"]["w1"]["total_tokens"] == 900
    assert [row["basis"] for row in usage["rows"]] == ["delta", "cumulative"]
    assert usage["wall_clock_ms_not_additive"] is True and usage["unstated_basis"] == 0


def test_get_trace_memory_tokens_and_filters(mcp: McpProcess) -> None:
    index, _ = start(mcp, workflow_id="bug-fix")
    mcp.ok("get_workflow_status", session_index=index)
    mcp.ok("inspect_session", session_index=index, agent_id="w9")
    mcp.err("next_activity", session_index=index, activity_id="nope")
    token = mcp.ok("next_activity", session_index=index, activity_id="reproduce").meta["trace_token"]

    memory = mcp.ok("get_trace", session_index=index).parsed
    assert memory["source"] == "memory" and memory["tracing_enabled"] is True and memory["traceId"] == index
    names = [e["name"] for e in memory["events"]]
    assert names == ["start_session", "get_workflow_status", "inspect_session", "next_activity", "next_activity"]
    failed = memory["events"][3]
    assert failed["s"] == "error" and "Activity not found" in failed["err"]
    assert {"name", "ts", "ms", "s", "wf", "act", "aid"} <= set(memory["events"][0])
    assert memory["events"][-1]["act"] == "reproduce"

    from_tokens = mcp.ok("get_trace", session_index=index, trace_tokens=[token]).parsed
    assert from_tokens["source"] == "tokens" and from_tokens["event_count"] == 4
    assert [e["name"] for e in from_tokens["events"]] == names[:4]
    broken = token[:-4] + ("0000" if not token.endswith("0000") else "1111")
    bad = mcp.ok("get_trace", session_index=index, trace_tokens=[broken, "garbage"]).parsed
    assert any("HMAC signature verification failed" in e for e in bad["token_errors"]) and len(bad["token_errors"]) == 2
    only = mcp.ok("get_trace", session_index=index, agent_id="w9").parsed
    assert [e["name"] for e in only["events"]] == ["inspect_session"]


def test_audit_log_lines_and_schema_resources(mcp: McpProcess) -> None:
    mcp.err("get_workflow_status", session_index="abc")
    records = [r for r in mcp.log_records() if r.get("msg") == "tool_call"]
    assert records and all({"tool", "ms", "outcome"} <= set(r) for r in records)
    failed = [r for r in records if r["outcome"] == "error" and r["tool"] == "get_workflow_status"]
    assert failed[-1]["code"] == "INVALID_INDEX"
    assert any(r.get("msg") == "server_started" for r in mcp.log_records())

    index = mcp.read_resource("workflow-server://schemas")
    listed = json.loads(index.contents[0].text)
    assert "workflow-server://schemas/state" in listed["schemas"]
    state_schema = json.loads(mcp.read_resource("workflow-server://schemas/state").contents[0].text)
    assert "SessionFile" in json.dumps(state_schema)


# ---------------------------------------------------------------------------------------------- own corpus


def _write_corpus(root: Path, version: str = "1.0.0", extra_var: bool = False) -> None:
    (root / "meta").mkdir(parents=True, exist_ok=True)
    (root / "meta" / "workflow.yaml").write_text("id: meta\nversion: 1.0.0\ntitle: Meta\n")
    acts = root / "alpha" / "activities"
    acts.mkdir(parents=True, exist_ok=True)
    variables = "variables:\n  - {name: alpha_mode, type: string, defaultValue: plain}\n"
    if extra_var:
        variables += "  - {name: alpha_level, type: number, defaultValue: 2}\n"
    (root / "alpha" / "workflow.yaml").write_text(
        f"id: alpha\nversion: {version}\ntitle: Alpha\ntags: [alpha]\ninitialActivity: one\n{variables}"
    )
    (acts / "01-one.yaml").write_text(
        "id: one\nversion: 1.0.0\nname: One\ntransitions:\n  - {to: two, isDefault: true}\n"
    )
    (acts / "02-two.yaml").write_text("id: two\nversion: 1.0.0\nname: Two\n")
    (root / "broken").mkdir(exist_ok=True)
    (root / "broken" / "workflow.yaml").write_text("id: broken\nversion: 1.0.0\n")


def test_own_corpus_load_errors_and_version_drift(spawn_mcp: Callable[..., McpProcess], tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    _write_corpus(corpus)
    mcp = spawn_mcp(workflow_dir=corpus, env={"WORKFLOW_CORPUS_RECHECK_SECONDS": "0"})
    listed = mcp.ok("list_workflows").parsed
    assert [w["id"] for w in listed["workflows"]] == ["alpha"]
    assert listed["load_errors"][0]["file"].startswith("broken")

    index, folder = start(mcp, workflow_id="alpha")
    assert mcp.ok("next_activity", session_index=index, activity_id="one").meta["validation"]["status"] == "valid"
    _write_corpus(corpus, version="1.1.0", extra_var=True)
    reply = mcp.ok("get_workflow", session_index=index)
    assert any(
        "session started with v1.0.0 but current definition is v1.1.0" in w
        for w in reply.meta["validation"]["warnings"]
    )
    assert "alpha_level" not in session_json(folder)["variables"]
    mcp.ok("start_session", planning_folder=str(folder))
    state = session_json(folder)
    assert state["workflowVersion"] == "1.1.0" and state["variables"]["alpha_level"] == 2
    assert mcp.ok("get_workflow_status", session_index=index).meta["validation"]["status"] == "valid"


# ---------------------------------------------------------------------------------------------- CLI


@pytest.mark.parametrize(
    ("args", "env", "needle"),
    [
        (
            ["--transport", "http", "--host", "0.0.0.0", "--port", "0"],
            {"WORKFLOW_WORKSPACE": "/tmp"},
            "set WORKFLOW_SERVER_TOKEN",
        ),
        (["--transport", "smoke"], {"WORKFLOW_WORKSPACE": "/tmp"}, "invalid choice"),
        (["--repo", "not a repo"], {}, "--repo"),
    ],
)
def test_cli_config_errors_exit_2(args: list[str], env: dict[str, str], needle: str, tmp_path: Path) -> None:
    full_env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PYTHONPATH": str(REPO / "src"), **env}
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "mcp", *args],
        env=full_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert needle in done.stderr and done.stdout == ""
