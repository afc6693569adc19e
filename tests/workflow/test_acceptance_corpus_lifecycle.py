"""Acceptance scenarios 18–21 and 24 on the real corpus, over stdio: transient promotion, occupied
folders, child completion, the seal and ``working_directory`` starts.

Support (the clocked server, session helpers) lives in ``test_acceptance_corpus.py``. The projects root of
scenario 24 (``$T/p``) is the server's ``$INSTALL/projects``, one of the roots it searches for projects.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from .test_acceptance_corpus import (
    INDEX,
    SKIP_NO_CORPUS,
    ClockedServer,
    at_activity,
    clocked_server,
    session_json,
    start,
)

pytestmark = SKIP_NO_CORPUS


@pytest.fixture(scope="module")
def acc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClockedServer]:
    yield from clocked_server(tmp_path_factory, "acc-lifecycle")


def _transients(acc: ClockedServer) -> set[Path]:
    return set(acc.tmp_dir.glob("workflow-server-transient-*"))


def _types(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def _promote(acc: ClockedServer, slug: str) -> tuple[str, str, Path, Path]:
    """A transient meta session promoted by ``dispatch_child``: (meta index, child index, folder, tmp folder)."""
    before = _transients(acc)
    meta = acc.ok("start_session", user_request="fix login").parsed
    (tmp,) = _transients(acc) - before
    child = acc.ok(
        "dispatch_child",
        session_index=meta["session_index"],
        workflow_id="work-package",
        planning_slug=slug,
        repo="acme/widgets",
    )
    return meta["session_index"], child.parsed["session_index"], acc.planning / slug, tmp


# ---------------------------------------------------------------------------------------------- 18–20


def test_s18_promotion(acc: ClockedServer) -> None:
    before = _transients(acc)
    meta = acc.ok("start_session", user_request="fix login").parsed
    assert meta["repo_unbound"] is True and "planning_folder_path" not in meta
    (tmp,) = _transients(acc) - before
    meta_index = meta["session_index"]

    child = acc.ok(
        "dispatch_child",
        session_index=meta_index,
        workflow_id="work-package",
        planning_slug="acc-18",
        repo="acme/widgets",
    ).parsed
    folder = acc.planning / "acc-18"
    assert INDEX.match(child["session_index"]) and child["session_index"] != meta_index
    assert child["workflow"]["initialActivity"] == "start-work-package"
    assert child["planning_folder_path"] == str(folder)
    top = session_json(folder)
    assert top["workflowId"] == "meta" and top["sessionIndex"] == meta_index and top["repo"] == "acme/widgets"
    assert top["triggeredWorkflows"][0]["state"]["variables"]["user_request"] == "fix login"
    assert acc.ok("get_workflow_status", session_index=meta_index).parsed["status"] == "active"
    assert not tmp.exists()

    second = acc.ok("dispatch_child", session_index=meta_index, workflow_id="work-package").parsed
    slots = session_json(folder)["triggeredWorkflows"]
    assert [slot["sessionIndex"] for slot in slots] == [child["session_index"], second["session_index"]]


def test_s19_folder_occupied(acc: ClockedServer) -> None:
    _, occupied = start(acc, "acc-19")
    before = _transients(acc)
    meta_index = acc.ok("start_session", user_request="another").parsed["session_index"]
    (tmp,) = _transients(acc) - before
    files = [folder / name for folder in (occupied, tmp) for name in ("session.json", ".session-token")]
    snapshot = {path: path.read_bytes() for path in files}
    text = acc.err("dispatch_child", session_index=meta_index, workflow_id="work-package", planning_slug="acc-19")
    assert "FOLDER_OCCUPIED" in text
    assert {path: path.read_bytes() for path in files} == snapshot
    assert acc.ok("get_workflow_status", session_index=meta_index).parsed["status"] == "active"


def test_s20_child_completion(acc: ClockedServer) -> None:
    meta_index, child_index, folder, _ = _promote(acc, "acc-20")
    acc.ok("next_activity", session_index=child_index, activity_id="start-work-package")
    done = acc.ok("next_activity", session_index=child_index, activity_id="complete")
    assert done.parsed["activity_id"] == "complete"
    top = session_json(folder)
    entry = top["triggeredWorkflows"][0]
    assert entry["state"]["status"] == "completed"
    assert _types(entry["state"]["history"], "workflow_completed")
    assert entry["status"] == "completed" and entry["completedAt"]
    returned = _types(top["history"], "workflow_returned")
    assert [e["data"]["sessionIndex"] for e in returned] == [child_index]
    assert acc.ok("get_workflow_status", session_index=child_index).parsed["status"] == "completed"
    identity = acc.ok("inspect_session", session_index=child_index, view="identity").parsed
    assert identity["status"] == "completed"
    children = acc.ok("get_workflow_status", session_index=meta_index).parsed["children"]
    assert [(c["session_index"], c["status"]) for c in children] == [(child_index, "completed")]


# ---------------------------------------------------------------------------------------------- 21


def test_s21_seal(acc: ClockedServer) -> None:
    index, folder = at_activity(acc, "acc-21")
    path = folder / "session.json"
    original = path.read_bytes()
    edited = original.replace(b'"needs_comprehension": true', b'"needs_comprehension": false', 1)
    assert edited != original
    path.write_bytes(edited)
    calls: dict[str, dict[str, Any]] = {
        "get_workflow": {},
        "next_activity": {"activity_id": "design-philosophy"},
        "get_activity": {"context_tokens": 200000},
        "get_technique": {"step_id": "detect-review-mode"},
        "get_resource": {"resource_id": "review-mode"},
        "yield_checkpoint": {"checkpoint_id": "review-mode-detection"},
        "present_checkpoint": {},
        "respond_checkpoint": {"option_id": "new-implementation"},
        "resume_checkpoint": {},
        "get_workflow_status": {},
        "inspect_session": {},
        "record_usage": {"activity": "start-work-package", "usage": {"total_tokens": 1}, "basis": "delta"},
        "get_trace": {},
        "dispatch_child": {"workflow_id": "work-package"},
    }
    for tool, args in calls.items():
        assert "SEAL_MISMATCH" in acc.err(tool, session_index=index, **args), tool
    assert "SEAL_MISMATCH" in acc.err("start_session", workflow_id="work-package", planning_folder=str(folder))
    assert path.read_bytes() == edited

    path.write_bytes(original)
    assert acc.ok("get_workflow_status", session_index=index).parsed["current_activity"] == "start-work-package"
    assert acc.ok("start_session", planning_folder=str(folder)).parsed["session_index"] == index


# ---------------------------------------------------------------------------------------------- 24


def _checkout(path: Path, origin: str) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "remote", "add", "origin", origin], check=True)
    return path


def _tree(root: Path) -> list[Path]:
    return sorted(root.rglob("*")) if root.exists() else []


def test_s24_working_directory(acc: ClockedServer) -> None:
    projects = acc.root / "install" / "projects"  # $T/p
    checkout = _checkout(projects / "widgets", "git@github.com:acme/widgets.git")
    root = checkout / ".engineering" / "artifacts" / "planning"
    today = datetime.fromtimestamp(datetime.now(UTC).timestamp() + acc.offset, UTC).strftime("%Y-%m-%d")

    reply = acc.ok(
        "start_session", workflow_id="work-package", working_directory=str(checkout), user_request="add export"
    )
    body = reply.parsed
    expected = root / f"{today}-work-package"
    assert body["planning_folder_path"] == str(expected) and body["execution_path"] == "agent"
    bag = session_json(expected)["variables"]
    assert bag["target_repo"] == "acme/widgets" and bag["host_repo_path"] == str(checkout)
    assert bag["component_path"] == "." and bag["is_monorepo"] is False
    assert bag["planning_folder_path"] == str(expected)

    again = acc.ok("start_session", workflow_id="work-package", working_directory=str(checkout)).parsed
    assert again["planning_folder_path"] == str(root / f"{today}-work-package-2")
    assert "REPO_MISMATCH" in acc.err(
        "start_session", workflow_id="work-package", working_directory=str(checkout), repo="other/thing"
    )
    assert "PLANNING_FOLDER_OUTSIDE_ROOT" in acc.err(
        "start_session",
        workflow_id="work-package",
        working_directory=str(checkout),
        planning_folder=str(acc.root / "x" / "y"),
    )

    files_before = _tree(root)
    ambiguous = acc.ok("start_session", working_directory=str(checkout), user_request="use prism or codebase-wiki")
    assert "session_index" not in ambiguous.parsed
    assert ambiguous.parsed["decision"]["kind"] == "workflow_ambiguous"
    assert _tree(root) == files_before and not (acc.root / "x").exists()
