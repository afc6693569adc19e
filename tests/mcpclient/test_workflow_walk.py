"""The two faces meet: a Guild role walks a workflow through ``orchestrator mcp``'s tools, scripted on the sim.

The workflow server is the real ``python -m orchestrator mcp`` subprocess, configured as a stdio entry
of the deployment's ``mcpServers``; the role starts a session, enters the first activity, reads it and
moves on to the next one. The session index the server will mint is derived beforehand from the same key
(``root_index``), so the static script can name it. Run on the project's ``workflows/`` and on the real
corpus in ``../shared/corpus/workflows`` when it is present.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.engine.harness import call, finish, of_type, run_task, turn
from tests.helpers import PUBLIC_CORPUS, REPO
from tests.mcpclient.support import mcp_settings

from orchestrator.workflow.corpus import load_corpus
from orchestrator.workflow.session.keys import load_or_create_key, root_index

CORPUS = PUBLIC_CORPUS
CASES = [(REPO / "workflows", "bug-fix")]
if (CORPUS / "work-package").is_dir():
    CASES.append((CORPUS, "work-package"))


def _workflow_server(root: Path, workflow_dir: Path) -> dict[str, Any]:
    workspace = root / "ws"
    workspace.mkdir(parents=True)
    return {
        "command": sys.executable,
        "args": ["-m", "orchestrator", "mcp", "--workflow-dir", str(workflow_dir), "--workspace", str(workspace)],
        "env": {
            "PYTHONPATH": str(REPO / "src"),
            "HOME": str(root / "home"),
            "WORKFLOW_SERVER_KEY_DIR": str(root / "keys"),
            "WORKFLOW_SERVER_INSTALL_DIR": str(root / "install"),
            "MIN_CHECKPOINT_RESPONSE_SECONDS": "0",
        },
    }


@pytest.mark.parametrize(("workflow_dir", "workflow_id"), CASES, ids=[f"{d.parent.name}/{w}" for d, w in CASES])
async def test_a_role_walks_a_workflow_through_the_workflow_server(
    tmp_path: Path, sim_for, workflow_dir: Path, workflow_id: str
) -> None:
    workflow = load_corpus(workflow_dir).workflows[workflow_id]
    first = workflow.get_activity(workflow.initial_activity or workflow.activities[0].id)
    assert first is not None and first.transitions
    second = workflow.get_activity(first.transitions[0].to)
    assert second is not None
    server = _workflow_server(tmp_path / "wf", workflow_dir)
    folder = tmp_path / "wf" / "ws" / ".engineering" / "artifacts" / "planning" / "walk-1"
    index = root_index(load_or_create_key(tmp_path / "wf" / "keys"), folder)
    manifest = [{"step_id": flat.step.id, "output": "done"} for flat in first.flattened_steps()]
    script = {
        "contextWindow": 1_000_000,
        "turns": [
            turn(
                "lead",
                call("wf__start_session", workflow_id=workflow_id, planning_folder=str(folder), user_request="walk it"),
            ),
            turn("lead", call("wf__next_activity", session_index=index, activity_id=first.id), last=index),
            turn("lead", call("wf__get_activity", session_index=index, context_tokens=32768), last=first.name),
            turn(
                "lead",
                call(
                    "wf__next_activity",
                    session_index=index,
                    activity_id=second.id,
                    returning_activity_id=first.id,
                    step_manifest=manifest,
                ),
                last=first.id,
            ),
            turn("lead", finish(f"walked {workflow_id} to {second.id}"), last=second.name),
        ],
    }
    async with sim_for(script) as sim:
        settings = mcp_settings(
            tmp_path,
            sim.base_url,
            {"lead": ["finish", "mcp:wf/start_session", "mcp:wf/next_activity", "mcp:wf/get_activity"]},
            {"wf": server},
            max_chars=200_000,
            context_window=1_000_000,
        )
        outcome, events = await run_task(settings, tmp_path / "project")
        requests = await sim.responses_requests()
    assert outcome.card.status == "success", outcome.card
    results = of_type(events, "tool_result")
    assert [r["tool"] for r in results] == [
        "wf__start_session",
        "wf__next_activity",
        "wf__get_activity",
        "wf__next_activity",
        "finish",
    ]
    assert all(r["result"]["kind"] == "success" for r in results), results
    assert first.id in results[2]["result"]["data"]["text"]
    assert [t["name"] for t in requests[0]["body"]["tools"]] == [
        "finish",
        "wf__start_session",
        "wf__next_activity",
        "wf__get_activity",
    ]
    state = json.loads((folder / "session.json").read_text())
    assert state["currentActivity"] == second.id
    entered = [e for e in state["history"] if e["type"] == "activity_entered"]
    assert len(entered) == 2
