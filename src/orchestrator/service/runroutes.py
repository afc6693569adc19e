"""Whole-run answers: ``GET /api/runs/<id>/tree`` and ``/timeline``, and the conditional JSON reply
(``ETag`` / ``If-None-Match`` → ``304``) the run view, flow and log answers share.

Registered on the app by ``create_app``, behind the same perimeter as every other route.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from quart import Response, request
from quart_trio import QuartTrio

from orchestrator.engine.runfolder import read_meta
from orchestrator.runlog.writer import utc_timestamp
from orchestrator.service.etag import etag_of, matches
from orchestrator.service.runindex import RunIndex, RunIndexes

__all__ = ["conditional_json", "register_run_routes"]

_encoder = msgspec.json.Encoder()


def conditional_json(value: Any) -> Response:
    """``value`` as JSON with its ETag — or an empty ``304`` when the request already holds that tag."""
    body = _encoder.encode(value)
    tag = etag_of(body)
    headers = {"etag": tag, "cache-control": "no-cache"}
    if matches(request.headers.get("if-none-match"), tag):
        return Response(b"", status=304, headers=headers)
    return Response(body, status=200, content_type="application/json", headers=headers)


def register_run_routes(app: QuartTrio, indexes: RunIndexes, known: Callable[[str], bool], runs_dir: Path) -> None:
    """Add the tree and timeline routes; ``known(run_id)`` is the app's own run-id check, ``runs_dir``
    the workspace's run folders."""

    async def _derive(run_id: str, derive: Callable[[RunIndex, str | None, str], msgspec.Struct]) -> Response:
        if not known(run_id):
            return Response(b'{"ok":false,"error":"not_found"}', status=404, content_type="application/json")
        index = await indexes.get(run_id)
        meta = read_meta(runs_dir / run_id)
        status = meta.status if meta else None
        answer = _fields(derive(index, status, utc_timestamp()))
        return conditional_json({"runId": run_id, "status": status or "unknown", **answer})

    @app.get("/api/runs/<run_id>/tree")
    async def get_tree(run_id: str) -> Response:
        return await _derive(run_id, RunIndex.call_tree)

    @app.get("/api/runs/<run_id>/timeline")
    async def get_timeline(run_id: str) -> Response:
        return await _derive(run_id, RunIndex.waterfall)


def _fields(struct: msgspec.Struct) -> dict[str, Any]:
    built = msgspec.to_builtins(struct)
    return built if isinstance(built, dict) else {}
