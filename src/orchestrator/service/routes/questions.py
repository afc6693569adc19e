"""Live ``ask_human`` questions: ``GET /api/questions`` and ``POST /api/answer``."""

from __future__ import annotations

from quart import Blueprint, Response

from orchestrator.service.core import Service
from orchestrator.service.routes.common import error_response, json_response, read_body

__all__ = ["questions_blueprint"]


def questions_blueprint(service: Service) -> Blueprint:
    questions = Blueprint("questions", __name__)

    @questions.get("/api/questions")
    async def get_questions() -> Response:
        return json_response(service.questions.list())

    @questions.post("/api/answer")
    async def post_answer() -> Response:
        body = await read_body(service.redactor)
        if body is None or not isinstance(body.get("id"), str) or not isinstance(body.get("answer"), str):
            return error_response("invalid_body", 400)
        if not service.questions.answer(body["id"], body["answer"]):
            return error_response("not_found", 404)
        return json_response({"ok": True})

    return questions
