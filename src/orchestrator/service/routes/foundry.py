"""``GET /api/foundry``: the Foundry searches found in the workspace, newest first (the Foundry screen).

A search is a results folder holding ``foundry.json`` and ``summary.json`` (``docs/foundry.md``), at
``<workspace>/.results/<stamp>/`` or ``<workspace>/<suite>/.results/<stamp>/`` (the default places of
``orchestrator foundry SUITE_DIR``). The answer is ``{searches: [{path, …summary.json}]}``, ``path``
relative to the workspace, at most ``MAX_SEARCHES``; a folder whose summary does not decode is left out.
The folders are read in a worker thread; the answer is conditional JSON (ETag).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import trio
from quart import Blueprint, Response

from orchestrator.foundry.results import Summary
from orchestrator.service.core import Service
from orchestrator.service.routes.common import conditional_json

__all__ = ["MAX_SEARCHES", "find_searches", "foundry_blueprint"]

MAX_SEARCHES = 20


def find_searches(workspace: Path) -> list[dict[str, Any]]:
    """Every readable search under ``workspace``, newest ``summary.json`` first."""
    folders = [
        p.parent for p in (*workspace.glob(".results/*/foundry.json"), *workspace.glob("*/.results/*/foundry.json"))
    ]
    found: list[tuple[float, dict[str, Any]]] = []
    for folder in folders:
        path = folder / "summary.json"
        try:
            summary = msgspec.json.decode(path.read_bytes(), type=Summary)
            stamp = path.stat().st_mtime
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            continue
        view = msgspec.to_builtins(summary)
        found.append((stamp, {"path": folder.relative_to(workspace).as_posix(), **view}))
    found.sort(key=lambda item: item[0], reverse=True)
    return [view for _, view in found[:MAX_SEARCHES]]


def foundry_blueprint(service: Service) -> Blueprint:
    blueprint = Blueprint("foundry", __name__)

    @blueprint.get("/api/foundry")
    async def get_foundry() -> Response:
        searches = await trio.to_thread.run_sync(find_searches, service.workspace)
        return conditional_json({"searches": searches})

    return blueprint
