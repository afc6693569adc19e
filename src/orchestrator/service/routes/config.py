"""``GET /api/config`` (the Guild and deployment as the UI shows them) and ``GET/PUT /api/settings``
(the project's effort and log level)."""

from __future__ import annotations

from typing import Any

import msgspec
from quart import Blueprint, Response

from orchestrator.config import Settings
from orchestrator.engine.reconcile import ResumeNotice
from orchestrator.projectsettings import ProjectSettings, read_project_settings, write_project_settings
from orchestrator.service.core import Service
from orchestrator.service.routes.common import error_response, json_response, optional_choice, read_body
from orchestrator.vocabulary import EFFORT_TIERS, LOG_LEVELS

__all__ = ["config_blueprint", "config_view", "resumed_view"]


def config_view(settings: Settings, build: dict[str, str | None] | None) -> dict[str, Any]:
    """The ``GET /api/config`` answer before redaction."""
    guild = settings.guild
    return {
        "model": {
            "name": settings.deployment.model.name,
            "contextWindow": settings.deployment.model.context_window,
            # reserved for each answer: the prompt budget a view compares usage with is
            # ``contextWindow - maxTokens`` (the engine's effective budget before learned ceilings)
            "maxTokens": settings.deployment.model.generation.max_tokens,
        },
        "executor": msgspec.to_builtins(settings.deployment.executor),
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
        "build": build,
        # what the last model probe found (down, loading, a template that drops tools)
        "modelStatus": msgspec.to_builtins(settings.model_status) if settings.model_status else None,
    }


def resumed_view(notice: ResumeNotice) -> dict[str, Any]:
    """The run this start resumed from its checkpoint, as the page's notice shows it."""
    return {
        "runId": notice.run_id,
        "interruptedAt": notice.interrupted_at,
        "question": notice.question,
        "message": notice.message,
    }


def config_blueprint(service: Service) -> Blueprint:
    config = Blueprint("config", __name__)

    @config.get("/api/config")
    async def get_config() -> Response:
        settings = service.settings  # read per request: a model re-probe replaces it
        view = config_view(settings, service.build)
        view["trust"] = msgspec.to_builtins(service.trust) if service.trust is not None else None
        view["resumed"] = resumed_view(service.resumed) if service.resumed is not None else None
        return json_response(settings.redactor().redact_value(view))  # a secret echoed as, say, a model name

    @config.get("/api/settings")
    async def get_settings() -> Response:
        current = read_project_settings(service.workspace)
        return json_response({"effort": current.effort, "logLevel": current.log_level})

    @config.put("/api/settings")
    async def put_settings() -> Response:
        body = await read_body()
        if body is None or body.get("effort") not in EFFORT_TIERS:
            return error_response("invalid_body", 400)
        ok, level = optional_choice(body, "logLevel", LOG_LEVELS)
        if not ok:
            return error_response("invalid_body", 400)
        stored = ProjectSettings(effort=body["effort"], log_level=level)  # type: ignore[arg-type]
        write_project_settings(service.workspace, stored)
        return json_response({"effort": stored.effort, "logLevel": stored.log_level})

    return config
