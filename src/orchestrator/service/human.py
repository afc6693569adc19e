"""The service's human backend: pending ``ask_human`` questions, answered over HTTP.

The list lives in memory; the question itself is in the run's checkpoint (``PendingTurn.asking``), so
the run resumed at the next start asks it again under the same id. The asking role waits on a
``trio.Event``; its cancellation (plan modification, shutdown, stop) removes the question.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

from orchestrator.runlog.writer import utc_timestamp

__all__ = ["PendingQuestion", "PendingQuestions"]


@dataclass
class PendingQuestion:
    id: str
    question: str
    context: str | None
    asked_at: str = field(default_factory=utc_timestamp)
    answered: trio.Event = field(default_factory=trio.Event)
    answer: str = ""

    def as_json(self) -> dict[str, str]:
        entry = {"id": self.id, "question": self.question, "askedAt": self.asked_at}
        if self.context:
            entry["context"] = self.context
        return entry


class PendingQuestions:
    """``HumanBackend`` for the service: ``ask`` waits; ``answer`` (from ``POST /api/answer``) wakes it."""

    def __init__(self) -> None:
        self._pending: dict[str, PendingQuestion] = {}

    async def ask(self, question_id: str, question: str, context: str | None) -> str:
        pending = PendingQuestion(question_id, question, context)
        self._pending[question_id] = pending
        try:
            await pending.answered.wait()
        finally:
            self._pending.pop(question_id, None)
        return pending.answer

    def answer(self, question_id: str, answer: str) -> bool:
        """Deliver an answer; ``False`` when no question with that id is pending."""
        pending = self._pending.get(question_id)
        if pending is None or pending.answered.is_set():
            return False
        pending.answer = answer
        pending.answered.set()
        return True

    def list(self) -> list[dict[str, str]]:
        return [p.as_json() for p in self._pending.values() if not p.answered.is_set()]

    def clear(self) -> None:
        self._pending.clear()
