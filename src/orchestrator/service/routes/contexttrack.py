"""``GET /api/runs/<id>/context``: per role instance, prompt tokens over time against the effective context
budget, compactions, pressure points and rejections marked (``flow/contexttrack.py``).

``?samples=N`` (4–1000, default 200) bounds each instance's samples; anything else is a ``400``
``{"ok": false, "error": "invalid_parameter", "parameter": "samples", "message": …}``. The pressure
threshold, and the static part of the budget (``contextWindow − maxTokens``) where the log does not tell
it, come from the served settings; an instance whose ``context_pressure`` logged the engine's own
``effectiveBudget`` uses that. Conditional JSON (``ETag`` → ``304``), like the other run derivations.
"""

from __future__ import annotations

from typing import Any

import msgspec
from quart import Blueprint, Response, request

from orchestrator.engine.runfolder import read_meta
from orchestrator.flow.contexttrack import DEFAULT_SAMPLES, MIN_SAMPLES, context_tracks
from orchestrator.service.core import Service
from orchestrator.service.routes.common import (
    RunFolders,
    conditional_json,
    error_response,
    invalid_parameter,
)
from orchestrator.service.runindex import RunIndexes

__all__ = ["MAX_SAMPLES", "context_blueprint", "samples_param"]

MAX_SAMPLES = 1000


def samples_param(value: str | None) -> int | None:
    """The ``samples`` query value: absent → the default; 4…``MAX_SAMPLES`` → itself; else ``None``."""
    if value is None:
        return DEFAULT_SAMPLES
    if value.isascii() and value.isdigit() and len(value) <= 4 and MIN_SAMPLES <= int(value) <= MAX_SAMPLES:
        return int(value)
    return None


def context_blueprint(service: Service, indexes: RunIndexes, folders: RunFolders) -> Blueprint:
    routes = Blueprint("contexttrack", __name__)

    @routes.get("/api/runs/<run_id>/context")
    async def get_context(run_id: str) -> Response:
        if not folders.known(run_id):
            return error_response("not_found", 404)
        limit = samples_param(request.args.get("samples"))
        if limit is None:
            return invalid_parameter("samples", f"samples must be an integer from {MIN_SAMPLES} to {MAX_SAMPLES}")
        index = await indexes.get(run_id)
        meta = read_meta(folders.folder(run_id))
        deployment = service.settings.deployment
        window = deployment.model.context_window
        static = window - deployment.model.generation.max_tokens if window else None
        answer = context_tracks(
            index.context,
            static_budget=static,
            threshold=deployment.executor.context_pressure_threshold,
            limit=limit,
        )
        status = meta.status if meta else "unknown"
        return conditional_json({"runId": run_id, "status": status, **_fields(answer)})

    return routes


def _fields(struct: msgspec.Struct) -> dict[str, Any]:
    built = msgspec.to_builtins(struct)
    return built if isinstance(built, dict) else {}
