"""Facts about the checkout a session works in, read from ``.git`` directly.

No ``git`` subprocess: the working tree is the nearest ancestor holding ``.git`` (a directory, or a
``gitdir:`` file as in linked worktrees and submodules); the remote URL comes from the common git
directory's ``config``; superprojects are found by walking up and matching ``.gitmodules`` paths.

- ``target_repo``: ``owner/repo`` of the checkout's ``origin`` (``None`` without a usable origin).
- ``host_repo_path``: the outermost superproject (the checkout itself when it is not a submodule; a
  worktree at ``<host>/.engineering`` of the same repository also rolls up to ``<host>``).
- ``component_path``: the checkout relative to the host, ``.`` when the same (or an infrastructure
  checkout such as ``<host>/.engineering``).
- ``is_monorepo``: the host's ``.gitmodules`` lists a submodule other than the infrastructure ones
  (``.engineering…``, ``workflows``).
- ``project_dir``: the top-level folder under a projects root that holds the host (or the host's main
  checkout), else the host's main checkout (the folder owning the common ``.git``), so every clone
  and worktree of one project shares one planning root.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from orchestrator.workflow.errors import ParameterError, SessionStoreError
from orchestrator.workflow.repos import normalise_repo

__all__ = ["CheckoutFacts", "derive_checkout", "origin_url", "submodule_paths"]

_SECTION = re.compile(r'\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)')
_INFRA = ("workflows",)


class CheckoutFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What ``derive_checkout`` found (all paths are real, server-side paths)."""

    checkout: Path
    origin_url: str | None
    target_repo: str | None
    host_repo_path: Path
    component_path: str
    is_monorepo: bool
    project_dir: Path

    def variables(self) -> dict[str, Any]:
        """The bag entries this checkout seeds (``target_repo`` only when known)."""
        out: dict[str, Any] = {
            "host_repo_path": str(self.host_repo_path),
            "component_path": self.component_path,
            "is_monorepo": self.is_monorepo,
        }
        if self.target_repo is not None:
            out["target_repo"] = self.target_repo
        return out


def _toplevel(start: Path) -> Path | None:
    probe = start
    while True:
        if (probe / ".git").exists():
            return probe
        if probe.parent == probe:
            return None
        probe = probe.parent


def _git_dir(toplevel: Path) -> Path | None:
    dot_git = toplevel / ".git"
    if dot_git.is_dir():
        return dot_git
    try:
        text = dot_git.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("gitdir:"):
            target = Path(line[len("gitdir:") :].strip())
            return Path(os.path.realpath(target if target.is_absolute() else toplevel / target))
    return None


def _common_dir(git_dir: Path) -> Path:
    try:
        pointer = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return git_dir
    target = Path(pointer)
    return Path(os.path.realpath(target if target.is_absolute() else git_dir / target))


def _unquote(raw: str) -> str:
    out, quoted, escape = [], False, False
    for ch in raw.strip():
        if escape:
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(ch, ch))
            escape = False
        elif ch == "\\":
            escape = True
        elif ch == '"':
            quoted = not quoted
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
    return "".join(out).strip()


def _config_value(text: str, section: str, subsection: str | None, key: str) -> str | None:
    """The last ``key`` of ``[section "subsection"]`` in git-config ``text`` (keys case-insensitive)."""
    current: tuple[str, str | None] | None = None
    value: str | None = None
    for line in text.splitlines():
        match = _SECTION.fullmatch(line)
        if match:
            name, sub, rest = match.group(1).lower(), match.group(2), match.group(3)
            if sub is None and "." in name:  # deprecated [remote.origin] spelling
                name, sub = name.split(".", 1)
            current = (name, sub)
            line = rest
            if not line.strip():
                continue
        if current is None or current != (section, subsection):
            continue
        name, sep, raw = line.partition("=")
        if sep and name.strip().lower() == key:
            value = _unquote(raw)
    return value


def origin_url(checkout: Path) -> str | None:
    """The ``remote.origin.url`` of the checkout at ``checkout`` (a worktree or submodule works too)."""
    git_dir = _git_dir(checkout)
    if git_dir is None:
        return None
    for config in (git_dir / "config.worktree", _common_dir(git_dir) / "config"):
        try:
            text = config.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        url = _config_value(text, "remote", "origin", "url")
        if url:
            return url
    return None


def submodule_paths(toplevel: Path) -> list[str]:
    """The ``path`` of every ``[submodule]`` in ``toplevel/.gitmodules`` (empty when there is none)."""
    try:
        text = (toplevel / ".gitmodules").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    paths: list[str] = []
    in_module = False
    for line in text.splitlines():
        match = _SECTION.fullmatch(line)
        if match:
            in_module = match.group(1).lower() == "submodule"
            line = match.group(3)
        name, sep, raw = line.partition("=")
        if in_module and sep and name.strip().lower() == "path":
            paths.append(_unquote(raw).strip("/"))
    return paths


def _is_infra(path: str) -> bool:
    return path in _INFRA or path == ".engineering" or path.startswith(".engineering/")


def _same_repo(a: Path, b: Path) -> bool:
    ga, gb = _git_dir(a), _git_dir(b)
    return ga is not None and gb is not None and _common_dir(ga) == _common_dir(gb)


def _host(checkout: Path) -> Path:
    current = checkout
    while current.parent != current:
        parent = _toplevel(current.parent)
        if parent is None:
            break
        rel = current.relative_to(parent).as_posix()
        if rel in submodule_paths(parent) or (rel == ".engineering" and _same_repo(current, parent)):
            current = parent
            continue
        break
    return current


def _main_checkout(host: Path) -> Path:
    git_dir = _git_dir(host)
    if git_dir is None:
        return host
    common = _common_dir(git_dir)
    if common.name == ".git" and (common.parent / ".git").is_dir():
        return common.parent
    return host


def _project(host: Path, main: Path, projects_roots: Sequence[Path]) -> Path:
    for root in projects_roots:
        real_root = Path(os.path.realpath(root))
        for candidate in (host, main):
            try:
                rel = candidate.relative_to(real_root)
            except ValueError:
                continue
            if rel.parts:
                return real_root / rel.parts[0]
    return main


def derive_checkout(working_directory: str | Path, projects_roots: Sequence[Path] = ()) -> CheckoutFacts:
    """The checkout facts for an absolute ``working_directory`` (any folder inside a checkout).

    Raises ``ParameterError`` for a relative path and ``SessionStoreError('WORKSPACE_INVALID')`` when
    the folder does not exist or is not inside a git checkout.
    """
    raw = Path(working_directory)
    if not raw.is_absolute():
        raise ParameterError(f"working_directory '{working_directory}' must be an absolute path")
    start = Path(os.path.realpath(raw))
    if not start.is_dir():
        raise SessionStoreError("WORKSPACE_INVALID", f"working_directory {raw} does not exist or is not a folder")
    checkout = _toplevel(start)
    if checkout is None:
        raise SessionStoreError(
            "WORKSPACE_INVALID", f"working_directory {raw} is not inside a git checkout (no .git found above it)"
        )
    url = origin_url(checkout)
    try:
        repo = normalise_repo(url) if url else None
    except ParameterError:
        repo = None
    host = _host(checkout)
    component = checkout.relative_to(host).as_posix() if checkout != host else "."
    if _is_infra(component):
        component = "."  # an engineering worktree works on its host, not on a component
    monorepo = any(not _is_infra(path) for path in submodule_paths(host))
    return CheckoutFacts(
        checkout=checkout,
        origin_url=url,
        target_repo=repo,
        host_repo_path=host,
        component_path=component,
        is_monorepo=monorepo,
        project_dir=_project(host, _main_checkout(host), projects_roots),
    )
