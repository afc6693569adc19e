"""The delivery tools (get_activity / get_technique / get_resource) on the project's own ``workflows/``.

Two layers:

* over stdio (the real ``orchestrator mcp`` subprocess, one per module): the worker payload, eager
  bundling, provenance, resources, the reference-delivery ledger, borrowed activities, the batch bound and
  the checkpoint lock — checked on the responses and on the ``session.json`` they leave;
* in-process through ``WorkflowMCP.dispatch`` (the same validate → handler → trace pipeline) on a copy of
  ``workflows/`` edited to reach the cases our workflows do not contain: ``maxChars`` skip and opt-out, a
  broken resource link, an UNRESOLVED input, a workflow without workflow-level techniques.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import SEPARATOR, WORKFLOWS, InProcess, McpProcess, Reply

HEX16 = re.compile(r"^[0-9a-f]{16}$")

# ---------------------------------------------------------------------------------------------- helpers


def _file(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "session.json").read_text())


def _events(folder: Path, *kinds: str) -> list[dict[str, Any]]:
    return [event for event in _file(folder)["history"] if event["type"] in kinds]


def _start(server: Any, workflow_id: str, slug: str, **extra: Any) -> tuple[str, Path]:
    folder = server.planning / slug
    reply = server.ok("start_session", workflow_id=workflow_id, planning_folder=str(folder), **extra)
    return reply.parsed["session_index"], folder


def _at(server: Any, workflow_id: str, activity_id: str, slug: str, **extra: Any) -> tuple[str, Path]:
    index, folder = _start(server, workflow_id, slug, **extra)
    server.ok("get_workflow", session_index=index)
    server.ok("next_activity", session_index=index, activity_id=activity_id)
    return index, folder


def _halves(reply: Reply) -> tuple[dict[str, Any], dict[str, Any]]:
    assert reply.text.count(SEPARATOR) == 1
    head, body = reply.parsed
    return head, body


# ---------------------------------------------------------------------------------------------- get_activity


def test_get_activity_preconditions(mcp: McpProcess) -> None:
    index, _ = _start(mcp, "code-review", "pre")
    assert "No current activity" in mcp.err("get_activity", session_index=index, context_tokens=1000)
    mcp.ok("next_activity", session_index=index, activity_id="scope-review")
    assert "context_tokens" in mcp.err("get_activity", session_index=index)
    assert "context_tokens" in mcp.err("get_activity", session_index=index, context_tokens=0)
    assert "context_tokens" in mcp.err("get_activity", session_index=index, context_tokens="many")
    text = mcp.err("get_activity", session_index=index, context_tokens=1000, activity_id="assess")
    assert "current activity is 'scope-review'" in text
    mcp.ok("get_activity", session_index=index, context_tokens=1000, activity_id="scope-review")


def test_worker_load(mcp: McpProcess) -> None:
    index, folder = _at(mcp, "code-review", "scope-review", "load")
    reply = mcp.ok("get_activity", session_index=index, context_tokens=200_000, agent_id="w1")
    head, body = _halves(reply)
    meta = reply.meta

    assert reply.text.split(SEPARATOR)[1].startswith(f"session_index: {index}\nartifact_prefix: '01'\n")
    assert body["artifact_prefix"] == "01" == meta["artifact_prefix"]
    assert body["id"] == "scope-review" and body["steps"][0]["id"] == "collect-changes"
    assert list(body)[-2:] == ["artifacts", "batch"]
    assert "actions" in body["enforcement_notes"] and "auto_advance" not in body["enforcement_notes"]
    assert body["activity_rules"] == meta["activity_rules"]
    assert (
        "Do not edit the code under review. Findings describe changes; they do not make them." in meta["activity_rules"]
    )
    assert (
        "Quote file paths relative to the repository root, with line numbers where they exist."
        in meta["activity_rules"]
    )

    assert "workflow-engine::activity-worker" in head["techniques"]
    assert "review::cite-evidence" in head["techniques"]  # techniques.activity of code-review
    assert all(isinstance(pair, list) and len(pair) == 2 for pair in head["rules"])
    entry = head["step_techniques"]["collect-changes"]
    assert entry["marker"] == "▼ STEP collect-changes · technique review::scope-change"
    assert entry["id"] == "review::scope-change" and entry["provenance_note"]
    sources = {item["id"]: item["source"] for item in entry["inputs"]}
    assert sources["change_ref"].startswith("step binding: workflow variable 'pr_reference'")
    assert {o["id"]: o.get("destination") for o in entry["outputs"]}["file_list"] == "changed_files"
    assert "▶ step" in head["step_techniques_note"]
    assert "review-checklist" in head["resource_refs"] and head["resources_note"]
    assert meta["bundled_steps"] == ["collect-changes"] and meta["resource_refs"] == head["resource_refs"]
    assert meta["dispatch"] == "fresh"
    assert meta["batch"] == body["batch"]
    assert body["batch"]["activities"] == 1 and body["batch"]["bounded"] is True
    assert body["batch"]["delivered_chars"] == len(reply.text)

    dispatched = _events(folder, "activity_dispatched")
    assert [e["data"] for e in dispatched] == [{"agentId": "w1", "dispatch": "fresh", "chars": len(reply.text)}]
    bundled = _events(folder, "technique_bundled")
    assert bundled[0]["data"]["stepId"] == "collect-changes"
    assert bundled[0]["data"]["techniqueId"] == "review::scope-change"
    assert bundled[0]["data"]["agentId"] == "w1" and bundled[0]["data"]["delivery"] == "full"
    assert [e["data"] for e in _events(folder, "step_started")] == [{"stepId": "collect-changes", "agentId": "w1"}]

    again = mcp.ok("get_activity", session_index=index, context_tokens=200_000, agent_id="w1")
    head2, body2 = _halves(again)
    assert again.meta["dispatch"] == "resume"
    assert head2["bundle_note"]
    assert all(
        value["delivery"] == "unchanged" and HEX16.match(value["content_hash"])
        for value in head2["techniques"].values()
    )
    assert head2["rules"]["delivery"] == "unchanged" and body2["activity_rules"]["delivery"] == "unchanged"
    assert "inputs" in head2["step_techniques"]["collect-changes"]  # fresh mode: step techniques stay full
    assert len(again.text) < len(reply.text)
    assert len(_events(folder, "step_started")) == 1  # once per step and scope in a visit
    assert body2["batch"]["activities"] == 1

    full = mcp.ok("get_activity", session_index=index, context_tokens=200_000, agent_id="w1", bundle="full")
    head3, _ = _halves(full)
    assert head3["bundle_mode"] == "full" and "capability" in head3["techniques"]["workflow-engine::activity-worker"]

    small = mcp.ok("get_activity", session_index=index, context_tokens=1, agent_id="w-small")
    head4, _ = _halves(small)
    assert "step_techniques" not in head4 and "bundled_steps" not in small.meta
    assert "capability" in head4["techniques"]["workflow-engine::activity-worker"]  # a new scope gets content
    redelivered = _events(folder, "activity_redelivered")
    assert [e["data"]["priorAgentId"] for e in redelivered] == ["w1"]


def test_loop_gates_and_lazy_counts(mcp: McpProcess) -> None:
    index, _ = _at(mcp, "code-review", "read-changes", "loops")
    reply = mcp.ok("get_activity", session_index=index, context_tokens=200_000, agent_id="w")
    head, _ = _halves(reply)
    assert list(head["step_techniques"]) == ["read-file-diff", "check-test-coverage"]
    assert "lazy_gates" not in reply.meta

    index, _ = _at(mcp, "bug-fix", "verify", "pending")
    reply = mcp.ok("get_activity", session_index=index, context_tokens=200_000, agent_id="w")
    head, body = _halves(reply)
    assert reply.meta["bundled_steps"] == ["run-checks"]  # read-fix-diff waits on tests_passing
    assert reply.meta["lazy_gates"] == {"pending": 1, "unbound": 0, "unparsed": 0}
    assert body["artifact_prefix"] == "04"


# ---------------------------------------------------------------------------------------------- get_technique


def test_get_technique_cases(mcp: McpProcess) -> None:
    meta_start = mcp.ok("start_session", user_request="hello")
    meta_index = meta_start.parsed["session_index"]
    fetched = mcp.ok("get_technique", session_index=meta_index)
    assert fetched.text.startswith(f"session_index: {meta_index}\n\n")
    assert fetched.parsed["id"] == "start-session" and fetched.meta["technique_id"] == "start-session"

    index, folder = _start(mcp, "code-review", "tech")
    assert mcp.ok("get_technique", session_index=index).parsed["id"] == "review-plan"
    assert "No current activity" in mcp.err("get_technique", session_index=index, step_id="collect-changes")
    mcp.ok("next_activity", session_index=index, activity_id="scope-review")

    step = mcp.ok("get_technique", session_index=index, step_id="collect-changes", agent_id="w1")
    body = step.parsed
    assert list(body)[:5] == ["session_index", "id", "version", "capability", "provenance_note"]
    assert body["id"] == "review::scope-change"
    assert all(item["source"] for item in body["inputs"])
    assert "source: 'step binding: workflow variable ''pr_reference''" in step.text
    assert step.meta["delivery"] == "full" and HEX16.match(step.meta["content_hash"])
    assert body["inherits"] == ["code-review", "code-review::review"]
    assert set(body["contracts"]) == {"code-review", "code-review::review"}
    mcp.ok("get_technique", session_index=index, step_id="collect-changes", agent_id="w1")

    assert "has no associated technique" in mcp.err("get_technique", session_index=index, step_id="note-scope")
    missing = mcp.err("get_technique", session_index=index, step_id="zzz")
    assert "Step 'zzz' not found" in missing
    assert "Available steps: [collect-changes, confirm-scope, note-scope]" in missing
    assert "current activity is 'scope-review'" in mcp.err("get_technique", session_index=index, activity_id="assess")
    assert "does not declare any techniques" in mcp.err("get_technique", session_index=index)

    state = _file(folder)
    assert state["currentTechnique"] == "review::scope-change"
    fetches = [e["data"] for e in state["history"] if e["type"] == "technique_fetched"]
    assert fetches[-1] == {
        "techniqueId": "review::scope-change",
        "stepId": "collect-changes",
        "agentId": "w1",
        "chars": len(step.text),
        "delivery": "full",
    }
    assert [e["data"] for e in state["history"] if e["type"] == "step_started"] == [
        {"stepId": "collect-changes", "agentId": "w1"}
    ]
    announced = [e for e in state["history"] if e["type"] == "activity_dispatched"]
    assert [(e["activity"], e["data"]) for e in announced] == [("scope-review", {"agentId": "w1", "dispatch": "fresh"})]

    mcp.ok("next_activity", session_index=index, activity_id="read-changes")
    mcp.ok("next_activity", session_index=index, activity_id="assess")
    group = mcp.ok("get_technique", session_index=index)
    assert group.parsed["id"] == "review"  # the activity's first technique


# ---------------------------------------------------------------------------------------------- get_resource


def test_get_resource(mcp: McpProcess) -> None:
    index, folder = _at(mcp, "code-review", "scope-review", "res")
    reply = mcp.ok("get_resource", session_index=index, resource_id="review-checklist#depth-levels", agent_id="w")
    header, _, body = reply.text.partition("\n\n")
    assert header.splitlines() == [
        "resource_id: review-checklist#depth-levels",
        "id: review-checklist",
        "version: 1.0.0",
        f"session_index: {index}",
    ]
    assert body.startswith("## Depth Levels") and "### Standard" in body and "## Severity Levels" not in body
    assert reply.meta["delivery"] == "full"
    boot = mcp.ok("get_resource", session_index=index, resource_id="meta/bootstrap-protocol")
    assert boot.text.startswith("resource_id: meta/bootstrap-protocol\nid: bootstrap-protocol\n")
    assert "# Bootstrap Protocol" in boot.text
    bad_anchor = mcp.err("get_resource", session_index=index, resource_id="review-checklist#nope")
    assert "Section '#nope' not found" in bad_anchor
    assert "Resource not found: nope in workflow code-review" in mcp.err(
        "get_resource", session_index=index, resource_id="nope"
    )
    fetched = [e["data"] for e in _events(folder, "resource_fetched")]
    assert fetched[0] == {
        "resourceId": "review-checklist#depth-levels",
        "agentId": "w",
        "chars": len(reply.text),
        "delivery": "full",
    }
    assert fetched[1]["agentId"] == "orchestrator"


# ---------------------------------------------------------------------------------------------- ledger


def test_reference_delivery_ledger(mcp: McpProcess) -> None:
    index, folder = _at(mcp, "code-review", "scope-review", "ledger", context_mode="persistent")
    first = mcp.ok("get_technique", session_index=index, step_id="collect-changes", agent_id="w")
    second = mcp.ok("get_technique", session_index=index, step_id="collect-changes", agent_id="w")
    assert second.parsed["delivery"] == "unchanged" and second.meta["delivery"] == "unchanged"
    assert second.parsed["content_hash"] == first.meta["content_hash"] and HEX16.match(second.parsed["content_hash"])
    assert "full: true" in second.parsed["note"]
    forced = mcp.ok("get_technique", session_index=index, step_id="collect-changes", agent_id="w", full=True)
    assert forced.meta["delivery"] == "full" and "protocol" in forced.parsed
    other = mcp.ok("get_technique", session_index=index, step_id="collect-changes", agent_id="someone-else")
    assert other.meta["delivery"] == "full"

    res = mcp.ok("get_resource", session_index=index, resource_id="review-checklist", agent_id="w")
    again = mcp.ok("get_resource", session_index=index, resource_id="review-checklist", agent_id="w")
    assert "delivery: unchanged" in again.text and f"content_hash: {res.meta['content_hash']}" in again.text
    assert "## Correctness" not in again.text
    section = mcp.ok("get_resource", session_index=index, resource_id="review-checklist#tests", agent_id="w")
    assert section.meta["delivery"] == "full" and section.text.split("\n\n", 1)[1].startswith("## Tests")
    assert (
        mcp.ok("get_resource", session_index=index, resource_id="review-checklist", agent_id="w", full=True).meta[
            "delivery"
        ]
        == "full"
    )

    # one hash for bundled entries and get_technique: a fresh scope bundles, then its fetch is a marker
    loaded = mcp.ok("get_activity", session_index=index, context_tokens=200_000, agent_id="w2")
    head, _ = _halves(loaded)
    assert head["bundle_mode"] == "reference" and head["bundle_note"]
    assert head["step_techniques"]["collect-changes"].get("protocol")
    fetched = mcp.ok("get_technique", session_index=index, step_id="collect-changes", agent_id="w2")
    assert fetched.meta["delivery"] == "unchanged"
    reloaded = mcp.ok("get_activity", session_index=index, context_tokens=200_000, agent_id="w2")
    entry = _halves(reloaded)[0]["step_techniques"]["collect-changes"]
    assert entry["delivery"] == "unchanged" and entry["marker"].startswith("▼ STEP collect-changes")
    bundled = _events(folder, "technique_bundled")
    assert [e["data"]["delivery"] for e in bundled] == ["full", "unchanged"]

    ledger = _file(folder)["deliveredContent"]
    digest = first.meta["content_hash"]
    assert ledger["w"]["technique:review::scope-change"] == digest == ledger["w2"]["technique:review::scope-change"]
    assert ledger["w"]["resource:review-checklist#tests"] == section.meta["content_hash"]
    assert any(key.startswith("contract:code-review::review:") for key in ledger["w"])
    assert any(key.startswith("technique:provenance_note:") for key in ledger["w"])
    assert any(key.startswith("bundle:rules:") for key in ledger["w2"])
    assert any(key.startswith("activity_rules:") for key in ledger["w2"])
    assert "bundle:workflow-engine::activity-worker" in ledger["w2"]

    plain, plain_folder = _at(mcp, "code-review", "scope-review", "ledger-fresh")
    mcp.ok("get_technique", session_index=plain, step_id="collect-changes")
    assert mcp.ok("get_technique", session_index=plain, step_id="collect-changes").meta["delivery"] == "full"
    assert (
        mcp.ok("get_technique", session_index=plain, step_id="collect-changes", bundle="reference").meta["delivery"]
        == "unchanged"
    )
    assert "technique:review::scope-change" in _file(plain_folder)["deliveredContent"]["orchestrator"]


# ---------------------------------------------------------------------------------------------- borrowed


def test_borrowed_activity(mcp: McpProcess) -> None:
    index, _ = _start(mcp, "bug-fix", "borrowed")
    workflow = _halves(mcp.ok("get_workflow", session_index=index))[1]
    assert [a["id"] for a in workflow["activities"]][-1] == "assess"
    mcp.ok("next_activity", session_index=index, activity_id="reproduce")
    mcp.ok("next_activity", session_index=index, activity_id="assess")
    reply = mcp.ok("get_activity", session_index=index, context_tokens=200_000, agent_id="w")
    head, body = _halves(reply)
    assert body["id"] == "assess" and body["artifact_prefix"] == "03"
    assert "code-review/review" in head["techniques"]
    assert "unresolved" not in head
    assert head["step_techniques"]["grade-findings"]["id"] == "review::assess-findings"
    assert all(ref.startswith("code-review/review-checklist") for ref in head["resource_refs"])
    section = mcp.ok("get_resource", session_index=index, resource_id=head["resource_refs"][0])
    assert section.text.startswith(f"resource_id: {head['resource_refs'][0]}\nid: review-checklist\n")
    step = mcp.ok("get_technique", session_index=index, step_id="grade-findings")
    assert step.parsed["inherits"][0] == "bug-fix"  # the executing workflow's root contract


# ---------------------------------------------------------------------------------------------- batch bound


def test_batch_bound(mcp: McpProcess) -> None:
    index, folder = _at(mcp, "code-review", "scope-review", "batch")
    for activity_id in ("scope-review", "read-changes", "assess"):
        if activity_id != "scope-review":
            mcp.ok("next_activity", session_index=index, activity_id=activity_id)
        taken = mcp.ok("get_activity", session_index=index, context_tokens=1_000_000, agent_id="wb")
    assert taken.meta["batch"]["activities"] == 3 and taken.meta["batch"]["may_continue"] is False
    assert taken.meta["batch"]["max_activities"] == 3 and taken.meta["batch"]["budget_chars"] == 1_400_000
    mcp.ok("get_activity", session_index=index, context_tokens=1_000_000, agent_id="wb")  # the held one again
    mcp.ok("next_activity", session_index=index, activity_id="report")
    seq = _file(folder)["seq"]
    refused = mcp.err("get_activity", session_index=index, context_tokens=1_000_000, agent_id="wb")
    assert refused.startswith("BATCH_FULL: Batch full") and "NEW agent_id" in refused
    assert "Batch full" in mcp.err("get_activity", session_index=index, context_tokens=1_000_000, agent_id="wb")
    assert _file(folder)["seq"] == seq + 2  # refusals still write the session
    refusals = _events(folder, "batch_refused")
    assert len(refusals) == 1 and refusals[0]["activity"] == "report"
    assert refusals[0]["data"]["agentId"] == "wb" and refusals[0]["data"]["limit"] == "activity_cap"
    assert [e["activity"] for e in _events(folder, "activity_dispatched") if e["data"]["agentId"] == "wb"] == [
        "scope-review",
        "read-changes",
        "assess",
        "assess",
    ]

    own = mcp.ok("get_activity", session_index=index, context_tokens=1_000_000)
    assert own.meta["batch"] == {
        "activities": 1,
        "delivered_chars": len(own.text),
        "may_continue": True,
        "bounded": False,
    }
    fresh = mcp.ok("get_activity", session_index=index, context_tokens=1_000_000, agent_id="wc")
    assert fresh.meta["batch"]["may_continue"] is True and fresh.meta["dispatch"] == "fresh"


def test_checkpoint_lock(mcp: McpProcess) -> None:
    index, folder = _at(mcp, "code-review", "scope-review", "lock")
    mcp.ok("yield_checkpoint", session_index=index, checkpoint_id="confirm-scope")
    seq = _file(folder)["seq"]
    for tool, args in (
        ("get_activity", {"context_tokens": 1000}),
        ("get_technique", {"step_id": "collect-changes"}),
        ("get_resource", {"resource_id": "review-checklist"}),
    ):
        assert "Active checkpoint" in mcp.err(tool, session_index=index, **args)
    assert _file(folder)["seq"] == seq


# ---------------------------------------------------------------------------------------- in-process, edited corpus


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> InProcess:
    root = tmp_path_factory.mktemp("delivery")
    corpus = root / "workflows"
    shutil.copytree(WORKFLOWS, corpus)
    cr = corpus / "code-review"
    _edit(cr / "activities" / "02-read-changes.yaml", "maxChars: 6000", "maxChars: 0")
    raw = yaml.safe_load((cr / "activities" / "01-scope-review.yaml").read_text())
    raw["bundleTechniques"] = {"maxChars": 100}
    (cr / "activities" / "01-scope-review.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    _edit(
        cr / "techniques" / "review" / "assess-findings.md",
        "## Outputs",
        "### mystery_input\n\nNothing supplies this.\n\n## Outputs",
    )
    _edit(
        cr / "techniques" / "review" / "assess-findings.md",
        "## Protocol\n",
        "## Protocol\n\n0. Read the [missing guide](../../resources/no-such-guide.md#part).\n",
    )
    _edit(
        cr / "activities" / "04-report.yaml",
        "  - kind: checkpoint\n    id: publish-report",
        "  - kind: technique\n    id: write-report-again\n    technique:\n      name: review::write-report\n"
        "      inputs:\n        verdict: review_verdict\n        corrections: reviewer_notes\n"
        "  - kind: checkpoint\n    id: publish-report",
    )
    bug = corpus / "bug-fix" / "workflow.yaml"
    _edit(bug, "techniques:\n  workflow:\n    - fix-plan\n", "")
    return InProcess(root / "server", corpus, controlled_clock=False)


def test_max_chars_skip_and_opt_out(edited: InProcess) -> None:
    index, _ = _at(edited, "code-review", "scope-review", "skip")
    reply = edited.ok("get_activity", session_index=index, context_tokens=200_000, agent_id="w")
    head, _ = _halves(reply)
    assert "step_techniques" not in head and "bundled_steps" not in reply.meta and head["step_techniques_note"]
    edited.ok("next_activity", session_index=index, activity_id="read-changes")
    reply = edited.ok("get_activity", session_index=index, context_tokens=200_000, agent_id="w")
    assert "step_techniques" not in _halves(reply)[0] and "lazy_gates" not in reply.meta


def test_broken_resource_ref_and_unresolved_input_warn(edited: InProcess) -> None:
    index, folder = _at(edited, "code-review", "assess", "warn")
    reply = edited.ok("get_activity", session_index=index, context_tokens=200_000, agent_id="w")
    warnings = reply.meta["validation"]["warnings"]
    assert reply.meta["validation"]["status"] == "warning"
    assert any(w.startswith("Unresolvable resource ref 'no-such-guide#part'") for w in warnings)
    unresolved = "Input 'mystery_input' of technique 'review::assess-findings' is UNRESOLVED at step 'grade-findings'"
    assert unresolved in warnings
    head, _ = _halves(reply)
    assert "no-such-guide#part" not in head["resource_refs"]
    inputs = {i["id"]: i["source"] for i in head["step_techniques"]["grade-findings"]["inputs"]}
    assert inputs["mystery_input"].startswith("UNRESOLVED")
    fetched = edited.ok("get_technique", session_index=index, step_id="grade-findings")
    assert any("UNRESOLVED" in w for w in fetched.meta["validation"]["warnings"])
    assert _file(folder)["status"] == "running"


def test_workflow_without_workflow_techniques(edited: InProcess) -> None:
    index, _ = _start(edited, "bug-fix", "no-wf-tech")
    assert "does not declare any workflow-level techniques" in edited.err("get_technique", session_index=index)


def test_repeated_step_technique_points_at_the_first_copy(edited: InProcess) -> None:
    index, folder = _at(edited, "code-review", "report", "twice")
    reply = edited.ok("get_activity", session_index=index, context_tokens=200_000, agent_id="w")
    steps = _halves(reply)[0]["step_techniques"]
    assert "protocol" in steps["write-report"]
    again = steps["write-report-again"]
    assert again["delivery"] == "unchanged" and again["see"] == "step_techniques.write-report"
    assert again["marker"] == "▼ STEP write-report-again · technique review::write-report"
    assert reply.meta["bundled_steps"] == ["write-report", "write-report-again"]
    assert [e["data"]["delivery"] for e in _events(folder, "technique_bundled")] == ["full", "unchanged"]
