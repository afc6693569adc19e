"""``tools/batch_bound.py``: the batch budget, delivered chars, standing, refusals and dispatch kinds."""

from __future__ import annotations

from typing import Any

import pytest
from tests.workflow.tools.builders import dispatched, event

from orchestrator.workflow.tools import batch_bound as bb

POLICY = bb.BatchPolicy(max_activities=3, headroom_fraction=0.35, chars_per_token=4)


def test_budget_is_floored() -> None:
    assert bb.batch_budget(200_000, POLICY) == 280_000
    assert bb.batch_budget(3, POLICY) == 4  # 4.2 floored


@pytest.mark.parametrize("chars", [None, "1000", float("nan"), float("inf"), -5, True])
def test_unmeasured_sizes_count_for_nothing(chars: Any) -> None:
    history = [dispatched("w", "a", chars), dispatched("w", "b", 500)]
    assert bb.batch_activities(history, "w") == ["b"]
    assert bb.delivered_chars(history, "w") == 500


def test_delivered_chars_counts_only_full_lazy_deliveries() -> None:
    history = [
        dispatched("w", "a", 1000),
        dispatched("w", "a", 300, delivery="unchanged"),
        event("technique_fetched", "a", agentId="w", chars=200, delivery="full"),
        event("technique_fetched", "a", agentId="w", chars=999, delivery="unchanged"),
        event("technique_bundled", "a", agentId="w", chars=777, delivery="full"),
        event("resource_fetched", "a", agentId="w", chars=50, delivery="full"),
        event("resource_fetched", "a", agentId="w", chars=60, delivery="full", bundled=True),
        event("activity_redelivered", "a", agentId="w", priorAgentId="v", chars=1000),
        event("technique_fetched", "a", agentId="other", chars=10_000, delivery="full"),
    ]
    assert bb.delivered_chars(history, "w") == 1250


def test_standing_block_and_exemptions() -> None:
    history = [dispatched("w", "a"), dispatched("w", "b"), dispatched("w", "a")]
    standing = bb.batch_standing(history, "orch", "w", 1000, POLICY)
    assert standing.activities == ("a", "b")
    assert standing.block() == {
        "activities": 2,
        "delivered_chars": 3000,
        "may_continue": False,
        "bounded": True,
        "max_activities": 3,
        "budget_chars": 1400,
    }
    own = bb.batch_standing(history, "w", "w", 1000, POLICY)  # the session's agent is never bounded
    assert own.block() == {"activities": 2, "delivered_chars": 3000, "may_continue": True, "bounded": False}
    empty = bb.batch_standing([], "orch", "new", 1, POLICY)
    assert empty.may_continue
    pending = bb.batch_standing(history, "orch", "w", 1_000_000, POLICY, pending_chars=10, pending_activity="c")
    assert pending.activities == ("a", "b", "c") and pending.chars == 3010 and not pending.may_continue


def test_refusal_cap_budget_and_held_activity() -> None:
    three = [dispatched("w", x) for x in ("a", "b", "c")]
    refusal = bb.batch_refusal(three, "orch", "w", "d", 1_000_000, POLICY)
    assert refusal is not None and refusal.limit == "activity_cap" and refusal.activities == 3
    assert bb.batch_refusal(three, "orch", "w", "c", 1_000_000, POLICY) is None  # already held
    assert bb.batch_refusal(three, "w", "w", "d", 1_000_000, POLICY) is None  # session agent
    over = [dispatched("w", "a", 5000)]
    budget = bb.batch_refusal(over, "orch", "w", "b", 1000, POLICY)
    assert budget is not None and budget.limit == "delivery_budget" and budget.budget_chars == 1400
    message = bb.refusal_message("d", "w", refusal)
    assert "Batch full" in message and "NEW agent_id" in message and "cap of 3" in message
    data = refusal.event_data("w")
    assert data == {
        "agentId": "w",
        "limit": "activity_cap",
        "activities": 3,
        "chars": 3000,
        "maxActivities": 3,
        "budgetChars": 1_400_000,
    }
    logged = [event("batch_refused", "d", **data)]
    assert bb.refusal_already_logged(logged, "w", "d", "activity_cap")
    assert not bb.refusal_already_logged(logged, "w", "d", "delivery_budget")
    assert not bb.refusal_already_logged(logged, "v", "d", "activity_cap")


def test_dispatch_kind_and_redelivery() -> None:
    history = [dispatched("w1", "a"), event("activity_dispatched", "a", agentId="w3", dispatch="fresh")]
    assert bb.dispatch_kind(history, "w1") == "resume"
    assert bb.dispatch_kind(history, "w2") == "fresh"
    assert bb.prior_holder(history, "w2", "a") == "w1"
    assert bb.prior_holder(history, "w1", "a") is None
    assert bb.prior_holder(history, "w2", "b") is None


def test_step_started_once_per_visit() -> None:
    started = event("step_started", "a", stepId="s", agentId="w")
    assert bb.step_started_before([started], "a", "s", "w")
    assert not bb.step_started_before([started], "a", "s", "other")
    assert not bb.step_started_before([started, event("activity_entered", "a")], "a", "s", "w")
