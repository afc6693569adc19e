"""Acceptance scenarios 1–12 of the workflow server on the real public corpus, over stdio.

The server is the real ``orchestrator mcp`` subprocess behind the official client (``conftest.McpProcess``),
single-root: ``WORKFLOW_WORKSPACE=$T/ws``, ``WORKFLOW_DIR=<corpus>``, its own key dir, floor 3 s. Waits
(scenarios 7, 9, 10) never sleep: ``ClockedServer`` points the server's clock-offset hook
(``WORKFLOW_SERVER_CLOCK_OFFSET_FILE``: wall time + the seconds in that file, re-read on every reading) at a
file of its own, and ``advance(seconds)`` moves that server's time forward.

This module also holds the support shared by ``test_acceptance_corpus_delivery.py`` (scenarios 13–17,
22, 23) and ``test_acceptance_corpus_lifecycle.py`` (18–21, 24). Each module runs one server; every
scenario opens its own session(s) in it, so one failing scenario does not cascade into the next.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client.stdio import StdioServerParameters
from tests.helpers import PUBLIC_CORPUS, needs_public_corpus

from .conftest import SEPARATOR, McpProcess, Reply

CORPUS = PUBLIC_CORPUS
SKIP_NO_CORPUS = needs_public_corpus
pytestmark = SKIP_NO_CORPUS

INDEX = re.compile(r"^[A-Z2-7]{6}$")
HASH16 = re.compile(r"^[0-9a-f]{16}$")
FLOOR_SECONDS = "3"

# ---------------------------------------------------------------------------------------------- support


class ClockedServer(McpProcess):
    """``McpProcess`` on the corpus whose server clock the test can move forward (see the module docstring)."""

    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        super().__init__(
            root, workflow_dir=CORPUS, env={"MIN_CHECKPOINT_RESPONSE_SECONDS": FLOOR_SECONDS, **(env or {})}
        )
        self.offset_file = root / "clock-offset"
        self.offset_file.write_text("0")
        server_env = dict(self.params.env or {})
        server_env["WORKFLOW_SERVER_CLOCK_OFFSET_FILE"] = str(self.offset_file)
        self.params = StdioServerParameters(
            command=self.params.command, args=list(self.params.args), env=server_env, cwd=self.params.cwd
        )

    @property
    def offset(self) -> float:
        return float(self.offset_file.read_text())

    def advance(self, seconds: float) -> None:
        """Move the server clock ``seconds`` forward (read by the server on every clock call; replaced atomically)."""
        staged = self.offset_file.with_suffix(".next")
        staged.write_text(repr(self.offset + seconds))
        staged.replace(self.offset_file)


def clocked_server(
    factory: pytest.TempPathFactory, name: str, env: dict[str, str] | None = None
) -> Iterator[ClockedServer]:
    """Body of each module's server fixture: start, yield, always stop."""
    server = ClockedServer(factory.mktemp(name), env).start()
    try:
        yield server
    finally:
        server.stop()


def session_json(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "session.json").read_text())


def history(folder: Path, kind: str | None = None) -> list[dict[str, Any]]:
    events = session_json(folder)["history"]
    return [e for e in events if kind is None or e["type"] == kind]


def warnings(reply: Reply) -> list[str]:
    return list(reply.meta["validation"]["warnings"])


def start(acc: McpProcess, slug: str, workflow_id: str = "work-package", **extra: Any) -> tuple[str, Path]:
    """A durable session at ``R/<slug>``: (index, folder)."""
    folder = acc.planning / slug
    reply = acc.ok("start_session", workflow_id=workflow_id, planning_folder=str(folder), **extra)
    return reply.parsed["session_index"], folder


def at_activity(
    acc: McpProcess, slug: str, activity_id: str = "start-work-package", workflow_id: str = "work-package", **extra: Any
) -> tuple[str, Path]:
    """A durable session moved to ``activity_id``."""
    index, folder = start(acc, slug, workflow_id, **extra)
    acc.ok("next_activity", session_index=index, activity_id=activity_id)
    return index, folder


def floor_answered(acc: ClockedServer, slug: str) -> tuple[str, Path]:
    """Scenario 7's walk without its assertions: review-mode-detection refused too fast, then answered."""
    index, folder = at_activity(acc, slug)
    acc.ok("yield_checkpoint", session_index=index, checkpoint_id="review-mode-detection")
    acc.err("respond_checkpoint", session_index=index, option_id="new-implementation")
    acc.advance(4)
    acc.ok("respond_checkpoint", session_index=index, option_id="new-implementation")
    return index, folder


@pytest.fixture(scope="module")
def acc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClockedServer]:
    yield from clocked_server(tmp_path_factory, "acc-session")


# ---------------------------------------------------------------------------------------------- 1–4


def test_s01_cold(acc: ClockedServer) -> None:
    text = acc.ok("discover").text
    assert "server: workflow-server" in text.splitlines() and "# Bootstrap Protocol" in text
    listed = acc.ok("list_workflows").parsed
    assert isinstance(listed, list), listed
    ids = [w["id"] for w in listed]
    assert len(ids) == 16 and len(set(ids)) == 16 and "meta" not in ids
    (work_package,) = [w for w in listed if w["id"] == "work-package"]
    assert work_package["version"] == "3.44.0" and "review" in work_package["tags"]
    assert acc.ok("health_check").parsed["workflows_available"] == 16
    assert acc.call("get_workflow").is_error


def test_s02_fresh_and_resume(acc: ClockedServer) -> None:
    folder = acc.planning / "acc-2"
    reply = acc.ok("start_session", workflow_id="work-package", planning_folder=str(folder))
    index = reply.parsed["session_index"]
    assert INDEX.match(index) and reply.parsed["planning_slug"] == "acc-2"
    state = session_json(folder)
    assert state["workflowVersion"] == "3.44.0"
    bag = state["variables"]
    assert bag["review_mode_ambiguous"] is False and bag["needs_comprehension"] is True
    assert bag["component_path"] == "."
    assert [e["type"] for e in state["history"]] == ["workflow_started", "variables_seeded"]

    again = acc.ok("start_session", workflow_id="remediate-vuln", planning_folder=str(folder)).parsed
    assert again["session_index"] == index and again["workflow"]["id"] == "work-package"


def test_s03_get_workflow(acc: ClockedServer) -> None:
    index, _ = start(acc, "acc-3")
    reply = acc.ok("get_workflow", session_index=index)
    assert reply.text.count(SEPARATOR) == 1
    _, summary = reply.parsed
    assert summary["initialActivity"] == "start-work-package"
    assert [a["artifactPrefix"] for a in summary["activities"]] == [f"{n:02d}" for n in range(1, 16)]
    assert summary["rules"][0] == "Ask, don't assume - Clarify requirements before acting"
    assert "safety-floor-never-simplified" not in reply.text
    (first,) = [a for a in summary["activities"] if a["id"] == "start-work-package"]
    assert first["exits"] == [{"to": "design-philosophy", "isDefault": True}]


def test_s04_first_move(acc: ClockedServer) -> None:
    index, _ = start(acc, "acc-4")
    assert "No current activity" in acc.err("get_activity", session_index=index, context_tokens=200000)
    wrong_first = acc.ok("next_activity", session_index=index, activity_id="design-philosophy")
    assert any("First activity must be 'start-work-package'" in w for w in warnings(wrong_first))
    moved = acc.ok("next_activity", session_index=index, activity_id="start-work-package")
    assert moved.parsed["name"] == "Start Work Package" and moved.meta.get("trace_token")
    # the acceptance text says `valid`; the seeds validate later moves against the current activity's transitions, and
    # design-philosophy only exits to codebase-comprehension, so this move warns exactly that (see report).
    assert [w for w in warnings(moved) if "not a direct transition" not in w and "No step_manifest" not in w] == []
    assert acc.call("get_activity", session_index=index).is_error  # context_tokens is required

    # the `valid` reading holds for a first move to initialActivity
    clean_index, _ = start(acc, "acc-4b")
    clean = acc.ok("next_activity", session_index=clean_index, activity_id="start-work-package")
    assert clean.meta["validation"] == {"status": "valid", "warnings": []}
    assert clean.parsed["name"] == "Start Work Package" and clean.meta.get("trace_token")


# ---------------------------------------------------------------------------------------------- 5


def test_s05_worker_load(acc: ClockedServer) -> None:
    index, folder = at_activity(acc, "acc-5")
    reply = acc.ok("get_activity", session_index=index, context_tokens=200000, agent_id="w1")
    ops, body = reply.text.split(SEPARATOR, 1)
    meta = reply.meta
    assert meta["artifact_prefix"] == "01" and re.search(r"^artifact_prefix: '?01'?$", body, re.M)
    assert set(meta["enforcement_notes"]) == {"actions", "auto_advance"} and "\nenforcement_notes:\n" in body
    assert meta["activity_rules"]
    assert "detect-review-mode" in meta["bundled_steps"]
    assert "▼ STEP detect-review-mode · technique review-mode-detection" in ops
    assert meta["dispatch"] == "fresh" and meta["batch"]["activities"] == 1
    dispatched = history(folder, "activity_dispatched")
    assert [(e["data"]["agentId"], e["data"]["dispatch"]) for e in dispatched] == [("w1", "fresh")]
    assert dispatched[0]["data"]["chars"] > 0
    assert history(folder, "technique_bundled")

    again = acc.ok("get_activity", session_index=index, context_tokens=200000, agent_id="w1")
    assert again.meta["dispatch"] == "resume"
    bundle, _ = again.parsed
    assert "bundle_note" in bundle
    techniques = bundle["techniques"]
    assert techniques and all(set(entry) == {"delivery", "content_hash"} for entry in techniques.values()), techniques

    small = acc.ok("get_activity", session_index=index, context_tokens=1, agent_id="w1")
    small_ops, _ = small.parsed
    assert "step_techniques" not in small_ops and "bundled_steps" not in small.meta


# ---------------------------------------------------------------------------------------------- 6–8


def test_s06_lock(acc: ClockedServer) -> None:
    index, _ = at_activity(acc, "acc-6")
    assert (
        acc.ok("yield_checkpoint", session_index=index, checkpoint_id="review-mode-detection").parsed["status"]
        == "yielded"
    )
    refused = {
        "get_workflow": {},
        "next_activity": {"activity_id": "design-philosophy"},
        "get_activity": {"context_tokens": 200000},
        "get_technique": {"step_id": "detect-review-mode"},
        "get_resource": {"resource_id": "review-mode"},
        "get_trace": {},
    }
    for tool, args in refused.items():
        assert "Active checkpoint" in acc.err(tool, session_index=index, **args), tool
    assert "already active" in acc.err("yield_checkpoint", session_index=index, checkpoint_id="review-mode-detection")
    assert acc.ok("get_workflow_status", session_index=index).parsed["status"] == "blocked"
    acc.ok("inspect_session", session_index=index)
    presented = acc.ok("present_checkpoint", session_index=index).parsed
    assert [o["id"] for o in presented["options"]] == ["confirm-review", "new-implementation"]


def test_s07_floor(acc: ClockedServer) -> None:
    index, folder = at_activity(acc, "acc-7")
    acc.ok("yield_checkpoint", session_index=index, checkpoint_id="review-mode-detection")
    assert "too fast" in acc.err("respond_checkpoint", session_index=index, option_id="new-implementation")
    acc.advance(4)
    answered = acc.ok("respond_checkpoint", session_index=index, option_id="new-implementation").parsed
    assert answered["effect"]["setVariable"] == {"is_review_mode": False, "review_mode_ambiguous": False}
    assert len(history(folder, "variable_set")) == 2
    assert list(session_json(folder)["checkpointResponses"]) == ["start-work-package-review-mode-detection"]
    assert acc.ok("resume_checkpoint", session_index=index).parsed["status"] == "resumed"


def test_s08_replay(acc: ClockedServer) -> None:
    index, folder = floor_answered(acc, "acc-8")
    replay = acc.ok("yield_checkpoint", session_index=index, checkpoint_id="review-mode-detection").parsed
    assert replay["status"] == "replayed" and replay["resolved_option"] == "new-implementation"
    assert replay["effect"]["setVariable"] == {"is_review_mode": False, "review_mode_ambiguous": False}
    assert "activeCheckpoint" not in session_json(folder)
    assert [e["data"]["optionId"] for e in history(folder, "checkpoint_replayed")] == ["new-implementation"]


# ---------------------------------------------------------------------------------------------- 9–12


def test_s09_answer_modes(acc: ClockedServer) -> None:
    index, folder = at_activity(acc, "acc-9")
    acc.ok("yield_checkpoint", session_index=index, checkpoint_id="issue-verification")
    acc.advance(4)
    assert "Valid options: [provide-existing, create-issue, skip-issue]" in acc.err(
        "respond_checkpoint", session_index=index, option_id="bogus"
    )
    assert "Exactly one" in acc.err(
        "respond_checkpoint", session_index=index, option_id="skip-issue", auto_advance=True
    )
    assert "missing defaultOption" in acc.err("respond_checkpoint", session_index=index, auto_advance=True)
    dismissed = acc.ok("respond_checkpoint", session_index=index, condition_not_met=True).parsed
    assert dismissed["dismissed"] is True
    assert (
        session_json(folder)["checkpointResponses"]["start-work-package-issue-verification"]["optionId"]
        == "__condition_not_met__"
    )


def test_s10_timer(acc: ClockedServer) -> None:
    index, folder = at_activity(acc, "acc-10")
    acc.ok("yield_checkpoint", session_index=index, checkpoint_id="github-issue-missing")
    acc.advance(5)
    assert "timer not elapsed" in acc.err("respond_checkpoint", session_index=index, auto_advance=True)
    acc.advance(26)
    answered = acc.ok("respond_checkpoint", session_index=index, auto_advance=True).parsed
    assert answered["resolved_option"] == "create"
    assert session_json(folder)["variables"]["needs_github_issue_creation"] is True


def test_s11_undismissable(acc: ClockedServer) -> None:
    index = acc.ok("start_session", workflow_id="meta", user_request="acceptance 11").parsed["session_index"]
    acc.ok("next_activity", session_index=index, activity_id="end-workflow")
    acc.ok("yield_checkpoint", session_index=index, checkpoint_id="completion-confirmed")
    acc.advance(4)
    assert "no condition" in acc.err("respond_checkpoint", session_index=index, condition_not_met=True)
    answered = acc.ok("respond_checkpoint", session_index=index, option_id="return").parsed
    assert answered["effect"]["transitionTo"] == "dispatch-client-workflow"
    assert acc.ok("get_workflow_status", session_index=index).parsed["current_activity"] == "end-workflow"


def test_s12_ad_hoc(acc: ClockedServer) -> None:
    index, folder = at_activity(acc, "acc-12")
    bag_before = session_json(folder)["variables"]
    options = [{"id": "narrow", "label": "Narrow it"}, {"id": "keep", "label": "Keep it"}]
    yielded = acc.ok(
        "yield_checkpoint",
        session_index=index,
        checkpoint_id="scope-question",
        message="Narrow the scope?",
        options=options,
    ).parsed
    assert yielded["status"] == "yielded"
    assert acc.ok("present_checkpoint", session_index=index).parsed["declared"] is False
    acc.advance(4)
    acc.ok("respond_checkpoint", session_index=index, option_id="narrow")
    assert session_json(folder)["variables"] == bag_before
    assert "by id alone" in acc.err(
        "yield_checkpoint", session_index=index, checkpoint_id="pr-check", message="Use the PR?"
    )
    assert "Checkpoint not found" in acc.err(
        "yield_checkpoint", session_index=index, checkpoint_id="made-up", message="Anything?"
    )
