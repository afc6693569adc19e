"""Startup configuration of the workflow server, resolved CLI > environment > default.

``load_workflow_settings(env, cli)`` is pure: it reads only the two mappings (plus the filesystem to
see whether ``./workflows`` exists) and returns one frozen :class:`WorkflowSettings`. A value that
cannot work (an unknown transport, a malformed repo pin) raises
``WorkspaceConfigError`` naming the flag or variable it came from. Numeric tuning knobs never fail
startup: an unparseable value falls back to its default, and bounded ones are clamped.

``cli`` holds argparse-style destinations (``workflow_dir``, ``workspace``, ``repo``, ``install_dir``,
``transport``, ``port``, ``host``); a missing, ``None`` or blank entry counts as not given, and so does
a blank variable.

Default workflow directory: ``./workflows`` (relative to ``cwd``) when that folder exists, else the
corpus packaged with this project (``orchestrator.defaults``: the repository's top-level ``workflows/``
folder in a checkout or editable install, a copy inside the installed wheel).
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import msgspec

from orchestrator.defaults import packaged_path
from orchestrator.workflow.errors import ParameterError, WorkspaceConfigError
from orchestrator.workflow.repos import normalise_repo

__all__ = [
    "BUNDLED_WORKFLOW_DIR",
    "DEFAULT_BATCH_HEADROOM_FRACTION",
    "DEFAULT_BATCH_MAX_ACTIVITIES",
    "DEFAULT_BUNDLE_CHARS_PER_TOKEN",
    "DEFAULT_BUNDLE_HEADROOM_FRACTION",
    "DEFAULT_MIN_CHECKPOINT_RESPONSE_SECONDS",
    "DEFAULT_PORT",
    "RootMode",
    "Transport",
    "WorkflowSettings",
    "load_workflow_settings",
    "root_mode",
]

Transport = Literal["stdio", "http"]
RootMode = Literal["single", "pinned", "multi"]

BUNDLED_WORKFLOW_DIR = packaged_path("workflows")
DEFAULT_BUNDLE_HEADROOM_FRACTION = 0.8
DEFAULT_BUNDLE_CHARS_PER_TOKEN = 4.0
DEFAULT_BATCH_HEADROOM_FRACTION = 0.35
DEFAULT_BATCH_MAX_ACTIVITIES = 3
DEFAULT_MIN_CHECKPOINT_RESPONSE_SECONDS = 3.0
DEFAULT_PORT = 3000
DEFAULT_HOST = "127.0.0.1"


class WorkflowSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Every configuration knob, resolved. Paths are absolute; optional roots are ``None`` when not configured."""

    workflow_dir: Path
    schemas_dir: Path
    workspace: Path | None = None
    #: No flag or variable named a workspace, so the current directory is used (``orchestrator mcp`` says so).
    workspace_defaulted: bool = False
    engineering_dir: Path | None = None
    repo: str | None = None
    install_dir: Path
    planning_slug: str | None = None
    host_projects_root: Path | None = None
    host_worktree_root: Path | None = None
    key_dir: Path
    tmp_dir: Path
    bundle_headroom_fraction: float = DEFAULT_BUNDLE_HEADROOM_FRACTION
    bundle_chars_per_token: float = DEFAULT_BUNDLE_CHARS_PER_TOKEN
    batch_headroom_fraction: float = DEFAULT_BATCH_HEADROOM_FRACTION
    batch_max_activities: int = DEFAULT_BATCH_MAX_ACTIVITIES
    min_checkpoint_response_seconds: float = DEFAULT_MIN_CHECKPOINT_RESPONSE_SECONDS
    server_name: str = "workflow-server"
    server_version: str = "2.1.0"
    transport: Transport = "stdio"
    port: int = DEFAULT_PORT
    host: str = DEFAULT_HOST
    #: extra folders a ``working_directory`` may lie under (``WORKFLOW_SERVER_WORKING_ROOTS``), besides the
    #: projects roots (the workspace, ``$INSTALL/projects``, a multi root)
    working_roots: tuple[Path, ...] = ()


def _given(value: object) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _first(*candidates: tuple[str, str | None]) -> tuple[str, str] | None:
    """The first (source name, value) whose value is given."""
    for name, value in candidates:
        text = _given(value)
        if text is not None:
            return name, text
    return None


def _float(raw: str | None, default: float) -> float | None:
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _positive(raw: str | None, default: float) -> float:
    value = _float(raw, default)
    return value if value is not None and value > 0 else default


def _clamped(raw: str | None, default: float, low: float, high: float) -> float:
    value = _float(raw, default)
    return default if value is None else min(high, max(low, value))


def _path(text: str, cwd: Path) -> Path:
    path = Path(text).expanduser()
    return path if path.is_absolute() else cwd / path


def load_workflow_settings(
    env: Mapping[str, str],
    cli: Mapping[str, object] | None = None,
    *,
    cwd: Path | None = None,
    require_workspace: bool = True,
) -> WorkflowSettings:
    """Resolve the settings. Raises ``WorkspaceConfigError`` naming the offending flag or variable.

    ``require_workspace`` (default on, as at server startup) demands a workspace, a repo pin or a
    multi-root engineering dir: with none of them given, the current directory (``cwd``) is the workspace
    and ``workspace_defaulted`` is set, like every other ``orchestrator`` command. Tests of workspace-free
    tools may switch it off (the workspace then stays ``None``).
    """
    cli = cli or {}
    base = (cwd or Path.cwd()).resolve()
    home = Path(env["HOME"]) if _given(env.get("HOME")) else Path.home()

    def arg(name: str) -> str | None:
        return _given(cli.get(name))

    def var(name: str) -> str | None:
        return _given(env.get(name))

    chosen = _first(("--workflow-dir", arg("workflow_dir")), ("WORKFLOW_DIR", var("WORKFLOW_DIR")))
    if chosen is not None:
        workflow_dir = _path(chosen[1], base)
    elif (base / "workflows").is_dir():
        workflow_dir = base / "workflows"
    else:
        workflow_dir = BUNDLED_WORKFLOW_DIR

    workspace_src = _first(
        ("--workspace", arg("workspace")),
        ("WORKFLOW_WORKSPACE", var("WORKFLOW_WORKSPACE")),
        ("WORKTREE_ROOT", var("WORKTREE_ROOT")),
    )
    workspace = _path(workspace_src[1], base) if workspace_src else None
    engineering = var("WORKFLOW_SERVER_ENGINEERING_DIR")
    engineering_dir = _path(engineering, base) if engineering else None

    repo_src = _first(("--repo", arg("repo")), ("WORKFLOW_SERVER_REPO", var("WORKFLOW_SERVER_REPO")))
    repo: str | None = None
    if repo_src is not None:
        try:
            repo = normalise_repo(repo_src[1])
        except ParameterError as exc:
            raise WorkspaceConfigError(f"{repo_src[0]}: {exc.message}") from None

    install_src = _first(
        ("--install-dir", arg("install_dir")), ("WORKFLOW_SERVER_INSTALL_DIR", var("WORKFLOW_SERVER_INSTALL_DIR"))
    )
    if install_src is not None:
        install_dir = _path(install_src[1], base)
    elif var("XDG_DATA_HOME"):
        install_dir = _path(str(var("XDG_DATA_HOME")), base) / "workflow-server"
    else:
        install_dir = home / ".local" / "share" / "workflow-server"

    key_src = _first(
        ("WORKFLOW_SERVER_KEY_DIR", var("WORKFLOW_SERVER_KEY_DIR")),
        ("WORKFLOW_SERVER_STATE_DIR", var("WORKFLOW_SERVER_STATE_DIR")),
    )
    key_dir = _path(key_src[1], base) if key_src else home / ".workflow-server"

    transport_src = _first(("--transport", arg("transport")), ("TRANSPORT", var("TRANSPORT")))
    transport: Transport = "stdio"
    if transport_src is not None:
        if transport_src[1] not in ("stdio", "http"):
            raise WorkspaceConfigError(f"{transport_src[0]} is '{transport_src[1]}'; expected one of: stdio, http")
        transport = "http" if transport_src[1] == "http" else "stdio"

    port_src = _first(("--port", arg("port")), ("PORT", var("PORT")))
    port = DEFAULT_PORT
    if port_src is not None and port_src[1].isdigit() and 0 <= int(port_src[1]) < 65536:  # 0: any free port
        port = int(port_src[1])

    host_projects = _first(
        ("HOST_PROJECTS_ROOT", var("HOST_PROJECTS_ROOT")), ("HOST_PROJECTS_DIR", var("HOST_PROJECTS_DIR"))
    )
    host_worktree = _first(
        ("HOST_WORKTREE_ROOT", var("HOST_WORKTREE_ROOT")), ("HOST_WORKTREE_DIR", var("HOST_WORKTREE_DIR"))
    )
    min_seconds = _float(var("MIN_CHECKPOINT_RESPONSE_SECONDS"), DEFAULT_MIN_CHECKPOINT_RESPONSE_SECONDS)
    tmp = var("TMPDIR")

    settings = WorkflowSettings(
        workflow_dir=workflow_dir,
        schemas_dir=_path(var("SCHEMAS_DIR") or "schemas", base),
        workspace=workspace,
        engineering_dir=engineering_dir,
        repo=repo,
        install_dir=install_dir,
        planning_slug=var("PLANNING_SLUG"),
        host_projects_root=Path(host_projects[1]) if host_projects else None,
        host_worktree_root=Path(host_worktree[1]) if host_worktree else None,
        key_dir=key_dir,
        tmp_dir=_path(tmp, base) if tmp else Path(tempfile.gettempdir()),
        bundle_headroom_fraction=_positive(var("BUNDLE_HEADROOM_FRACTION"), DEFAULT_BUNDLE_HEADROOM_FRACTION),
        bundle_chars_per_token=_positive(var("BUNDLE_CHARS_PER_TOKEN"), DEFAULT_BUNDLE_CHARS_PER_TOKEN),
        batch_headroom_fraction=_clamped(var("BATCH_HEADROOM_FRACTION"), DEFAULT_BATCH_HEADROOM_FRACTION, 0.0, 1.0),
        batch_max_activities=int(_clamped(var("BATCH_MAX_ACTIVITIES"), DEFAULT_BATCH_MAX_ACTIVITIES, 1, 100)),
        min_checkpoint_response_seconds=(
            min_seconds if min_seconds is not None and min_seconds >= 0 else DEFAULT_MIN_CHECKPOINT_RESPONSE_SECONDS
        ),
        server_name=var("SERVER_NAME") or "workflow-server",
        server_version=var("SERVER_VERSION") or "2.1.0",
        transport=transport,
        port=port,
        host=arg("host") or var("HOST") or DEFAULT_HOST,
        working_roots=tuple(
            _path(item, base) for item in (var("WORKFLOW_SERVER_WORKING_ROOTS") or "").split(os.pathsep) if item
        ),
    )
    if require_workspace and workspace is None and repo is None and root_mode(settings) != "multi":
        settings = msgspec.structs.replace(settings, workspace=base, workspace_defaulted=True)
    return settings


def root_mode(settings: WorkflowSettings) -> RootMode:
    """Where sessions live (``session/roots.py`` derives the folders), from the settings:

    - ``multi``: ``WORKFLOW_SERVER_ENGINEERING_DIR`` is ``$INSTALL/projects`` or a folder named ``projects``
      and no repo is pinned: one server for several projects, each session placed by its ``repo``;
    - ``pinned``: a repo pin and no workspace;
    - ``single``: anything else (a workspace, or nothing — which startup refuses).
    """
    eng = settings.engineering_dir
    if (
        eng is not None
        and settings.repo is None
        and (eng == settings.install_dir / "projects" or eng.name == "projects")
    ):
        return "multi"
    if settings.workspace is None and settings.repo is not None:
        return "pinned"
    return "single"
