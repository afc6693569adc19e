"""``PendingQuestions``: the one place a pending question's JSON is built (``GET /api/questions``)."""

from __future__ import annotations

import trio
import trio.testing

from orchestrator.service.human import PendingQuestion, PendingQuestions


def test_a_pending_question_as_json_omits_an_empty_context() -> None:
    assert PendingQuestion("q1", "Which?", None, asked_at="2026-01-01T00:00:00.000Z").as_json() == {
        "id": "q1",
        "question": "Which?",
        "askedAt": "2026-01-01T00:00:00.000Z",
    }
    assert PendingQuestion("q2", "Why?", "", asked_at="2026-01-01T00:00:01.000Z").as_json() == {
        "id": "q2",
        "question": "Why?",
        "askedAt": "2026-01-01T00:00:01.000Z",
    }
    assert PendingQuestion("q3", "How?", "because", asked_at="2026-01-01T00:00:02.000Z").as_json() == {
        "id": "q3",
        "question": "How?",
        "askedAt": "2026-01-01T00:00:02.000Z",
        "context": "because",
    }


async def test_questions_are_listed_in_order_until_answered() -> None:
    questions = PendingQuestions()
    answers: dict[str, str] = {}

    async def ask(question_id: str, text: str, context: str | None) -> None:
        answers[question_id] = await questions.ask(question_id, text, context)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, "q1", "Which?", None)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(ask, "q2", "Why?", "because")
        await trio.testing.wait_all_tasks_blocked()
        listed = questions.list()
        assert [(q["id"], q["question"], q.get("context")) for q in listed] == [
            ("q1", "Which?", None),
            ("q2", "Why?", "because"),
        ]
        assert questions.answer("q1", "this one")
        assert not questions.answer("q1", "again")  # answered: no longer pending
        assert not questions.answer("nope", "x")
        assert [q["id"] for q in questions.list()] == ["q2"]
        assert questions.answer("q2", "because")
    assert answers == {"q1": "this one", "q2": "because"}
    assert questions.list() == []
