"""Requests for a live run that are applied only at a safe point (between turns).

For now: operator *notices* — directives injected as a marked user message into the chain root's
history (the graceful-shutdown wind-down is one). Posting never blocks and never touches the run's
state; the run drains one request per safe point. In memory only: a restart loses pending requests.
"""

from __future__ import annotations

from collections import deque

__all__ = ["InterruptQueue", "notice_text"]


def notice_text(message: str) -> str:
    """The marked user message a notice becomes in the chain root's history."""
    return f"[Operator notice — a directive from the operator, not a question] {message}"


class InterruptQueue:
    """FIFO of pending operator requests for one run."""

    def __init__(self) -> None:
        self._notices: deque[str] = deque()

    def post_notice(self, message: str) -> None:
        self._notices.append(message)

    def take_notice(self) -> str | None:
        return self._notices.popleft() if self._notices else None

    @property
    def pending(self) -> bool:
        return bool(self._notices)
