"""The tools callable without a session: ``discover``, ``list_workflows``, ``health_check``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from orchestrator.workflow.tools.context import McpCall, McpReply, ServerState, ToolSpec
from orchestrator.workflow.tools.params import params
from orchestrator.workflow.tools.render import to_yaml

__all__ = ["DISCOVER", "HEALTH_CHECK", "LIST_WORKFLOWS", "repo_binding"]

BOOTSTRAP_RESOURCE = ("meta", "bootstrap-protocol")
REPO_BINDING = "required_on_start_session"


def repo_binding(state: ServerState) -> str:
    """The literal ``required_on_start_session``. The session's repository is always settled by
    ``start_session`` (``repo``, or the origin of ``working_directory``; a repo pin supplies it in pinned mode)."""
    return REPO_BINDING


def _bootstrap_text(state: ServerState) -> str | None:
    corpus = state.corpus()
    namespace, stem = BOOTSTRAP_RESOURCE
    resource = corpus.resources.get(namespace, {}).get(stem)
    if resource is None:
        return None
    path = Path(resource.file)
    if not path.is_absolute():
        path = Path(corpus.root) / path
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return resource.body


def discover(call: McpCall) -> McpReply:
    settings = call.state.settings
    lines = [
        f"server: {settings.server_name}",
        f"version: {settings.server_version}",
        f"repo_binding: {repo_binding(call.state)}",
    ]
    bootstrap = _bootstrap_text(call.state)
    if bootstrap is not None:
        lines += ["", bootstrap.rstrip("\n")]
    return McpReply("\n".join(lines))


def list_workflows(call: McpCall) -> McpReply:
    """The catalogue, rendered once per corpus load (it depends on nothing else)."""
    return McpReply(call.state.memo("list_workflows", lambda: _catalogue(call)))


def _catalogue(call: McpCall) -> str:
    corpus = call.corpus()
    entries: list[dict[str, Any]] = []
    for wf in corpus.listed_workflows():
        entry: dict[str, Any] = {"id": wf.id, "title": wf.title, "version": wf.version}
        if wf.tags:
            entry["tags"] = list(wf.tags)
        entry["description"] = wf.description or ""
        entries.append(entry)
    if corpus.load_errors:
        errors = [{"file": e.file, "error": e.error} for e in corpus.load_errors]
        return to_yaml({"workflows": entries, "load_errors": errors})
    return to_yaml(entries)


def health_check(call: McpCall) -> McpReply:
    state = call.state
    corpus = state.corpus()
    return call.json(
        {
            "status": "healthy",
            "server": state.settings.server_name,
            "version": state.settings.server_version,
            "workflows_available": len(corpus.listed_workflows()),
            "uptime_seconds": int(time.monotonic() - state.started_monotonic),
            "repo_binding": repo_binding(state),
        }
    )


DISCOVER = ToolSpec(
    "discover",
    "Call this first. Returns the server name, version, how sessions bind to a repository, and the bootstrap "
    "protocol for starting a workflow. No session needed; list_workflows shows what can run.",
    params(),
    discover,
)
LIST_WORKFLOWS = ToolSpec(
    "list_workflows",
    "Lists every runnable workflow (YAML: id, title, version, tags, description). If some workflow files fail "
    "to load, the answer is {workflows, load_errors} instead of a plain list. No session needed.",
    params(),
    list_workflows,
)
HEALTH_CHECK = ToolSpec(
    "health_check",
    "Quick liveness check: status, server name and version, number of workflows available, uptime. No session needed.",
    params(),
    health_check,
)
