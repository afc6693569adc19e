"""A Foundry candidate: the Guild's optimizable texts, their identity, and the Guild folder they make.

A candidate maps a component name to its text. The components are each role's system prompt file
(``prompt:<path inside the Guild>``) and the ``description`` of each tool manifest a role lists
(``tool:<name>``). Nothing else of the Guild changes: tool names and schemas, the roles and their tool
lists, ``guild.json`` and the executor stay as the seed has them.

``materialize`` writes a complete Guild folder for a candidate and loads it with the strict Guild
loader; a candidate that does not load is never run.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from orchestrator.config.guild import GUILD_FILE, load_guild, read_guild
from orchestrator.config.mcpservers import MCP_PREFIX

__all__ = [
    "PROMPT_PREFIX",
    "TOOL_PREFIX",
    "Candidate",
    "GuildLayout",
    "candidate_id",
    "changed_components",
    "materialize",
    "read_layout",
]

PROMPT_PREFIX = "prompt:"
TOOL_PREFIX = "tool:"

#: component name -> text
Candidate = dict[str, str]


@dataclass
class GuildLayout:
    """Where each component lives in the seed Guild, and which components each role sees."""

    directory: Path
    seed: Candidate
    #: ``tool:<name>`` -> the manifest's path inside the Guild
    manifests: dict[str, str] = field(default_factory=dict)
    #: role -> its components, its prompt first
    role_components: dict[str, list[str]] = field(default_factory=dict)


def read_layout(guild_dir: Path) -> GuildLayout:
    """The seed candidate of ``guild_dir`` (``ConfigError`` when the Guild does not load strictly)."""
    guild = load_guild(guild_dir)
    raw = msgspec.json.decode((guild_dir / GUILD_FILE).read_bytes())
    layout = GuildLayout(directory=guild_dir, seed={})
    by_tool_name: dict[str, str] = {}
    for relative in raw["tools"]:
        manifest = msgspec.json.decode((guild_dir / relative).read_bytes())
        by_tool_name[manifest["name"]] = relative
    for name, role_raw in raw["roles"].items():
        prompt_path = role_raw["systemPrompt"]
        prompt_key = PROMPT_PREFIX + prompt_path
        layout.seed[prompt_key] = (guild_dir / prompt_path).read_text(encoding="utf-8")
        keys = [prompt_key]
        for tool in guild.roles[name].tools:
            if tool.startswith(MCP_PREFIX):
                continue  # an MCP server's tool: its description is the server's
            tool_key = TOOL_PREFIX + tool
            layout.seed[tool_key] = guild.tools[tool].description
            layout.manifests[tool_key] = by_tool_name[tool]
            keys.append(tool_key)
        layout.role_components[name] = keys
    return layout


def candidate_id(candidate: Mapping[str, str]) -> str:
    """A stable short id: the hash of the sorted component texts (the same texts, the same id)."""
    encoded = msgspec.json.encode(sorted(candidate.items()))
    return hashlib.sha256(encoded).hexdigest()[:12]


def changed_components(seed: Mapping[str, str], candidate: Mapping[str, str]) -> list[str]:
    """The components whose text differs from the seed's, sorted."""
    return sorted(k for k, text in candidate.items() if seed.get(k) != text)


def _write_manifest(path: Path, description: str) -> None:
    document: dict[str, Any] = msgspec.json.decode(path.read_bytes())
    document["description"] = description
    path.write_bytes(msgspec.json.format(msgspec.json.encode(document), indent=2) + b"\n")


def materialize(layout: GuildLayout, candidate: Mapping[str, str], target: Path) -> list[str]:
    """Write the Guild of ``candidate`` to ``target`` (replaced) and load it strictly.

    Returns the problems found (empty: the folder is a Guild ``orchestrator check`` accepts).
    """
    problems = [f"component {key}: unknown (not in the seed Guild)" for key in candidate if key not in layout.seed]
    problems += [f"component {key}: the text is blank" for key, text in candidate.items() if not text.strip()]
    if problems:
        return problems
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(layout.directory, target, symlinks=False)
    for key, text in candidate.items():
        try:
            if key.startswith(PROMPT_PREFIX):
                (target / key.removeprefix(PROMPT_PREFIX)).write_text(text, encoding="utf-8")
            else:
                _write_manifest(target / layout.manifests[key], text)
        except (OSError, UnicodeError, msgspec.DecodeError) as exc:
            problems.append(f"component {key}: cannot be written: {exc}")
    if problems:
        return problems
    _guild, problems = read_guild(target)
    return problems
