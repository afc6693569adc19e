"""The durable queue: ``GET/POST /api/queue``, ``PATCH/DELETE /api/queue/<id>``, and an item's
``/answer`` (a parked question), ``/requeue`` (an errored item) and ``/confirm`` (an item this service
did not accept itself, see ``queue_seal``). Every change is one ``queue`` transition; one that asks for it
ticks the scheduler. Items are shown without their seal; one the service did not accept carries
``fromThisService: false``."""

from __future__ import annotations

from datetime import UTC, datetime

from quart import Blueprint, Response

from orchestrator.engine.runfolder import RunIdCollision
from orchestrator.service import queue as q
from orchestrator.service.core import Service
from orchestrator.service.queue_seal import item_view
from orchestrator.service.routes.common import error_response, json_response, optional_choice, read_body
from orchestrator.vocabulary import EFFORT_TIERS

__all__ = ["queue_blueprint"]

#: A refused transition's HTTP status by its error code (anything else is 400).
_STATUS = {"not_found": 404, "status_forbidden": 409}


def queue_blueprint(service: Service) -> Blueprint:
    queue = Blueprint("queue", __name__)

    async def tick() -> None:
        try:
            await service.tick()
        except RunIdCollision:
            pass  # the item went back to waiting; a later tick retries

    async def apply(event: q.QueueEvent, status: int = 200) -> Response:
        try:
            effects = await service.queue.apply(lambda items: q.transition(items, event, datetime.now(UTC)))
        except q.QueueError as exc:
            return error_response(exc.code, _STATUS.get(exc.code, 400))
        item = effects.item
        if item is not None:  # the item as the transition left it, sealed as it was saved (before the tick)
            item = next((i for i in service.queue.load() if i.id == item.id), item)
        if effects.tick:
            await tick()
        if item is None:
            return json_response({"ok": True}, status)
        return json_response(item_view(item, service.queue.seal), status)

    @queue.get("/api/queue")
    async def get_queue() -> Response:
        return json_response([item_view(item, service.queue.seal) for item in service.queue.load()])

    @queue.post("/api/queue")
    async def post_queue() -> Response:
        body = await read_body(service.redactor)
        if body is None or not isinstance(body.get("task"), str) or not body["task"].strip():
            return error_response("invalid_body", 400)
        ok, effort = optional_choice(body, "effort", EFFORT_TIERS)
        if not ok:
            return error_response("invalid_body", 400)
        return await apply(q.Enqueue(task=body["task"], effort=effort), 201)

    @queue.patch("/api/queue/<item_id>")
    async def patch_queue(item_id: str) -> Response:
        body = await read_body(service.redactor)
        if body is None:
            return error_response("invalid_body", 400)
        try:
            position = q.parse_position(body["position"]) if "position" in body else None
        except q.QueueError:
            return error_response("invalid_body", 400)
        task, effort = body.get("task"), body.get("effort")
        if (task is not None and (not isinstance(task, str) or not task.strip())) or (
            effort is not None and effort not in EFFORT_TIERS
        ):
            return error_response("invalid_body", 400)
        return await apply(q.Edit(item_id, task=task, effort=effort, position=position))

    @queue.delete("/api/queue/<item_id>")
    async def delete_queue(item_id: str) -> Response:
        return await apply(q.Cancel(item_id))

    @queue.post("/api/queue/<item_id>/answer")
    async def answer_queue(item_id: str) -> Response:
        body = await read_body(service.redactor)
        if body is None or not isinstance(body.get("answer"), str):
            return error_response("invalid_body", 400)
        return await apply(q.Answer(item_id, body["answer"]))

    @queue.post("/api/queue/<item_id>/requeue")
    async def requeue(item_id: str) -> Response:
        return await apply(q.Requeue(item_id))

    @queue.post("/api/queue/<item_id>/confirm")
    async def confirm(item_id: str) -> Response:
        return await apply(q.Confirm(item_id))

    return queue
