"""Operator requests for a live run, applied only at a safe point (between turns).

Two queued kinds: ``inquiry`` (a question a fresh handler answers while the run is paused) and the
internal ``notice`` (a directive injected as a marked user message into the chain root's history; the
graceful-shutdown wind-down is one). Plan modifications are not queued: they cancel scopes at once
(``Run.modify_plan``). Posting never blocks and never touches the run's state; the run takes one
request per safe point. In memory only: a restart loses pending requests.
"""

from __future__ import annotations

from collections import deque
from typing import Literal, NamedTuple

__all__ = ["InterruptQueue", "OperatorRequest", "notice_text", "plan_modification_text"]


class OperatorRequest(NamedTuple):
    kind: Literal["inquiry", "notice"]
    message: str


def notice_text(message: str) -> str:
    """The marked user message a notice becomes in the chain root's history."""
    return f"[Operator notice — a directive from the operator, not a question] {message}"


def plan_modification_text(message: str) -> str:
    """The marked user message the plan owner receives."""
    return f"[Operator plan modification — the work below you was stopped; re-plan with this] {message}"


class InterruptQueue:
    """FIFO of pending operator requests for one run."""

    def __init__(self) -> None:
        self._requests: deque[OperatorRequest] = deque()
        #: plan modifications that arrived before any role was live; applied at the first safe point
        self._early_plans: deque[str] = deque()

    def post_early_plan_modification(self, message: str) -> None:
        self._early_plans.append(message)

    def take_early_plan_modification(self) -> str | None:
        return self._early_plans.popleft() if self._early_plans else None

    def post_notice(self, message: str) -> None:
        self._requests.append(OperatorRequest("notice", message))

    def post_inquiry(self, message: str) -> None:
        self._requests.append(OperatorRequest("inquiry", message))

    def take(self) -> OperatorRequest | None:
        return self._requests.popleft() if self._requests else None

    @property
    def pending(self) -> bool:
        return bool(self._requests) or bool(self._early_plans)
