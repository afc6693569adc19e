"""Project-wide run defaults in ``<workspace>/.orchestration/settings.json`` and the resolution chains.

Effort: per-run choice → project default → ``standard``. Logging level: per-run choice → project
default → the deployment's ``logging.level`` → ``full``. A missing or malformed file reads as absent
(a torn read must never block a submission).
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from orchestrator.fsutil import atomic_write
from orchestrator.schema import Base
from orchestrator.vocabulary import DEFAULT_EFFORT, DEFAULT_LOG_LEVEL, Effort, LogLevel

__all__ = ["ProjectSettings", "read_project_settings", "resolve_effort", "resolve_log_level", "write_project_settings"]


class ProjectSettings(Base):
    effort: Effort | None = None
    log_level: LogLevel | None = None


_decoder = msgspec.json.Decoder(ProjectSettings)


def settings_path(workspace: Path) -> Path:
    return workspace / ".orchestration" / "settings.json"


def read_project_settings(workspace: Path) -> ProjectSettings:
    try:
        return _decoder.decode(settings_path(workspace).read_bytes())
    except (OSError, msgspec.DecodeError):
        return ProjectSettings()


def write_project_settings(workspace: Path, settings: ProjectSettings) -> None:
    path = settings_path(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, msgspec.json.encode(settings))


def resolve_effort(requested: str | None, project: ProjectSettings) -> str:
    return requested or project.effort or DEFAULT_EFFORT


def resolve_log_level(requested: str | None, project: ProjectSettings, deployment_default: str | None) -> str:
    return requested or project.log_level or deployment_default or DEFAULT_LOG_LEVEL
