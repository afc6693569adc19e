"""``GET /api/runs/<id>/toolresult``: tool results by type (``service/toolresults.py``), on demand.

- ``?turn=<index>`` (an ``llm_call``'s log index): every call that turn made with its result, each text
  bounded (the inspector refreshes a turn whose results were still pending with it);
- ``?event=<index>`` (a ``tool_call`` or ``tool_result`` index) → ``{result, diff}``: that call, and for a
  ``write_file`` the diff against what the path held before (``null`` otherwise); ``&full=1`` lifts the
  text bound to ``FULL_CHARS`` (a "show all").

Bad parameters are 400s naming the parameter; an index that names no such event is a 404.
"""

from __future__ import annotations

import re

import msgspec
from quart import Blueprint, Response, request

from orchestrator.service.routes.common import (
    RunFolders,
    conditional_json,
    error_response,
    invalid_parameter,
)
from orchestrator.service.runindex import RunIndexes
from orchestrator.service.toolresults import event_result, turn_results

__all__ = ["toolresults_blueprint"]

_INDEX = re.compile(r"[0-9]{1,12}")


def _index(name: str) -> int | Response | None:
    """The query parameter ``name`` as an event index; ``None`` when absent; a 400 when malformed."""
    raw = request.args.get(name)
    if raw is None:
        return None
    if not _INDEX.fullmatch(raw):
        return invalid_parameter(name, f"{name} must be a log event index (a whole number)")
    return int(raw)


def toolresults_blueprint(indexes: RunIndexes, folders: RunFolders) -> Blueprint:
    blueprint = Blueprint("toolresults", __name__)

    @blueprint.get("/api/runs/<run_id>/toolresult")
    async def get_tool_result(run_id: str) -> Response:
        turn, event = _index("turn"), _index("event")
        for value in (turn, event):
            if isinstance(value, Response):
                return value
        full = request.args.get("full")
        if full not in (None, "0", "1"):
            return invalid_parameter("full", "full must be 0 or 1")
        if (turn is None) == (event is None):
            return invalid_parameter("turn", "give exactly one of turn and event")
        if not folders.known(run_id):
            return error_response("not_found", 404)
        index = await indexes.get(run_id)
        if isinstance(turn, int):
            views = turn_results(index, index.aggregate, turn)
            if views is None:
                return error_response("not_found", 404)
            return conditional_json({"runId": run_id, "turn": turn, "results": msgspec.to_builtins(views)})
        assert isinstance(event, int)
        found = event_result(index, index.aggregate, event, full=full == "1")
        if found is None:
            return error_response("not_found", 404)
        view, diff = found
        return conditional_json(
            {"runId": run_id, "event": event, "result": msgspec.to_builtins(view), "diff": msgspec.to_builtins(diff)}
        )

    return blueprint
