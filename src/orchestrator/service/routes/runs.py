"""Runs: ``POST /api/runs`` (start one now), ``GET /api/runs`` (the list), ``GET /api/runs/<id>`` and
``GET /api/run`` (a run's view, the latest one's), ``POST /api/runs/<id>/interrupt`` (operator requests),
``POST /api/runs/<id>/stop`` (end the active run now: ``cancelled``).

A Foundry run (``service/foundryruns.py``) is read-only: its view carries ``foundry`` (which search,
candidate, benchmark, repeat and run it is), and an interrupt or a stop of it is a ``409``
``run_not_active`` saying it is not one of this service's runs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import cast

import msgspec
from quart import Blueprint, Response, request

from orchestrator.engine.runfolder import RunIdCollision, read_meta
from orchestrator.engine.runner import Continuation, InvalidContinuation, continuation_briefing
from orchestrator.service.core import RunInProgress, RunNotActive, Service
from orchestrator.service.routes.common import (
    RunFolders,
    conditional_json,
    error_response,
    json_response,
    optional_choice,
    read_body,
)
from orchestrator.service.runindex import RunIndexes
from orchestrator.service.views import latest_run_id, list_runs, read_text, run_view
from orchestrator.vocabulary import EFFORT_TIERS, LOG_LEVELS, STOP_ORIGINS, StopOrigin

__all__ = ["runs_blueprint"]


def runs_blueprint(service: Service, indexes: RunIndexes, folders: RunFolders) -> Blueprint:
    runs = Blueprint("runs", __name__)

    @runs.post("/api/runs")
    async def post_run() -> Response:
        body = await read_body(service.redactor)
        if body is None or not isinstance(body.get("task"), str) or not body["task"].strip():
            return error_response("invalid_body", 400)
        ok_effort, effort = optional_choice(body, "effort", EFFORT_TIERS)
        ok_level, level = optional_choice(body, "logLevel", LOG_LEVELS)
        continues_from = body.get("continuesFrom")
        if not (ok_effort and ok_level) or (continues_from is not None and not isinstance(continues_from, str)):
            return error_response("invalid_body", 400)
        continuation: Continuation | None = None
        if continues_from is not None:
            try:  # the one check of ``continuesFrom`` for this submission: the run starts from its result
                continuation = continuation_briefing(service.workspace, continues_from)
            except InvalidContinuation:
                return error_response("invalid_body", 400)
        if not service.gate_open:
            return json_response({"ok": False, "error": "shutting_down"}, 503)
        try:
            run_id = await service.submit_run(body["task"], effort=effort, log_level=level, continuation=continuation)
        except RunInProgress:
            return error_response("run_in_progress", 409)
        except RunIdCollision:
            return error_response("run_id_collision", 409)
        return json_response({"runId": run_id}, 201)

    @runs.get("/api/runs")
    async def get_runs() -> Response:
        return json_response(list_runs(service.workspace))

    def read_only(run_id: str) -> Response | None:
        """The refusal of a run control for a Foundry run; ``None`` for the service's own runs."""
        if folders.foundry_run(run_id) is None:
            return None
        message = f"{run_id} is a run of a Foundry search, not one of this service's runs: it is read-only"
        return json_response({"ok": False, "error": "run_not_active", "runId": run_id, "message": message}, 409)

    async def view(run_id: str) -> Response:
        if not folders.known(run_id):
            return error_response("not_found", 404)
        run_dir = folders.folder(run_id)
        active = service.active
        answer = run_view(
            run_id,
            read_meta(run_dir),
            (await indexes.get(run_id)).aggregate,
            plan=read_text(run_dir / "plan.md"),
            interrupt_pending=active is not None and active.run_id == run_id and active.controls.pending,
            now=datetime.now(UTC),
        )
        foundry = folders.foundry_run(run_id)
        if foundry is not None:
            answer["foundry"] = msgspec.to_builtins(foundry)
        if request.args.get("recent") == "0":  # the live poll of a page that does not show the recent log
            answer["recentLog"] = []
        return conditional_json(answer)

    @runs.get("/api/runs/<run_id>")
    async def get_run(run_id: str) -> Response:
        return await view(run_id)

    @runs.get("/api/run")
    async def get_latest() -> Response:
        run_id = latest_run_id(service.workspace)
        if run_id is None:
            return error_response("no_run", 404)
        return await view(run_id)

    @runs.post("/api/runs/<run_id>/interrupt")
    async def post_interrupt(run_id: str) -> Response:
        body = await read_body(service.redactor)
        kind, message = (body or {}).get("kind"), (body or {}).get("message")
        if (
            body is None
            or kind not in ("inquiry", "plan_modification")
            or not isinstance(message, str)
            or not message.strip()
        ):
            return error_response("invalid_body", 400)
        refused = read_only(run_id)
        if refused is not None:
            return refused
        active = service.active
        if active is None or active.run_id != run_id:
            return error_response("run_not_active", 409)
        if kind == "inquiry":
            active.controls.inquire(message)
        else:  # applied now; with no role live yet, at the run's first safe point
            active.controls.modify_plan(message)
        return json_response({"ok": True}, 202)

    @runs.post("/api/runs/<run_id>/stop")
    async def post_stop(run_id: str) -> Response:
        """Body optional: ``{by: "api" | "mcp" | "ui"}`` (who stopped it, for the log; default ``api``).
        200 once the run has settled (``status`` ``cancelled``, or how it ended if it finished first); 202
        if it is still ending after the bound; 409 ``run_not_active`` naming the run and its status."""
        body = await read_body()
        if body is None and (await request.get_data(as_text=False)).strip():
            return error_response("invalid_body", 400)
        ok, by = optional_choice(body or {}, "by", STOP_ORIGINS)
        if not ok:
            return error_response("invalid_body", 400)
        if not folders.known(run_id):
            return error_response("not_found", 404)
        refused = read_only(run_id)
        if refused is not None:
            return refused
        try:
            status = await service.stop_run(run_id, cast(StopOrigin, by or "api"))
        except RunNotActive as exc:
            answer = {"ok": False, "error": "run_not_active", "runId": run_id, "status": exc.status}
            return json_response({**answer, "message": str(exc)}, 409)
        return json_response({"ok": True, "runId": run_id, "status": status}, 202 if status == "running" else 200)

    return runs
