"""``session/migrate.py``: legacy ``workflow-state.json`` folders (old-format data written here) become sealed
sessions; the pure conversion and the folder I/O. The MCP-level walk is in ``test_mcp_spec_shapes.py``."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from orchestrator.workflow.errors import SessionStoreError
from orchestrator.workflow.serverconfig import load_workflow_settings
from orchestrator.workflow.session import SessionStore, load_or_create_key, planning_root
from orchestrator.workflow.session.migrate import legacy_session, legacy_token_payload, migrate_folder

NOW = 1_800_000_000.0


def token(payload: object) -> str:
    body = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")
    return f"{body}.{'0f' * 32}"


def envelope(state: object, **top: object) -> bytes:
    return json.dumps({"state": state, **top}).encode()


def test_token_payload_is_read_without_its_signature() -> None:
    assert legacy_token_payload(token({"wf": "bug-fix", "act": "fix"})) == {"wf": "bug-fix", "act": "fix"}
    for bad in ("no-dot", "!!!.sig", token([1, 2]), ""):
        assert legacy_token_payload(bad) == {}


def test_envelope_fields_win_and_token_fills_gaps() -> None:
    state = legacy_session(
        envelope(
            {
                "workflowId": "bug-fix",
                "workflowVersion": "1.2.3",
                "status": "completed",
                "completedActivities": ["a", 3, "b"],
                "skippedActivities": "x",
                "variables": {"k": [1]},
                "checkpointResponses": {
                    "a-c": {"optionId": "yes", "respondedAt": "2026-01-01T00:00:00.000Z"},
                    "b-c": "no",
                    "junk": None,
                },
            }
        ),
        token({"wf": "other", "v": "9.9.9", "aid": "lead", "act": "b"}),
        session_index="ABCDEF",
        folder="/p/f",
        now=NOW,
    )
    assert (state.workflow_id, state.workflow_version, state.status) == ("bug-fix", "1.2.3", "completed")
    assert (state.agent_id, state.current_activity) == ("lead", "b")  # from the token: the envelope lacks them
    assert state.completed_activities == ["a", "b"] and state.skipped_activities == []
    assert state.variables == {"k": [1]} and state.planning_folder_path == "/p/f" and state.seq == 0
    assert {k: v.option_id for k, v in state.checkpoint_responses.items()} == {"a-c": "yes", "b-c": "no"}
    assert state.history[0].type == "workflow_started" and state.history[0].data == {
        "migratedFrom": "workflow-state.json"
    }


def test_embedded_token_and_odd_values() -> None:
    state = legacy_session(
        envelope(
            {"status": "weird", "workflowVersion": "v2"},
            sessionToken=token({"wf": "meta"}),
            startedAt="2025-05-05T05:05:05.000Z",
        ),
        None,
        session_index="ABCDEF",
        folder="/f",
        now=NOW,
    )
    assert (state.workflow_id, state.workflow_version, state.status) == ("meta", "0.0.0", "running")
    assert state.started_at == "2025-05-05T05:05:05.000Z"


@pytest.mark.parametrize(
    ("data", "needle"),
    [(b"{oops", "not valid JSON"), (b"[1]", "not a JSON object"), (envelope({"variables": {}}), "names no workflow")],
)
def test_unusable_envelopes_name_the_file(data: bytes, needle: str) -> None:
    with pytest.raises(SessionStoreError) as caught:
        legacy_session(data, None, session_index="ABCDEF", folder="/f", now=NOW)
    assert caught.value.code == "MIGRATION_FAILED" and needle in caught.value.message
    assert "/f/workflow-state.json" in caught.value.message


def test_migrate_folder_writes_a_sealed_pair_and_keeps_the_old_files(tmp_path: Path) -> None:
    settings = load_workflow_settings(
        {
            "WORKFLOW_WORKSPACE": str(tmp_path),
            "WORKFLOW_SERVER_KEY_DIR": str(tmp_path / "k"),
            "TMPDIR": str(tmp_path / "t"),
        },
        {},
    )
    store = SessionStore(settings, load_or_create_key(settings.key_dir))
    folder = planning_root(settings) / "old"
    folder.mkdir(parents=True)
    (folder / "workflow-state.json").write_bytes(envelope({"workflowId": "bug-fix"}))
    (folder / ".session-token").write_text(token({"wf": "bug-fix"}))
    assert migrate_folder(store, folder, now=NOW) is True
    top = store.read(folder)  # verifies the new seal
    assert top.session_index == store.root_index(folder) and top.workflow_id == "bug-fix"
    assert sorted(os.listdir(folder)) == [
        ".session-token",
        ".session-token.legacy",
        ".session.lock",
        "session.json",
        "workflow-state.json.migrated",
    ]
    assert migrate_folder(store, folder, now=NOW) is False  # a session now: nothing to do
    assert migrate_folder(store, tmp_path / "nothing-here", now=NOW) is False
