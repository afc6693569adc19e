"""``GET /api/runs/<id>/search``: search a run, list its landmarks, locate an operation's event.

- ``?q=<query>[&limit=N][&after=<logIndex>]`` → ``{runId, query, hits, nextAfter}`` (``flow/search.py``:
  hits in log order, at most ``limit`` — default 200, at most 1000 — after the ``after`` cursor);
- ``?landmarks=1`` → ``{runId, landmarks}``: every problem, question, interrupt and loop check;
- ``?operation=op-N`` → ``{runId, operationId, logIndex, instanceId, role, tool, kind}``.

Exactly one of ``q``, ``landmarks`` and ``operation``. A bad parameter is a 400
``{"ok": false, "error": "invalid_parameter", "parameter": <name>, "message": …}``; every answer is
conditional JSON. The search index is built on a run's first search (one read of its log, in a worker
thread) and kept current by the run index from then on.
"""

from __future__ import annotations

from typing import Any

import msgspec
from quart import Blueprint, Response, request

from orchestrator.flow.search import DEFAULT_LIMIT, MAX_LIMIT, QueryError, landmarks, locate, parse_query, search
from orchestrator.service.routes.common import (
    RunFolders,
    conditional_json,
    error_response,
    invalid_parameter,
)
from orchestrator.service.runindex import RunIndexes

__all__ = ["MAX_Q_CHARS", "search_blueprint"]

#: The raw ``q`` parameter's bound (the query text itself is bounded by ``flow.search.MAX_QUERY``).
MAX_Q_CHARS = 400


def _integer(value: str | None, low: int, high: int) -> int | None:
    if value is None or not value.isascii() or not value.lstrip("-").isdigit() or len(value) > 12:
        return None
    number = int(value)
    return number if low <= number <= high else None


def _fields(struct: msgspec.Struct) -> dict[str, Any]:
    built = msgspec.to_builtins(struct)
    return built if isinstance(built, dict) else {}


def search_blueprint(indexes: RunIndexes, folders: RunFolders) -> Blueprint:
    blueprint = Blueprint("search", __name__)

    @blueprint.get("/api/runs/<run_id>/search")
    async def get_search(run_id: str) -> Response:
        args = request.args
        asked = [name for name in ("q", "landmarks", "operation") if name in args]
        if len(asked) != 1:
            return invalid_parameter("q", "give exactly one of q, landmarks and operation")
        unknown = sorted(set(args) - {"q", "limit", "after", "landmarks", "operation"})
        if unknown:
            return invalid_parameter(unknown[0], "unknown parameter")
        limit, after = DEFAULT_LIMIT, -1
        if "limit" in args:
            parsed = _integer(args.get("limit"), 1, MAX_LIMIT)
            if parsed is None:
                return invalid_parameter("limit", f"an integer from 1 to {MAX_LIMIT}")
            limit = parsed
        if "after" in args:
            parsed = _integer(args.get("after"), -1, 1 << 40)
            if parsed is None:
                return invalid_parameter("after", "a log index (an integer ≥ -1)")
            after = parsed
        if asked == ["landmarks"] and args.get("landmarks") != "1":
            return invalid_parameter("landmarks", "must be 1")
        query = None
        if asked == ["q"]:
            raw = args.get("q", "")
            if len(raw) > MAX_Q_CHARS:
                return invalid_parameter("q", f"at most {MAX_Q_CHARS} characters")
            try:
                query = parse_query(raw)
            except QueryError as error:
                return invalid_parameter("q", str(error))
        if not folders.known(run_id):
            return error_response("not_found", 404)
        index = await indexes.get(run_id, search=True)
        state = index.search_state()
        if query is not None:
            return conditional_json({"runId": run_id, **_fields(search(state, query, limit=limit, after=after))})
        if asked == ["landmarks"]:
            return conditional_json({"runId": run_id, "landmarks": msgspec.to_builtins(landmarks(state))})
        try:
            located = locate(state, args.get("operation", ""))
        except KeyError:
            return error_response("not_found", 404)
        return conditional_json({"runId": run_id, **_fields(located)})

    return blueprint
