"""The HTTP API, the live stream and the static UI: a Quart-Trio app over one ``Service``.

Error bodies are ``{"ok": false, "error": <code>}`` with the codes of the seed (``invalid_body``,
``not_found``, ``run_in_progress``, ``run_id_collision``, ``run_not_active``, ``status_forbidden``,
``no_run``). Every derivation lives in pure modules (``views``, ``flow``, ``queue``); handlers only
parse, call and encode.
"""

from __future__ import annotations

import re
import sys
import traceback
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import msgspec
from quart import Response, request
from quart_trio import QuartTrio
from werkzeug.exceptions import HTTPException

from orchestrator.engine.effort import EFFORT_TIERS
from orchestrator.engine.runfolder import RunIdCollision, read_meta, runs_root
from orchestrator.engine.runner import InvalidContinuation, continuation_briefing
from orchestrator.flow import scenario_details, scenario_frame, scenario_manifest
from orchestrator.projectsettings import ProjectSettings, read_project_settings, write_project_settings
from orchestrator.runlog.writer import utc_timestamp
from orchestrator.service import queue as q
from orchestrator.service.core import RunInProgress, Service
from orchestrator.service.perimeter import Perimeter, Policy
from orchestrator.service.runindex import RunIndexes
from orchestrator.service.runroutes import conditional_json, register_run_routes
from orchestrator.service.stream import StreamLimits, register_stream
from orchestrator.service.views import (
    event_detail,
    latest_run_id,
    list_runs,
    log_text,
    log_window,
    parse_window_params,
    read_text,
    run_view,
)

__all__ = ["create_app"]

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()
LOG_LEVELS = ("full", "standard")
#: A static asset's name: one plain file name (no path, no dot-file, no NUL or odd characters).
_STATIC_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}")


def _json(value: Any, status: int = 200) -> Response:
    return Response(_encoder.encode(value), status=status, content_type="application/json")


def _error(code: str, status: int) -> Response:
    return _json({"ok": False, "error": code}, status)


async def _body() -> dict[str, Any] | None:
    """The JSON object body, or ``None`` when it is not one (→ 400 invalid_body)."""
    try:
        value = _decoder.decode(await request.get_data(as_text=False) or b"null")
    except (msgspec.DecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _optional_str(body: dict[str, Any], key: str, allowed: tuple[str, ...]) -> tuple[bool, str | None]:
    value = body.get(key)
    if value is None:
        return True, None
    return (isinstance(value, str) and value in allowed), value if isinstance(value, str) else None


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


def _static(name: str) -> bytes:
    return resources.files("orchestrator.web").joinpath("static", name).read_bytes()


def create_app(service: Service, policy: Policy | None = None, limits: StreamLimits | None = None) -> QuartTrio:
    """Build the app for ``service`` (no module-level app, no globals). ``policy`` puts the perimeter
    (Host, Origin, token, JSON-only, security headers) in front of every route; ``None`` leaves it off
    (the benchmark's baseline and a few in-process tests)."""
    app = QuartTrio(__name__, static_folder=None)
    indexes = RunIndexes(runs_root(service.workspace))

    def now() -> datetime:
        return datetime.now(UTC)

    # --- pages and assets -------------------------------------------------------------------------

    @app.get("/")
    async def index() -> Response:
        page = _static("index.html").decode().replace("{{TITLE}}", _escape(service.title))
        return Response(page, content_type="text/html; charset=utf-8", headers={"cache-control": "no-store"})

    @app.get("/healthz")
    async def healthz() -> Response:
        # Liveness for container health checks: public (no token, no body, nothing about the service).
        return Response(b'{"ok":true}', content_type="application/json", headers={"cache-control": "no-store"})

    @app.get("/favicon.ico")
    async def favicon() -> Response:
        return Response("", status=204)

    @app.get("/static/<path:name>")
    async def static_asset(name: str) -> Response:
        if not _STATIC_NAME.fullmatch(name):
            return _error("not_found", 404)
        try:
            data = _static(name)
        except (FileNotFoundError, IsADirectoryError):
            return _error("not_found", 404)
        kind = {"js": "text/javascript", "css": "text/css", "html": "text/html", "svg": "image/svg+xml"}.get(
            name.rsplit(".", 1)[-1], "application/octet-stream"
        )
        return Response(data, content_type=kind, headers={"cache-control": "no-store"})

    # --- configuration and settings ---------------------------------------------------------------

    @app.get("/api/config")
    async def config() -> Response:
        settings = service.settings
        guild = settings.guild
        executor = msgspec.to_builtins(settings.deployment.executor)
        view = (
            {
                "model": {
                    "name": settings.deployment.model.name,
                    "contextWindow": settings.deployment.model.context_window,
                    # reserved for each answer: the prompt budget a view compares usage with is
                    # ``contextWindow - maxTokens`` (the engine's effective budget before learned ceilings)
                    "maxTokens": settings.deployment.model.generation.max_tokens,
                },
                "executor": executor,
                "entryRole": guild.entry_role,
                "roles": {
                    name: {
                        "tools": role.tools,
                        "label": role.label,
                        "description": role.description,
                        "workingLabel": role.working_label,
                    }
                    for name, role in guild.roles.items()
                },
                "tools": {
                    name: {
                        "humanLabel": tool.human_label,
                        "humanDescription": tool.human_description,
                        "humanCallLabel": tool.human_call_label,
                        "humanWorkingLabel": tool.human_working_label,
                    }
                    for name, tool in guild.tools.items()
                },
                **({"visualization": guild.visualization} if guild.visualization is not None else {}),
                # the deployment's default log level: the last link of the level chain the UI shows
                "logging": {"level": settings.deployment.logging.level if settings.deployment.logging else None},
                "build": service.build,
                # what the last model probe found (down, loading, a template that drops tools)
                "modelStatus": msgspec.to_builtins(settings.model_status) if settings.model_status else None,
            }
        )
        return _json(settings.redactor().redact_value(view))  # a secret echoed as, say, a model name

    @app.get("/api/settings")
    async def get_settings() -> Response:
        current = read_project_settings(service.workspace)
        return _json({"effort": current.effort, "logLevel": current.log_level})

    @app.put("/api/settings")
    async def put_settings() -> Response:
        body = await _body()
        if body is None or body.get("effort") not in EFFORT_TIERS:
            return _error("invalid_body", 400)
        ok, level = _optional_str(body, "logLevel", LOG_LEVELS)
        if not ok:
            return _error("invalid_body", 400)
        stored = ProjectSettings(effort=body["effort"], log_level=level)  # type: ignore[arg-type]
        write_project_settings(service.workspace, stored)
        return _json({"effort": stored.effort, "logLevel": stored.log_level})

    # --- runs -------------------------------------------------------------------------------------

    @app.post("/api/runs")
    async def post_run() -> Response:
        body = await _body()
        if body is None or not isinstance(body.get("task"), str) or not body["task"].strip():
            return _error("invalid_body", 400)
        ok_effort, effort = _optional_str(body, "effort", EFFORT_TIERS)
        ok_level, level = _optional_str(body, "logLevel", LOG_LEVELS)
        continues_from = body.get("continuesFrom")
        if not (ok_effort and ok_level) or (continues_from is not None and not isinstance(continues_from, str)):
            return _error("invalid_body", 400)
        if continues_from is not None:
            try:
                continuation_briefing(service.workspace, continues_from)
            except InvalidContinuation:
                return _error("invalid_body", 400)
        if not service.gate_open:
            return _json({"ok": False, "error": "shutting_down"}, 503)
        try:
            run_id = await service.submit_run(
                body["task"], effort=effort, log_level=level, continues_from=continues_from
            )
        except RunInProgress:
            return _error("run_in_progress", 409)
        except RunIdCollision:
            return _error("run_id_collision", 409)
        return _json({"runId": run_id}, 201)

    @app.get("/api/runs")
    async def get_runs() -> Response:
        return _json(list_runs(service.workspace))

    def _known(run_id: str) -> bool:
        run_dir = runs_root(service.workspace) / run_id
        return (
            bool(run_id)
            and "/" not in run_id
            and ((run_dir / "meta.json").exists() or (run_dir / "log.jsonl").exists())
        )

    async def _view(run_id: str) -> Response:
        if not _known(run_id):
            return _error("not_found", 404)
        run_dir = runs_root(service.workspace) / run_id
        active = service.active
        view = run_view(
            run_id,
            read_meta(run_dir),
            (await indexes.get(run_id)).aggregate,
            plan=read_text(run_dir / "plan.md"),
            interrupt_pending=active is not None and active.run_id == run_id and active.interrupt_pending,
            now=now(),
        )
        return conditional_json(view)

    @app.get("/api/runs/<run_id>")
    async def get_run(run_id: str) -> Response:
        return await _view(run_id)

    @app.get("/api/run")
    async def get_latest() -> Response:
        run_id = latest_run_id(service.workspace)
        if run_id is None:
            return _error("no_run", 404)
        return await _view(run_id)

    @app.get("/api/runs/<run_id>/log")
    async def get_log(run_id: str) -> Response:
        if not _known(run_id):
            return _error("not_found", 404)
        index = await indexes.get(run_id)
        params = parse_window_params(request.args)
        if params.detail is not None:
            detail = event_detail(index, params.detail, agg=index.aggregate)
            return _json(detail) if detail is not None else _error("not_found", 404)
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

    async def _flow(run_id: str) -> Response:
        if not _known(run_id):
            return _error("not_found", 404)
        index = await indexes.get(run_id)
        operation = request.args.get("operation")
        if operation is not None:
            try:
                return _json({"operationId": operation, "details": index.details(operation)})
            except KeyError:
                return _error("not_found", 404)
        meta = read_meta(runs_root(service.workspace) / run_id)
        window = flow_window(request.args.get("window"))
        return conditional_json(index.model(meta.status if meta else None, utc_timestamp(), window=window))

    @app.get("/api/runs/<run_id>/flow")
    async def get_flow(run_id: str) -> Response:
        return await _flow(run_id)

    @app.get("/api/run/flow")
    async def get_latest_flow() -> Response:
        run_id = latest_run_id(service.workspace)
        return await _flow(run_id) if run_id is not None else _error("no_run", 404)

    register_run_routes(app, indexes, _known, runs_root(service.workspace))

    @app.post("/api/runs/<run_id>/interrupt")
    async def post_interrupt(run_id: str) -> Response:
        body = await _body()
        kind, message = (body or {}).get("kind"), (body or {}).get("message")
        if (
            body is None
            or kind not in ("inquiry", "plan_modification")
            or not isinstance(message, str)
            or not message.strip()
        ):
            return _error("invalid_body", 400)
        active = service.active
        if active is None or active.run_id != run_id:
            return _error("run_not_active", 409)
        if kind == "inquiry":
            active.interrupts.post_inquiry(message)
        elif active.run is None or active.run.modify_plan(message) is None:
            active.interrupts.post_early_plan_modification(message)  # no role live yet: at its first safe point
        return _json({"ok": True}, 202)

    # --- human questions ---------------------------------------------------------------------------

    @app.get("/api/questions")
    async def get_questions() -> Response:
        return _json(service.questions.list())

    @app.post("/api/answer")
    async def post_answer() -> Response:
        body = await _body()
        if body is None or not isinstance(body.get("id"), str) or not isinstance(body.get("answer"), str):
            return _error("invalid_body", 400)
        if not service.questions.answer(body["id"], body["answer"]):
            return _error("not_found", 404)
        return _json({"ok": True})

    # --- the queue ---------------------------------------------------------------------------------

    async def _transition(event: Any, status: int = 200) -> Response:
        try:
            effects = await service.queue.apply(lambda items: q.transition(items, event, now()))
        except q.QueueError as exc:
            return _error(exc.code, {"not_found": 404, "status_forbidden": 409}.get(exc.code, 400))
        if effects.tick:
            await _tick()
        item = effects.item
        return _json(msgspec.to_builtins(item) if item is not None else {"ok": True}, status)

    async def _tick() -> None:
        try:
            await service.tick()
        except RunIdCollision:
            pass  # the item went back to waiting; a later tick retries

    @app.get("/api/queue")
    async def get_queue() -> Response:
        return _json(msgspec.to_builtins(service.queue.load()))

    @app.post("/api/queue")
    async def post_queue() -> Response:
        body = await _body()
        if body is None or not isinstance(body.get("task"), str) or not body["task"].strip():
            return _error("invalid_body", 400)
        ok, effort = _optional_str(body, "effort", EFFORT_TIERS)
        if not ok:
            return _error("invalid_body", 400)
        return await _transition(q.Enqueue(task=body["task"], effort=effort), 201)

    @app.patch("/api/queue/<item_id>")
    async def patch_queue(item_id: str) -> Response:
        body = await _body()
        if body is None:
            return _error("invalid_body", 400)
        try:
            position = q.parse_position(body["position"]) if "position" in body else None
        except q.QueueError:
            return _error("invalid_body", 400)
        task, effort = body.get("task"), body.get("effort")
        if (task is not None and (not isinstance(task, str) or not task.strip())) or (
            effort is not None and effort not in EFFORT_TIERS
        ):
            return _error("invalid_body", 400)
        return await _transition(q.Edit(item_id, task=task, effort=effort, position=position))

    @app.delete("/api/queue/<item_id>")
    async def delete_queue(item_id: str) -> Response:
        return await _transition(q.Cancel(item_id))

    @app.post("/api/queue/<item_id>/answer")
    async def answer_queue(item_id: str) -> Response:
        body = await _body()
        if body is None or not isinstance(body.get("answer"), str):
            return _error("invalid_body", 400)
        return await _transition(q.Answer(item_id, body["answer"]))

    @app.post("/api/queue/<item_id>/requeue")
    async def requeue(item_id: str) -> Response:
        return await _transition(q.Requeue(item_id))

    # --- demo harness ------------------------------------------------------------------------------

    @app.get("/api/demo/scenarios")
    async def demo_scenarios() -> Response:
        return _json(msgspec.to_builtins(scenario_manifest()))

    @app.get("/api/demo/flow/<scenario>/<int:frame>")
    async def demo_frame(scenario: str, frame: int) -> Response:
        operation = request.args.get("operation")
        try:
            if operation is not None:
                return _json({"operationId": operation, "details": scenario_details(scenario, frame, operation)})
            return _json(scenario_frame(scenario, frame))
        except (KeyError, IndexError):
            return _error("not_found", 404)

    register_stream(app, service, limits or StreamLimits())

    # --- fallbacks ----------------------------------------------------------------------------------

    @app.route("/api/<path:rest>", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    async def unknown_api(rest: str) -> Response:
        return _error("not_found", 404)

    @app.errorhandler(404)
    async def not_found(_: Exception) -> Response:
        return _error("not_found", 404)

    @app.errorhandler(405)
    async def not_allowed(_: Exception) -> Response:
        return _error("not_found", 404)

    @app.errorhandler(HTTPException)
    async def http_error(exc: HTTPException) -> Response:
        status = exc.code if isinstance(exc.code, int) and 400 <= exc.code < 500 else 400
        return _error({413: "too_large", 415: "unsupported_media_type"}.get(status, "invalid_request"), status)

    @app.errorhandler(Exception)
    async def internal_error(exc: Exception) -> Response:
        if isinstance(exc, HTTPException) and exc.code is not None and exc.code < 500:
            return await http_error(exc)
        where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
        at = f" at {where[0].filename}:{where[0].lineno}" if where else ""
        print(
            f"orchestrator: internal error on {request.method} {request.path!r}: {type(exc).__name__}{at}",
            file=sys.stderr,
        )
        return _error("internal_error", 500)

    if policy is not None:
        app.asgi_app = Perimeter(app.asgi_app, policy)  # type: ignore[method-assign]
    return app


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
