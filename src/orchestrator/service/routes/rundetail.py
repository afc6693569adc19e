"""What one run's log says, derived: ``/log`` (the event window, one event's detail, the text export),
``/flow`` (the operation model, the latest run's at ``/api/run/flow``; ``?since=<cursor>`` answers only
what changed since that cursor, ``flow/delta.py``), ``/tree`` and ``/timeline``.

Every answer but the text export and an operation's details is conditional JSON (``ETag`` /
``If-None-Match`` → ``304``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from quart import Blueprint, Response, request

from orchestrator.engine.runfolder import read_meta
from orchestrator.runlog.writer import utc_timestamp
from orchestrator.service.core import Service
from orchestrator.service.routes.common import RunFolders, conditional_json, error_response, json_response
from orchestrator.service.runindex import RunIndex, RunIndexes
from orchestrator.service.views import event_detail, latest_run_id, log_text, log_window, parse_window_params

__all__ = ["FLOW_WINDOW", "flow_window", "rundetail_blueprint"]

#: Operations a ``GET /flow`` answer carries by default: the newest ones plus every live one, so the
#: 1 s poll stays the same size however long the run grows (~300 KB at most). ``?window=all`` asks for
#: the whole model (the UI's "Show all"), ``?window=N`` for another size.
FLOW_WINDOW = 1000


def flow_window(value: str | None) -> int | None:
    """The ``window`` query value: ``all`` → ``None`` (whole model); a positive integer → itself;
    absent or anything else → ``FLOW_WINDOW`` (lenient, like the log window's parameters)."""
    if value == "all":
        return None
    if value is not None and value.isascii() and value.isdigit() and 0 < len(value) <= 9 and int(value) > 0:
        return int(value)
    return FLOW_WINDOW


def _fields(struct: msgspec.Struct) -> dict[str, Any]:
    built = msgspec.to_builtins(struct)
    return built if isinstance(built, dict) else {}


def rundetail_blueprint(service: Service, indexes: RunIndexes, folders: RunFolders) -> Blueprint:
    detail = Blueprint("rundetail", __name__)

    @detail.get("/api/runs/<run_id>/log")
    async def get_log(run_id: str) -> Response:
        if not folders.known(run_id):
            return error_response("not_found", 404)
        index = await indexes.get(run_id)
        params = parse_window_params(request.args)
        if params.detail is not None:
            event = event_detail(index, params.detail, agg=index.aggregate)
            return json_response(event) if event is not None else error_response("not_found", 404)
        text = params.format == "text"  # the text export is run-wide: ``instance`` does not scope it
        instance = None if text else params.instance
        window = log_window(index, offset=params.offset, limit=params.limit, instance=instance, agg=index.aggregate)
        if text:
            body, filename = log_text(run_id, window["events"])
            return Response(
                body,
                content_type="text/plain; charset=utf-8",
                headers={"content-disposition": f'attachment; filename="{filename}"'},
            )
        return conditional_json({"runId": run_id, **window})

    async def flow(run_id: str) -> Response:
        if not folders.known(run_id):
            return error_response("not_found", 404)
        index = await indexes.get(run_id)
        operation = request.args.get("operation")
        if operation is not None:
            try:
                body = {"operationId": operation, "details": index.details(operation)}
                return json_response({**body, "logIndex": index.log_index(operation)})
            except KeyError:
                return error_response("not_found", 404)
        meta = read_meta(folders.folder(run_id))
        window = flow_window(request.args.get("window"))
        status = meta.status if meta else None
        since = request.args.get("since")
        if since is not None:  # the live poll: only what changed since the client's cursor (flow/delta.py)
            return conditional_json(index.flow_answer(status, utc_timestamp(), since, window=window))
        return conditional_json(index.model(status, utc_timestamp(), window=window))

    @detail.get("/api/runs/<run_id>/flow")
    async def get_flow(run_id: str) -> Response:
        return await flow(run_id)

    @detail.get("/api/run/flow")
    async def get_latest_flow() -> Response:
        run_id = latest_run_id(service.workspace)
        return await flow(run_id) if run_id is not None else error_response("no_run", 404)

    async def derive(run_id: str, derivation: Callable[[RunIndex, str | None, str], msgspec.Struct]) -> Response:
        if not folders.known(run_id):
            return error_response("not_found", 404)
        index = await indexes.get(run_id)
        meta = read_meta(folders.folder(run_id))
        status = meta.status if meta else None
        answer = _fields(derivation(index, status, utc_timestamp()))
        return conditional_json({"runId": run_id, "status": status or "unknown", **answer})

    @detail.get("/api/runs/<run_id>/tree")
    async def get_tree(run_id: str) -> Response:
        return await derive(run_id, RunIndex.call_tree)

    @detail.get("/api/runs/<run_id>/timeline")
    async def get_timeline(run_id: str) -> Response:
        return await derive(run_id, RunIndex.waterfall)

    return detail
