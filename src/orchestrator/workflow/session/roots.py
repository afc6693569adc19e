"""Where sessions live: planning roots, slugs, paths, for the root mode the settings select.

Modes (``serverconfig.root_mode``, which startup validation also needs):

- ``multi``: each session's root is ``<multi>/<repo-basename>/.engineering`` (repo needed).
- ``pinned``: the root is ``$INSTALL/projects/<repo-basename>/.engineering``.
- ``single``: the root is the workspace (or ``WORKFLOW_SERVER_ENGINEERING_DIR``); a session's ``repo``
  is metadata only.

The planning directory under the root is ``.engineering/artifacts/planning`` in single mode without
an engineering dir, else ``artifacts/planning``; ``PLANNING_SLUG`` replaces it. Everything here is
pure apart from the existence checks of ``next_free_slug``/``search_roots``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path, PurePath

from orchestrator.workflow.errors import ParameterError, SessionStoreError
from orchestrator.workflow.repos import repo_basename
from orchestrator.workflow.serverconfig import WorkflowSettings, root_mode
from orchestrator.workflow.session.fsio import make_private_dirs

__all__ = [
    "ENGINEERING_PLANNING_DIR",
    "SINGLE_PLANNING_DIR",
    "check_new_planning_folder",
    "check_working_directory",
    "dated_slug",
    "ensure_planning_folder",
    "is_within",
    "next_free_slug",
    "planning_root",
    "project_planning_root",
    "projects_roots",
    "search_roots",
    "to_host_path",
    "to_server_path",
    "validate_slug",
    "working_roots",
    "writable_roots",
]

SINGLE_PLANNING_DIR = ".engineering/artifacts/planning"
ENGINEERING_PLANNING_DIR = "artifacts/planning"
SESSION_FILE = "session.json"

# ------------------------------------------------------------------------------------------ roots


def _planning_dir(settings: WorkflowSettings, default: str) -> str:
    return settings.planning_slug or default


def planning_root(settings: WorkflowSettings, repo: str | None = None) -> Path:
    """The planning root new sessions go under.

    In multi mode ``repo`` picks the checkout and is required (``SessionStoreError('WORKSPACE_INVALID')``
    without it); elsewhere it is ignored. A single-mode server with no workspace also fails that way.
    """
    mode = root_mode(settings)
    if mode == "multi":
        assert settings.engineering_dir is not None
        if not repo:
            raise SessionStoreError(
                "WORKSPACE_INVALID",
                f"this server serves several projects under {settings.engineering_dir}; pass repo (owner/repo) "
                "so the session can be placed in one of them",
            )
        base = settings.engineering_dir / repo_basename(repo) / ".engineering"
        return base / _planning_dir(settings, ENGINEERING_PLANNING_DIR)
    if mode == "pinned":
        assert settings.repo is not None
        base = (
            settings.engineering_dir
            or settings.install_dir / "projects" / repo_basename(settings.repo) / ".engineering"
        )
        return base / _planning_dir(settings, ENGINEERING_PLANNING_DIR)
    if settings.engineering_dir is not None:
        return settings.engineering_dir / _planning_dir(settings, ENGINEERING_PLANNING_DIR)
    if settings.workspace is None:
        raise SessionStoreError(
            "WORKSPACE_INVALID", "no workspace is configured (set --workspace or WORKFLOW_WORKSPACE)"
        )
    return settings.workspace / _planning_dir(settings, SINGLE_PLANNING_DIR)


def project_planning_root(settings: WorkflowSettings, project_dir: Path) -> Path:
    """``<project>/.engineering/artifacts/planning`` (or ``<project>/<PLANNING_SLUG>``) for a checkout's project."""
    return project_dir / _planning_dir(settings, SINGLE_PLANNING_DIR)


def projects_roots(settings: WorkflowSettings) -> list[Path]:
    """Folders whose top-level children are projects: the multi root, ``$INSTALL/projects``, the workspace."""
    roots: list[Path] = []
    if root_mode(settings) == "multi" and settings.engineering_dir is not None:
        roots.append(settings.engineering_dir)
    roots.append(settings.install_dir / "projects")
    if settings.workspace is not None:
        roots.append(settings.workspace)
    return _dedupe(roots)


def working_roots(settings: WorkflowSettings) -> list[Path]:
    """Folders a ``working_directory`` must lie under: the projects roots plus ``WORKFLOW_SERVER_WORKING_ROOTS``."""
    return _dedupe([*projects_roots(settings), *settings.working_roots])


def is_within(path: str | Path, roots: Sequence[Path]) -> bool:
    """Whether the real path of ``path`` (symlinks resolved; it need not exist) is one of ``roots`` or below."""
    real = os.path.realpath(path)
    for root in roots:
        base = os.path.realpath(root)
        if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
            return True
    return False


def check_working_directory(path: str, settings: WorkflowSettings) -> None:
    """Refuse a ``working_directory`` outside every working root, with one message whether or not it exists."""
    roots = working_roots(settings)
    if not is_within(path, roots):
        shown = ", ".join(str(root) for root in roots)
        raise SessionStoreError(
            "PATH_OUTSIDE_ROOT",
            f"working_directory {path} is not under a configured root ({shown}); put the checkout under one of "
            "them or add its parent to WORKFLOW_SERVER_WORKING_ROOTS",
        )


def writable_roots(settings: WorkflowSettings, project_dir: Path | None = None) -> list[Path]:
    """Where a planning root may resolve to: the working roots, the engineering directory, and the project
    a ``working_directory`` start derived (its main checkout may sit outside every root)."""
    extra = [path for path in (settings.engineering_dir, project_dir) if path is not None]
    return _dedupe([*working_roots(settings), *extra])


def ensure_planning_folder(folder: Path, root: Path, allowed: Sequence[Path]) -> None:
    """Create a new planning folder (0700) and re-check it by its real path.

    Before anything is created, ``root`` must resolve inside one of ``allowed`` (``writable_roots``): a
    checkout's ``.engineering`` that is a symlink to elsewhere (git keeps symlinks) would otherwise have
    session files written wherever it points. Then a folder that resolves anywhere but directly under
    ``root`` (a symlink planted there, a parent swapped meanwhile) is refused and, if this call created it
    and it is still empty, removed. Both refusals are ``PLANNING_FOLDER_OUTSIDE_ROOT``."""
    if not is_within(root, allowed):
        shown = ", ".join(str(path) for path in allowed)
        raise SessionStoreError(
            "PLANNING_FOLDER_OUTSIDE_ROOT",
            f"planning root {root} resolves to {os.path.realpath(root)}, outside every root this server writes "
            f"to ({shown}); a symbolic link on the way (.engineering?) leads elsewhere; nothing was written",
        )
    existed = os.path.lexists(folder)
    make_private_dirs(folder)
    if os.path.dirname(os.path.realpath(folder)) != os.path.realpath(root):
        if not existed:
            try:
                os.rmdir(folder)
            except OSError:
                pass
        raise SessionStoreError(
            "PLANNING_FOLDER_OUTSIDE_ROOT",
            f"planning folder {folder} resolves outside its planning root {root}; nothing was written",
        )


def _dedupe(paths: list[Path]) -> list[Path]:
    seen: set[str] = set()
    out: list[Path] = []
    for path in paths:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            out.append(path)
    return out


def search_roots(settings: WorkflowSettings) -> list[Path]:
    """Every existing folder a session lookup scans (recursively), deduplicated by real path.

    The configured planning root (single/pinned), each ``<multi>/*/.engineering`` plus the legacy
    ``<multi>/<owner>/<repo>/.engineering`` (multi), and each ``<projects root>/*/.engineering`` where
    sessions opened from a ``working_directory`` live.
    """
    found: list[Path] = []
    mode = root_mode(settings)
    if mode != "multi":
        try:
            found.append(planning_root(settings))
        except SessionStoreError:
            pass
    for root in projects_roots(settings):
        found.extend(sorted(root.glob("*/.engineering")))
        if mode == "multi" and root == settings.engineering_dir:
            found.extend(sorted(root.glob("*/*/.engineering")))
    return [path for path in _dedupe(found) if path.is_dir()]


# ------------------------------------------------------------------------------------------ slugs


def validate_slug(slug: str) -> str:
    """``slug`` if it is one usable path segment, else ``SessionStoreError('INVALID_INDEX')`` naming it."""
    bad = not slug or slug in (".", "..") or any(ch in slug for ch in "/\\\0") or slug != slug.strip()
    if bad:
        raise SessionStoreError(
            "INVALID_INDEX",
            f"planning slug {slug!r} must be a single folder name (no '/', '\\', '.' or '..')",
        )
    return slug


def dated_slug(workflow_id: str, now: float | None = None) -> str:
    """``YYYY-MM-DD-<workflow_id>`` for the UTC date of ``now`` (unix seconds, default the wall clock)."""
    day = datetime.fromtimestamp(time.time() if now is None else now, UTC).strftime("%Y-%m-%d")
    return validate_slug(f"{day}-{workflow_id}")


def next_free_slug(root: Path, base: str) -> str:
    """``base`` if ``root/base`` holds no session, else the first free ``base-2``, ``base-3``, …"""
    validate_slug(base)
    candidate, n = base, 1
    while (root / candidate / SESSION_FILE).exists():
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def check_new_planning_folder(folder: str | Path, root: Path) -> str:
    """The slug of a *new* planning folder, which must sit directly under ``root``.

    Raises ``ParameterError`` for a relative path and ``SessionStoreError('PLANNING_FOLDER_OUTSIDE_ROOT')``
    naming ``root`` for a folder anywhere else.
    """
    path = Path(folder)
    if not path.is_absolute():
        raise ParameterError(f"planning_folder '{folder}' must be an absolute path")
    if os.path.realpath(path.parent) != os.path.realpath(root):
        raise SessionStoreError(
            "PLANNING_FOLDER_OUTSIDE_ROOT",
            f"a new planning folder must sit directly under the planning root {root}; got {path}",
        )
    return validate_slug(path.name)


# ------------------------------------------------------------------------------- host/server paths


def _path_pairs(settings: WorkflowSettings) -> list[tuple[str, str, bool]]:
    """(server prefix, host prefix, collapse legacy owner/repo) pairs, longest server prefix first."""
    pairs: list[tuple[str, str, bool]] = []
    host_projects = settings.host_projects_root
    mode = root_mode(settings)
    if host_projects is not None:
        if mode == "multi" and settings.engineering_dir is not None:
            server = settings.engineering_dir
        elif mode == "pinned":
            server = settings.install_dir / "projects"
        else:
            server = settings.engineering_dir or settings.workspace or settings.install_dir / "projects"
        pairs.append((str(server), str(host_projects), True))
    host_worktree = settings.host_worktree_root or host_projects
    workspace = settings.workspace
    if host_worktree is not None and workspace is not None and all(str(workspace) != p[0] for p in pairs):
        pairs.append((str(settings.workspace), str(host_worktree), False))
    pairs.sort(key=lambda pair: len(pair[0]), reverse=True)
    return pairs


def _under(path: str, prefix: str) -> str | None:
    """The remainder of ``path`` below ``prefix`` (``""`` when equal), else ``None``."""
    prefix = prefix.rstrip("/") or "/"
    if path == prefix:
        return ""
    lead = prefix if prefix.endswith("/") else prefix + "/"
    return path[len(lead) :] if path.startswith(lead) else None


def to_host_path(path: str | Path, settings: WorkflowSettings) -> str:
    """An agent-facing path: server prefixes rewritten to their host bind sources.

    Under the projects root a legacy ``<owner>/<repo>/.engineering/…`` collapses to ``<repo>/.engineering/…``.
    Paths under no mapped root (and every path when no host root is set) come back unchanged.
    """
    text = str(path)
    for server, host, collapse in _path_pairs(settings):
        rest = _under(text, server)
        if rest is None:
            continue
        parts = [part for part in rest.split("/") if part]
        if collapse and len(parts) >= 3 and parts[2] == ".engineering":
            parts = parts[1:]
        return str(PurePath(host, *parts))
    return text


def to_server_path(path: str | Path, settings: WorkflowSettings) -> str:
    """An incoming ``working_directory``/``planning_folder``: host prefixes rewritten to server paths."""
    text = str(path)
    pairs = sorted(_path_pairs(settings), key=lambda pair: len(pair[1]), reverse=True)
    for server, host, _ in pairs:
        rest = _under(text, host)
        if rest is not None:
            return str(PurePath(server, *[part for part in rest.split("/") if part]))
    return text
