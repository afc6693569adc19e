"""``routes.questions``: the pending ``ask_human`` questions and their answers, in-process (a question
answered end to end by a run is in ``test_active_run.py``)."""

from __future__ import annotations

from pathlib import Path

import trio
import trio.testing
from quart_trio import QuartTrio
from tests.helpers import make_settings

from orchestrator.service.core import Service
from orchestrator.service.routes.questions import questions_blueprint

INVALID = {"ok": False, "error": "invalid_body"}


async def test_a_pending_question_is_listed_and_answered_once(tmp_path: Path) -> None:
    service = Service(make_settings(tmp_path, "http://127.0.0.1:9/v1"), tmp_path)
    app = QuartTrio(__name__)
    app.register_blueprint(questions_blueprint(service))
    answers: list[str] = []

    async def role_asks() -> None:
        answers.append(await service.questions.ask("q-1", "Which database?", "the schema step"))

    async with app.test_app() as test_app, trio.open_nursery() as nursery:
        client = test_app.test_client()
        assert await (await client.get("/api/questions")).get_json() == []
        nursery.start_soon(role_asks)
        await trio.testing.wait_all_tasks_blocked()
        (listed,) = await (await client.get("/api/questions")).get_json()
        assert (listed["id"], listed["question"], listed["context"]) == ("q-1", "Which database?", "the schema step")
        for body in ({"id": "q-1"}, {"answer": "yes"}, {"id": 1, "answer": "yes"}, [1]):
            response = await client.post("/api/answer", json=body)
            assert (response.status_code, await response.get_json()) == (400, INVALID), body
        response = await client.post("/api/answer", json={"id": "q-1", "answer": "Postgres"})
        assert (response.status_code, await response.get_json()) == (200, {"ok": True})
        again = await client.post("/api/answer", json={"id": "q-1", "answer": "MySQL"})
        assert (again.status_code, await again.get_json()) == (404, {"ok": False, "error": "not_found"})
    assert answers == ["Postgres"]
