"""Acceptance scenarios 13–17, 22 and 23 on the real corpus, over stdio: manifests, technique and
resource delivery, the reference-delivery ledger, borrowed activities, the trace, usage and the batch bound.

Support (the clocked server, session helpers) lives in ``test_acceptance_corpus.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import SEPARATOR, Reply
from .test_acceptance_corpus import (
    HASH16,
    SKIP_NO_CORPUS,
    ClockedServer,
    at_activity,
    clocked_server,
    history,
    session_json,
    start,
    warnings,
)

pytestmark = SKIP_NO_CORPUS


@pytest.fixture(scope="module")
def acc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClockedServer]:
    yield from clocked_server(tmp_path_factory, "acc-delivery")


def _split_header(text: str) -> tuple[dict[str, str], str]:
    """A get_resource text: ``key: value`` header lines, a blank line, the body."""
    head, _, body = text.partition("\n\n")
    header = dict(line.split(": ", 1) for line in head.splitlines())
    return header, body


def _technique(reply: Reply) -> dict[str, Any]:
    """The technique mapping of a get_technique text (``session_index: X`` + blank line + YAML)."""
    parsed = reply.parsed
    assert isinstance(parsed, dict), reply.text[:300]
    return parsed


# ---------------------------------------------------------------------------------------------- 13


def test_s13_manifests(acc: ClockedServer) -> None:
    index, folder = at_activity(acc, "acc-13")
    moved = acc.ok(
        "next_activity",
        session_index=index,
        activity_id="design-philosophy",
        step_manifest=[
            {"step_id": "derive-host-repo", "output": "x"},
            {"step_id": "detect-review-mode", "output": "y"},
            {"step_id": "bogus", "output": ""},
        ],
        transition_condition="default",
        variables_changed={"needs_research": "yes"},
    )
    found = warnings(moved)

    def one(fragment: str) -> str:
        hits = [w for w in found if fragment in w]
        assert hits, f"no warning containing {fragment!r} in {found}"
        return hits[0]

    one("Missing steps")
    one("Unexpected steps in manifest: [bogus]")
    one("Step order mismatch")
    one("empty output")
    assert "derive-host-repo" in one("without an in-session technique fetch")
    assert "declared as boolean" in one("Variable 'needs_research'")
    assert not [w for w in found if "Transition to" in w or "Condition mismatch" in w], found
    kinds = (
        "Missing steps",
        "Unexpected steps",
        "Step order mismatch",
        "empty output",
        "in-session technique fetch",
        "Variable 'needs_research'",
    )
    assert all(any(kind in w for kind in kinds) for w in found), found
    assert session_json(folder)["currentActivity"] == "design-philosophy"

    assert any(
        "not a direct transition" in w
        for w in warnings(acc.ok("next_activity", session_index=index, activity_id="plan-prepare"))
    )
    assert "Activity not found" in acc.err("next_activity", session_index=index, activity_id="nope")


# ---------------------------------------------------------------------------------------------- 14


def test_s14_get_technique(acc: ClockedServer) -> None:
    meta_index = acc.ok("start_session", workflow_id="meta", user_request="acceptance 14").parsed["session_index"]
    first = _technique(acc.ok("get_technique", session_index=meta_index))
    assert first["id"].split("::")[-1] == "start-session"

    index, _ = start(acc, "acc-14")
    assert "workflow-level techniques" in acc.err("get_technique", session_index=index)
    acc.ok("next_activity", session_index=index, activity_id="start-work-package")
    bound = acc.ok("get_technique", session_index=index, step_id="detect-review-mode")
    assert _technique(bound)["id"] == "review-mode-detection"
    assert "source:" in bound.text
    assert "no associated technique" in acc.err("get_technique", session_index=index, step_id="announce-start")
    assert "Available steps" in acc.err("get_technique", session_index=index, step_id="zzz")
    assert "current activity is" in acc.err("get_technique", session_index=index, activity_id="design-philosophy")


# ---------------------------------------------------------------------------------------------- 15


def test_s15_resources(acc: ClockedServer) -> None:
    index, _ = at_activity(acc, "acc-15")
    header, body = _split_header(
        acc.ok("get_resource", session_index=index, resource_id="review-mode#review-comment-template").text
    )
    assert header["id"] == "review-mode" and header["version"] == "1.18.0"
    assert body.startswith("## Review Comment Template")
    assert "### Header Fields" in body and "## PR Review" not in body
    header, body = _split_header(
        acc.ok("get_resource", session_index=index, resource_id="meta/bootstrap-protocol").text
    )
    assert "# Bootstrap Protocol" in body
    assert "Section" in acc.err("get_resource", session_index=index, resource_id="review-mode#no-such-heading")
    assert "Resource not found" in acc.err("get_resource", session_index=index, resource_id="nope")


# ---------------------------------------------------------------------------------------------- 16


def _unchanged(reply: Reply) -> bool:
    return reply.meta.get("delivery") == "unchanged"


def test_s16_ledger_persistent(acc: ClockedServer) -> None:
    index, _ = at_activity(acc, "acc-16", context_mode="persistent")
    first = acc.ok("get_technique", session_index=index, step_id="derive-host-repo")
    assert not _unchanged(first) and "capability" in _technique(first)
    second = acc.ok("get_technique", session_index=index, step_id="derive-host-repo")
    assert _unchanged(second)
    marker = _technique(second)
    assert marker["delivery"] == "unchanged" and HASH16.match(marker["content_hash"])
    forced = acc.ok("get_technique", session_index=index, step_id="derive-host-repo", full=True)
    assert not _unchanged(forced) and "capability" in _technique(forced)

    assert not _unchanged(acc.ok("get_resource", session_index=index, resource_id="review-mode"))
    assert _unchanged(acc.ok("get_resource", session_index=index, resource_id="review-mode"))
    section = acc.ok("get_resource", session_index=index, resource_id="review-mode#review-comment-template")
    assert not _unchanged(section) and "## Review Comment Template" in section.text


def test_s16_ledger_fresh(acc: ClockedServer) -> None:
    index, _ = at_activity(acc, "acc-16f")
    for _ in range(2):
        again = acc.ok("get_technique", session_index=index, step_id="derive-host-repo")
        assert not _unchanged(again) and "capability" in _technique(again)
    assert _unchanged(acc.ok("get_technique", session_index=index, step_id="derive-host-repo", bundle="reference"))
    for _ in range(2):
        assert not _unchanged(acc.ok("get_resource", session_index=index, resource_id="review-mode"))
    assert _unchanged(acc.ok("get_resource", session_index=index, resource_id="review-mode", bundle="reference"))


# ---------------------------------------------------------------------------------------------- 17


def test_s17_borrowed_activities(acc: ClockedServer) -> None:
    index, _ = start(acc, "acc-17", workflow_id="remediate-vuln")
    _, summary = acc.ok("get_workflow", session_index=index).parsed
    assert len(summary["activities"]) == 15
    acc.ok("next_activity", session_index=index, activity_id="start")
    acc.ok("next_activity", session_index=index, activity_id="design-philosophy")
    reply = acc.ok("get_activity", session_index=index, context_tokens=200000)
    assert reply.meta["artifact_prefix"] == "02"
    _, body = reply.text.split(SEPARATOR, 1)
    assert "\nid: design-philosophy\n" in body


# ---------------------------------------------------------------------------------------------- 22


def test_s22_trace(acc: ClockedServer) -> None:
    index, _ = at_activity(acc, "acc-22")
    acc.ok("yield_checkpoint", session_index=index, checkpoint_id="review-mode-detection")
    acc.err("respond_checkpoint", session_index=index, option_id="new-implementation")
    acc.advance(4)
    acc.ok("respond_checkpoint", session_index=index, option_id="new-implementation")
    acc.ok("get_workflow_status", session_index=index)
    acc.ok("inspect_session", session_index=index)
    acc.ok("get_trace", session_index=index)
    trace = acc.ok("get_trace", session_index=index).parsed
    assert trace["source"] == "memory"
    events = trace["events"]
    assert all({"name", "ts", "ms", "s", "wf", "act", "aid"} <= set(e) for e in events), events[:2]
    names = [e["name"] for e in events]
    assert {"get_trace", "get_workflow_status", "inspect_session"} <= set(names), names
    responds = [e for e in events if e["name"] == "respond_checkpoint"]
    assert responds[0]["s"] == "error" and "too fast" in responds[0]["err"]
    assert responds[1]["s"] == "ok"

    token = acc.ok("next_activity", session_index=index, activity_id="design-philosophy").meta["trace_token"]
    decoded = acc.ok("get_trace", session_index=index, trace_tokens=[token]).parsed
    assert decoded["source"] == "tokens" and decoded["event_count"] > 0 and "token_errors" not in decoded
    tampered = token[:-1] + ("0" if token[-1] != "0" else "1")
    broken = acc.ok("get_trace", session_index=index, trace_tokens=[tampered]).parsed
    assert any("HMAC signature verification failed" in e for e in broken["token_errors"]), broken


# ---------------------------------------------------------------------------------------------- 23


def test_s23_usage(acc: ClockedServer) -> None:
    index, _ = at_activity(acc, "acc-23u")
    acc.ok(
        "record_usage",
        session_index=index,
        activity="start-work-package",
        usage={"input_tokens": 100, "output_tokens": 50},
        basis="delta",
        agent_id="w1",
    )
    acc.ok(
        "record_usage",
        session_index=index,
        activity="start-work-package",
        usage={"total_tokens": 900},
        basis="cumulative",
        agent_id="w1",
    )
    assert acc.call(
        "record_usage", session_index=index, activity="start-work-package", usage={"total_tokens": 1}
    ).is_error
    usage = acc.ok("inspect_session", session_index=index, view="usage").parsed
    assert usage["totals"] == {"input_tokens": 100, "output_tokens": 50}
    assert usage["cumulative_latest_by_agent"]["w1"]["total_tokens"] == 900


def test_s23_batch_bound(acc: ClockedServer) -> None:
    index, folder = at_activity(acc, "acc-23b")
    walk = ["start-work-package", "design-philosophy", "codebase-comprehension", "requirements-elicitation"]
    for position, activity in enumerate(walk[:3]):
        if position:
            acc.ok("next_activity", session_index=index, activity_id=activity)
        batch = acc.ok("get_activity", session_index=index, context_tokens=1_000_000, agent_id="wb").meta["batch"]
        assert batch["activities"] == position + 1
    again = acc.ok("get_activity", session_index=index, context_tokens=1_000_000, agent_id="wb")
    assert again.meta["batch"]["may_continue"] is False
    acc.ok("next_activity", session_index=index, activity_id=walk[3])
    for _ in range(2):
        assert "Batch full" in acc.err("get_activity", session_index=index, context_tokens=1_000_000, agent_id="wb")
    refused = history(folder, "batch_refused")
    assert [e["data"]["limit"] for e in refused] == ["activity_cap"]
    own = acc.ok("get_activity", session_index=index, context_tokens=1_000_000)
    assert own.meta["batch"]["bounded"] is False and own.meta["batch"]["may_continue"] is True
