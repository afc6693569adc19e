"""Workspace trust: a checkout's own Guild and deployment file are used only once the operator trusts them.

A workspace can carry ``guild/`` and ``deployment/deployment.json`` (``orchestrator init`` writes them, and
so can anyone who publishes a repository). Configuration from there that can make the service execute
something needs the operator's word first:

- the deployment file when it declares ``mcpServers`` (each is a command started, or a URL called) or a
  ``toolEnvironment`` (variables, perhaps secrets, handed to every command the model runs);
- the Guild when any of its files differs from the packaged Guild (other roles, prompts or tools).

``orchestrator trust [DIR]`` records the sha256 of every file under ``guild/`` and of the deployment file
in the trust store, ``<state dir>/trust.json`` (:mod:`orchestrator.statedir`: outside every workspace),
keyed by the workspace's resolved path. A file whose hash no longer matches is untrusted again.

When a piece that needs trust is untrusted, BOTH workspace copies are ignored (the Guild and the
deployment name each other's roles: a half-ignored pair rarely loads) and the packaged ones are used;
a flag or an ``ORCHESTRATOR_*`` variable is the operator's own choice and always counts.
:func:`apply_trust` says which files it ignored and why (``TrustReport``), for the console, ``check``,
``GET /api/config`` and the page.

Pure derivation (:func:`assess`) in the middle; reading files and the store at the edges.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import msgspec

from orchestrator.config.deployment import decode_deployment
from orchestrator.config.settings import (
    WORKSPACE_DEPLOYMENT_FILE,
    WORKSPACE_GUILD_DIR,
    ConfigPaths,
)
from orchestrator.defaults import packaged_path
from orchestrator.fsutil import atomic_write
from orchestrator.schema import Base
from orchestrator.statedir import state_dir

__all__ = [
    "IgnoredFile",
    "TrustReport",
    "TrustStore",
    "TrustedWorkspace",
    "apply_trust",
    "assess",
    "load_store",
    "trust_command",
    "trust_store_path",
    "trust_workspace",
    "workspace_hashes",
]

TrustState = Literal["not_needed", "trusted", "untrusted"]


class TrustedWorkspace(Base, frozen=True):
    """What the operator trusted in one workspace: each file's sha256 (path relative to the workspace)."""

    files: dict[str, str]
    trusted_at: str


class TrustStore(Base):
    """``<state dir>/trust.json``: trusted workspaces by resolved path."""

    workspaces: dict[str, TrustedWorkspace] = {}


class IgnoredFile(Base, frozen=True):
    """A workspace file that was not used, and why (``path`` relative to the workspace)."""

    path: str
    reason: str


class TrustReport(Base, frozen=True):
    """The trust verdict over a workspace's configuration.

    ``state``: ``not_needed`` (nothing from the workspace can execute anything, or nothing came from it),
    ``trusted`` (what needs trust matches what the operator trusted) or ``untrusted`` (``ignored`` lists
    the files not used; ``command`` is what trusts them)."""

    workspace: str
    state: TrustState
    ignored: list[IgnoredFile] = []
    command: str | None = None

    def notes(self) -> list[str]:
        """The console lines: one per ignored file, then the command."""
        lines = [f"ignored workspace file {item.path}: {item.reason}" for item in self.ignored]
        if self.command is not None:
            lines.append(f"the packaged Guild and deployment are used instead; `{self.command}` trusts them")
        return lines


# --- pure ----------------------------------------------------------------------------------------

_GUILD_PREFIX = f"{WORKSPACE_GUILD_DIR.as_posix()}/"
_DEPLOYMENT = WORKSPACE_DEPLOYMENT_FILE.as_posix()


def trust_command(workspace: Path) -> str:
    return f"orchestrator trust {shlex.quote(str(workspace))}"


def _guild_part(hashes: Mapping[str, str]) -> dict[str, str]:
    return {path: digest for path, digest in hashes.items() if path.startswith(_GUILD_PREFIX)}


def assess(
    workspace: Path,
    *,
    guild_from_workspace: bool,
    deployment_from_workspace: bool,
    current: Mapping[str, str],
    packaged_guild: Mapping[str, str],
    deployment_servers: list[str],
    trusted: TrustedWorkspace | None,
    deployment_tool_environment: Sequence[str] = (),
) -> TrustReport:
    """The verdict, from what was located and hashed.

    ``current``: sha256 of the workspace's files (``guild/...``, ``deployment/deployment.json``);
    ``packaged_guild``: the packaged Guild's files with the same ``guild/`` prefix;
    ``deployment_servers``: the names under the workspace deployment's ``mcpServers``;
    ``deployment_tool_environment``: the names its ``toolEnvironment`` lists;
    ``trusted``: the store's record for this workspace, if any."""
    guild_current = _guild_part(current)
    recorded = dict(trusted.files) if trusted is not None else {}
    needs: dict[str, str] = {}  # the workspace path that needs trust -> why it can execute something
    untrusted: dict[str, str] = {}
    if guild_from_workspace and guild_current != dict(packaged_guild):
        needs[_GUILD_PREFIX] = "its roles, prompts or tools differ from the packaged Guild"
        if _guild_part(recorded) != guild_current:
            differing = set(guild_current.items()) ^ set(_guild_part(recorded).items())
            untrusted[_GUILD_PREFIX] = _why_untrusted(trusted, sorted({path for path, _ in differing}))
    if deployment_from_workspace and (deployment_servers or deployment_tool_environment):
        reasons = []
        if deployment_servers:
            servers = ", ".join(deployment_servers)
            reasons.append(f"it declares mcpServers ({servers}): commands it would start or URLs it would call")
        if deployment_tool_environment:
            names = ", ".join(deployment_tool_environment)
            reasons.append(f"its toolEnvironment ({names}) would hand these variables to every command the model runs")
        needs[_DEPLOYMENT] = "; ".join(reasons)
        if recorded.get(_DEPLOYMENT) != current.get(_DEPLOYMENT):
            untrusted[_DEPLOYMENT] = _why_untrusted(trusted, [_DEPLOYMENT])
    if not needs:  # nothing needs trust; still say so when the operator trusted exactly these files
        taken = (guild_current if guild_from_workspace else {}) | (
            {_DEPLOYMENT: current[_DEPLOYMENT]} if deployment_from_workspace and _DEPLOYMENT in current else {}
        )
        covered = trusted is not None and bool(taken) and all(recorded.get(p) == d for p, d in taken.items())
        if covered and guild_from_workspace:
            covered = _guild_part(recorded) == guild_current
        return TrustReport(workspace=str(workspace), state="trusted" if covered else "not_needed")
    if not untrusted:
        return TrustReport(workspace=str(workspace), state="trusted")
    ignored = [IgnoredFile(path=path, reason=f"{needs[path]}, and {untrusted[path]}") for path in untrusted]
    for path, taken in ((_GUILD_PREFIX, guild_from_workspace), (_DEPLOYMENT, deployment_from_workspace)):
        if taken and path not in untrusted:
            ignored.append(IgnoredFile(path=path, reason="ignored together with the untrusted file(s) above"))
    return TrustReport(workspace=str(workspace), state="untrusted", ignored=ignored, command=trust_command(workspace))


def _why_untrusted(trusted: TrustedWorkspace | None, changed: list[str]) -> str:
    if trusted is None:
        return "this workspace was never trusted"
    shown = ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
    return f"it changed since it was trusted at {trusted.trusted_at} ({shown})"


def _packaged_paths(paths: ConfigPaths, report: TrustReport) -> ConfigPaths:
    """``paths`` with each ignored workspace copy replaced by the packaged one."""
    ignored = {item.path for item in report.ignored}
    replaced = paths
    if _GUILD_PREFIX in ignored:
        replaced = msgspec.structs.replace(
            replaced, guild_dir=packaged_path("guild"), guild_source="packaged default (the workspace's is untrusted)"
        )
    if _DEPLOYMENT in ignored:
        replaced = msgspec.structs.replace(
            replaced,
            deployment_file=packaged_path("deployment") / "deployment.json",
            deployment_source="packaged default (the workspace's is untrusted)",
        )
    return replaced


# --- I/O at the edges ----------------------------------------------------------------------------


def trust_store_path(env: Mapping[str, str]) -> Path:
    return state_dir(env) / "trust.json"


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _tree_hashes(root: Path, prefix: str) -> dict[str, str]:
    found: dict[str, str] = {}
    if not root.is_dir():
        return found
    for path in sorted(root.rglob("*")):
        if path.is_file():
            digest = _sha256(path)
            if digest is not None:
                found[prefix + path.relative_to(root).as_posix()] = digest
    return found


def workspace_hashes(workspace: Path) -> dict[str, str]:
    """sha256 of every file under the workspace's ``guild/`` and of its deployment file."""
    hashes = _tree_hashes(workspace / WORKSPACE_GUILD_DIR, _GUILD_PREFIX)
    digest = _sha256(workspace / WORKSPACE_DEPLOYMENT_FILE)
    if digest is not None:
        hashes[_DEPLOYMENT] = digest
    return hashes


def load_store(path: Path) -> TrustStore:
    """The trust store; a missing or unreadable one trusts nothing."""
    try:
        return msgspec.json.decode(path.read_bytes(), type=TrustStore)
    except (OSError, msgspec.DecodeError, RecursionError):
        return TrustStore()


def trust_workspace(workspace: Path, env: Mapping[str, str], now: datetime | None = None) -> TrustedWorkspace:
    """Record the current hashes of the workspace's Guild and deployment files (``orchestrator trust``)."""
    key = str(workspace.resolve())
    stamp = (now or datetime.now(UTC)).isoformat(timespec="seconds").replace("+00:00", "Z")
    record = TrustedWorkspace(files=workspace_hashes(workspace), trusted_at=stamp)
    path = trust_store_path(env)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    store = load_store(path)
    workspaces = {**store.workspaces, key: record}
    atomic_write(path, msgspec.json.format(msgspec.json.encode(TrustStore(workspaces=workspaces))))
    return record


def _executable(deployment_file: Path) -> tuple[list[str], list[str]]:
    """The workspace deployment's ``mcpServers`` names and ``toolEnvironment`` names."""
    try:
        deployment, _ = decode_deployment(deployment_file.read_bytes())
    except OSError:
        return [], []
    if deployment is None:  # a broken file fails to load
        return [], []
    return sorted(deployment.mcp_servers), list(deployment.tool_environment)


def apply_trust(paths: ConfigPaths, workspace: Path, env: Mapping[str, str]) -> tuple[ConfigPaths, TrustReport]:
    """The located paths with untrusted workspace copies swapped for the packaged ones, and the verdict."""
    workspace = workspace.resolve()
    from_guild = paths.guild_source == "workspace"
    from_deployment = paths.deployment_source == "workspace"
    if not (from_guild or from_deployment):
        return paths, TrustReport(workspace=str(workspace), state="not_needed")
    servers, tool_environment = _executable(paths.deployment_file) if from_deployment else ([], [])
    report = assess(
        workspace,
        guild_from_workspace=from_guild,
        deployment_from_workspace=from_deployment,
        current=workspace_hashes(workspace),
        packaged_guild=_tree_hashes(packaged_path("guild"), _GUILD_PREFIX),
        deployment_servers=servers,
        trusted=load_store(trust_store_path(env)).workspaces.get(str(workspace)),
        deployment_tool_environment=tool_environment,
    )
    return _packaged_paths(paths, report), report
