"""Dispatch accounting and the batch bound. Pure functions over a session's history.

A *batch* is the run of activities one delivery scope (worker context) has taken: the distinct
activities of its ``activity_dispatched`` events that carry a measured ``chars``. What it has been
*delivered* is the sum of measured ``chars`` over its ``activity_dispatched``, ``technique_fetched`` and
non-bundled ``resource_fetched`` events whose ``delivery`` is not ``unchanged`` (bundled content is
already inside the activity response). A size counts only when it is a finite, non-negative number, so
a damaged or hand-edited history can never poison the arithmetic.

The session's own agent is exempt (it owns the whole walk), and so is a scope that has taken nothing
yet. An activity the scope already holds is always served (a worker resuming after a gate).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import msgspec

from orchestrator.workflow.session.sessionfile import HistoryEvent

__all__ = [
    "BatchPolicy",
    "BatchRefusal",
    "BatchStanding",
    "DispatchKind",
    "batch_activities",
    "batch_budget",
    "batch_refusal",
    "batch_standing",
    "delivered_chars",
    "dispatch_kind",
    "prior_holder",
    "refusal_already_logged",
    "refusal_message",
    "scope_seen",
    "step_started_before",
]

DispatchKind = Literal["fresh", "resume"]
Limit = Literal["activity_cap", "delivery_budget"]


class BatchPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Server settings: the activity cap, the headroom fraction and the token→character factor."""

    max_activities: int = 3
    headroom_fraction: float = 0.35
    chars_per_token: float = 4.0


class BatchStanding(msgspec.Struct, frozen=True, kw_only=True):
    """Where one scope stands: its activities (first-delivery order), delivered characters, the verdict."""

    activities: tuple[str, ...]
    chars: int
    may_continue: bool
    bounded: bool
    max_activities: int
    budget_chars: int

    def block(self) -> dict[str, Any]:
        """The wire block ``{activities, delivered_chars, may_continue, bounded, max_activities?,
        budget_chars?}`` (the limits only when the scope is bounded)."""
        out: dict[str, Any] = {
            "activities": len(self.activities),
            "delivered_chars": self.chars,
            "may_continue": self.may_continue,
            "bounded": self.bounded,
        }
        if self.bounded:
            out["max_activities"] = self.max_activities
            out["budget_chars"] = self.budget_chars
        return out


class BatchRefusal(msgspec.Struct, frozen=True, kw_only=True):
    """Why a scope may not take another activity, with the arithmetic behind it."""

    limit: Limit
    activities: int
    chars: int
    max_activities: int
    budget_chars: int

    def event_data(self, scope: str) -> dict[str, Any]:
        """``batch_refused`` data: ``{agentId, limit, activities, chars, maxActivities, budgetChars}``."""
        return {
            "agentId": scope,
            "limit": self.limit,
            "activities": self.activities,
            "chars": self.chars,
            "maxActivities": self.max_activities,
            "budgetChars": self.budget_chars,
        }


def _size(value: Any) -> int | None:
    """A recorded size usable in arithmetic (finite, non-negative number), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return int(value) if value >= 0 else None


def _agent(event: HistoryEvent) -> str | None:
    data = event.data or {}
    agent = data.get("agentId")
    return agent if isinstance(agent, str) else None


def batch_budget(context_tokens: int, policy: BatchPolicy) -> int:
    """``floor(context_tokens × headroom_fraction × chars_per_token)``."""
    return math.floor(context_tokens * policy.headroom_fraction * policy.chars_per_token)


def batch_activities(history: Iterable[HistoryEvent], scope: str) -> list[str]:
    """Distinct activities ``scope`` took delivery of (``activity_dispatched`` with a measured size)."""
    seen: list[str] = []
    for event in history:
        if event.type != "activity_dispatched" or _agent(event) != scope:
            continue
        if _size((event.data or {}).get("chars")) is None or not event.activity:
            continue
        if event.activity not in seen:
            seen.append(event.activity)
    return seen


def delivered_chars(history: Iterable[HistoryEvent], scope: str) -> int:
    """Characters delivered in full to ``scope`` (see the module docstring for what counts)."""
    total = 0
    for event in history:
        if event.type not in ("activity_dispatched", "technique_fetched", "resource_fetched"):
            continue
        data = event.data or {}
        if _agent(event) != scope or data.get("delivery") == "unchanged":
            continue
        if event.type == "resource_fetched" and data.get("bundled") is True:
            continue
        size = _size(data.get("chars"))
        if size is not None:
            total += size
    return total


def batch_standing(
    history: Sequence[HistoryEvent],
    session_agent: str,
    scope: str,
    context_tokens: int,
    policy: BatchPolicy,
    *,
    pending_chars: int = 0,
    pending_activity: str | None = None,
) -> BatchStanding:
    """The scope's standing, optionally including a delivery on its way out (not yet in the history).

    ``session_agent`` is the session's own ``agentId`` (exempt: never bounded).
    """
    activities = batch_activities(history, scope)
    if pending_activity is not None and pending_activity not in activities:
        activities.append(pending_activity)
    chars = delivered_chars(history, scope) + max(0, pending_chars)
    cap = max(1, policy.max_activities)
    budget = batch_budget(context_tokens, policy)
    bounded = scope != session_agent
    exempt = not bounded or not activities
    return BatchStanding(
        activities=tuple(activities),
        chars=chars,
        may_continue=exempt or (len(activities) < cap and chars <= budget),
        bounded=bounded,
        max_activities=cap,
        budget_chars=budget,
    )


def batch_refusal(
    history: Sequence[HistoryEvent],
    session_agent: str,
    scope: str,
    activity_id: str,
    context_tokens: int,
    policy: BatchPolicy,
) -> BatchRefusal | None:
    """``None`` when ``scope`` may take ``activity_id`` (exempt, already held, or within both limits)."""
    standing = batch_standing(history, session_agent, scope, context_tokens, policy)
    if activity_id in standing.activities or standing.may_continue:
        return None
    limit: Limit = "activity_cap" if len(standing.activities) >= standing.max_activities else "delivery_budget"
    return BatchRefusal(
        limit=limit,
        activities=len(standing.activities),
        chars=standing.chars,
        max_activities=standing.max_activities,
        budget_chars=standing.budget_chars,
    )


def refusal_message(activity_id: str, scope: str, refusal: BatchRefusal) -> str:
    """The error text for a refused get_activity (contains ``Batch full`` and ``NEW agent_id``)."""
    if refusal.limit == "activity_cap":
        why = (
            f"it has taken {refusal.activities} activit{'y' if refusal.activities == 1 else 'ies'}, the cap of "
            f"{refusal.max_activities} per worker context"
        )
    else:
        why = (
            f"{refusal.chars} characters were delivered to it, over its batch budget of {refusal.budget_chars} "
            "characters for the declared context window"
        )
    return (
        f"Batch full: agent context '{scope}' cannot take activity '{activity_id}' because {why}. Nothing was "
        "delivered. Finish and report the activity you hold; the orchestrator must dispatch this one to a "
        f"worker with a NEW agent_id (another call under '{scope}' is refused again)."
    )


def refusal_already_logged(history: Iterable[HistoryEvent], scope: str, activity_id: str, limit: str) -> bool:
    """Whether a ``batch_refused`` for this scope, activity and limit is already in the history."""
    return any(
        event.type == "batch_refused"
        and event.activity == activity_id
        and _agent(event) == scope
        and (event.data or {}).get("limit") == limit
        for event in history
    )


def scope_seen(history: Iterable[HistoryEvent], scope: str) -> bool:
    """Whether ``scope`` has any ``activity_dispatched`` event (a *returning* scope)."""
    return any(event.type == "activity_dispatched" and _agent(event) == scope for event in history)


def dispatch_kind(history: Iterable[HistoryEvent], scope: str) -> DispatchKind:
    """``fresh`` for a scope never seen before, else ``resume``."""
    return "resume" if scope_seen(history, scope) else "fresh"


def prior_holder(history: Iterable[HistoryEvent], scope: str, activity_id: str) -> str | None:
    """The latest *other* scope that took ``activity_id`` when ``scope`` never did (a redelivery), else ``None``."""
    other: str | None = None
    for event in history:
        if event.type != "activity_dispatched" or event.activity != activity_id:
            continue
        agent = _agent(event)
        if agent == scope:
            return None
        if agent is not None and _size((event.data or {}).get("chars")) is not None:
            other = agent
    return other


def step_started_before(history: Sequence[HistoryEvent], activity_id: str, step_id: str, scope: str) -> bool:
    """Whether ``scope`` already has a ``step_started`` for this step in the current visit of the activity
    (since its latest ``activity_entered``)."""
    for event in reversed(history):
        if event.type == "activity_entered" and event.activity == activity_id:
            return False
        if (
            event.type == "step_started"
            and event.activity == activity_id
            and (event.data or {}).get("stepId") == step_id
            and _agent(event) == scope
        ):
            return True
    return False
