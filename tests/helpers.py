"""Shared test helpers: the simulated model served in-process, and settings built from a test Guild.

Integration tests replace only the wire: the sim is a real Responses-API HTTP server on loopback.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from orchestrator.config import Settings, load_settings
from orchestrator.sim import load_script, serve_sim

REPO = Path(__file__).resolve().parent.parent
SHIPPED_TOOLS = REPO / "guild" / "tools"
#: The real public workflow corpus, beside the checkout when present. Tests read it as data only; the
#: behaviours they check are also tested on the project's own ``workflows/`` and on fixture corpora.
PUBLIC_CORPUS = REPO.parent / "shared" / "corpus" / "workflows"
needs_public_corpus = pytest.mark.skipif(
    not PUBLIC_CORPUS.is_dir(),
    reason=f"the public workflow corpus is not at {PUBLIC_CORPUS}: these tests replay it as data "
    "(the same behaviours are tested on workflows/ and fixture corpora)",
)


class Sim:
    """A running sim model: its base URL plus the control endpoints."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.root = base_url.removesuffix("/v1")

    async def requests(self) -> list[dict[str, Any]]:
        async with httpx.AsyncClient() as client:
            response = await client.get(f"{self.root}/_sim/requests")
            response.raise_for_status()
            return response.json()

    async def responses_requests(self) -> list[dict[str, Any]]:
        return [r for r in await self.requests() if r["path"].endswith("/responses")]

    async def set_script(self, script: Mapping[str, Any]) -> None:
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{self.root}/_sim/script", json=dict(script))
            response.raise_for_status()


@asynccontextmanager
async def serve_script(script: Mapping[str, Any]) -> AsyncIterator[Sim]:
    """Serve ``script`` on a free loopback port for the duration of the block."""
    async with trio.open_nursery() as nursery:
        base_url = await nursery.start(serve_sim, load_script(json.dumps(script).encode()))
        try:
            yield Sim(base_url)
        finally:
            nursery.cancel_scope.cancel()


def write_guild(
    directory: Path,
    roles: Mapping[str, list[str]],
    *,
    entry: str | None = None,
    extra_manifests: Mapping[str, Mapping[str, Any]] | None = None,
) -> Path:
    """A Guild whose role ``r`` has prompt ``You are the r.`` and the given tools (shipped manifests)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "prompts").mkdir(exist_ok=True)
    (directory / "tools").mkdir(exist_ok=True)
    for manifest in SHIPPED_TOOLS.glob("*.json"):
        shutil.copy(manifest, directory / "tools" / manifest.name)
    for name, manifest in (extra_manifests or {}).items():
        (directory / "tools" / f"{name}.json").write_text(json.dumps(manifest))
    for role in roles:
        (directory / "prompts" / f"{role}.md").write_text(f"You are the {role}.\n")
    guild = {
        "entryRole": entry or next(iter(roles)),
        "roles": {r: {"systemPrompt": f"prompts/{r}.md", "tools": tools} for r, tools in roles.items()},
        "tools": sorted(f"tools/{p.name}" for p in (directory / "tools").glob("*.json")),
    }
    (directory / "guild.json").write_text(json.dumps(guild, indent=2))
    return directory


def write_deployment(path: Path, api_base: str, **executor: Any) -> Path:
    """A deployment file for the sim; ``executor`` / ``context_policy`` / ``model`` keys override."""
    context_policy = executor.pop("context_policy", {"maxToolOutputChars": 4000})
    model = {
        "apiBase": api_base,
        "name": "sim",
        "contextWindow": 32768,
        "generation": {"temperature": 0.2, "maxTokens": 4096},
    }
    model.update(executor.pop("model", {}))
    document = {
        "model": model,
        "executor": {
            "maxAgentDepth": 8,
            "defaultToolTimeoutSeconds": 30,
            "maxCompactionAttempts": 5,
            "contextPressureThreshold": 0.8,
            **executor,
        },
        "contextPolicy": context_policy,
    }
    path.write_text(json.dumps(document, indent=2))
    return path


#: Three roles two delegation levels deep, each with the conversation tools.
DEFAULT_ROLES: dict[str, list[str]] = {
    "lead": ["agent", "finish", "context_info", "edit_context"],
    "helper": ["agent", "finish", "run_shell", "context_info", "edit_context"],
    "leaf": ["finish", "run_shell", "context_info", "edit_context"],
}


def make_settings(
    tmp_path: Path,
    api_base: str,
    roles: Mapping[str, list[str]] | None = None,
    env: Mapping[str, str] | None = None,
    **executor: Any,
) -> Settings:
    guild = write_guild(tmp_path / "guild", roles or DEFAULT_ROLES)
    deployment = write_deployment(tmp_path / "deployment.json", api_base, **executor)
    return load_settings(guild, deployment, dict(env or {}), secrets_dir=tmp_path / "no-secrets")
