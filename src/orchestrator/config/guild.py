"""The Guild loader: guild.json, its roles' prompt files, and its tool manifests, resolved and checked.

``guild.json`` is ``{entryRole, roles, tools, visualization?}``. Every path in it (``systemPrompt``,
``styleGuide``, the manifest paths in ``tools``) is relative to the guild directory. The loader is
strict: unknown keys fail with the key named, deployment keys get a pointer to the deployment file, and
the removed ``includeReasoning`` flag gets its own explanation. It collects every problem it can find in
one pass; checks that would only repeat an earlier failure (a role's tools when a manifest failed to
load) are skipped rather than reported as a cascade.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import jsonschema
import msgspec

from orchestrator.config.mcpservers import MCP_PREFIX
from orchestrator.errors import ConfigError
from orchestrator.schema import Base, StrictBase

__all__ = ["GUILD_FILE", "Guild", "Role", "ToolManifest", "load_guild", "parse_manifest", "read_guild"]

GUILD_FILE = "guild.json"

#: Top-level guild.json keys that belong to the deployment file (or to no file at all, schemaVersion).
_DEPLOYMENT_KEYS = ("model", "executor", "contextPolicy", "logging", "schemaVersion")
_DEPLOYMENT_POINTER = (
    "deployment settings live in the deployment file (deployment/deployment.json, or the file named by "
    "ORCHESTRATOR_DEPLOYMENT_FILE), and guild.json has no schema version"
)

#: A tiered display text as stored: tier name -> one or more variants.
Tiered = dict[str, list[str]]


class Role(Base):
    """A loaded role: its resolved prompt text (style guide appended), its tools and display fields."""

    name: str
    system_prompt: str
    tools: list[str]
    label: Tiered | None = None
    description: Tiered | None = None
    working_label: Tiered | None = None


class ToolManifest(Base):
    """A loaded tool manifest: what the model sees, plus the display fields the web client reads."""

    name: str
    description: str
    parameters: dict[str, Any]
    human_label: Tiered | None = None
    human_description: Tiered | None = None
    human_call_label: Tiered | None = None
    human_working_label: Tiered | None = None


class Guild(Base):
    """The loaded Guild. ``tools`` is keyed by manifest name; ``visualization`` is kept verbatim."""

    entry_role: str
    roles: dict[str, Role]
    tools: dict[str, ToolManifest]
    directory: Path
    visualization: dict[str, Any] | None = None


_Variants = str | Annotated[list[str], msgspec.Meta(min_length=1)]


class _TieredFile(StrictBase):
    detailed: _Variants | None = None
    friendly: _Variants | None = None
    whimsical: _Variants | None = None


class _RoleFile(StrictBase):
    system_prompt: str
    tools: list[str]
    style_guide: str | None = None
    label: _TieredFile | None = None
    description: _TieredFile | None = None
    working_label: _TieredFile | None = None


class _ManifestFile(StrictBase):
    name: Annotated[str, msgspec.Meta(min_length=1)]
    description: str
    parameters: dict[str, Any]
    human_label: _TieredFile | None = None
    human_description: _TieredFile | None = None
    human_call_label: _TieredFile | None = None
    human_working_label: _TieredFile | None = None


class _GuildFile(StrictBase):
    entry_role: str
    roles: dict[str, Any]
    tools: list[str]
    visualization: dict[str, Any] | None = None


def load_guild(guild_dir: Path) -> Guild:
    """Load and check the Guild in ``guild_dir``. Raises ``ConfigError`` listing every problem found."""
    guild, problems = read_guild(guild_dir)
    if guild is None or problems:
        raise ConfigError(problems)
    return guild


def read_guild(guild_dir: Path) -> tuple[Guild | None, list[str]]:
    """Load the Guild in ``guild_dir``; return it (or ``None``) and the problems found.

    Each problem names the file, and where it applies the role, the key (as a ``$.path``) or the tool.
    """
    source = guild_dir / GUILD_FILE
    data, error = _read_bytes(source)
    if data is None:
        return None, [f"{source}: {error}"]
    try:
        raw = msgspec.json.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        return None, [f"{source}: not valid JSON: {exc}"]
    if not isinstance(raw, dict):
        return None, [f"{source}: Expected `object`, got `{type(raw).__name__}`"]
    problems = [
        f"{source}: `{key}` does not belong in guild.json - at `$.{key}`: {_DEPLOYMENT_POINTER}"
        for key in _DEPLOYMENT_KEYS
        if key in raw
    ]
    try:
        top = msgspec.convert({k: v for k, v in raw.items() if k not in _DEPLOYMENT_KEYS}, _GuildFile)
    except msgspec.ValidationError as exc:
        return None, [*problems, f"{source}: {exc}"]

    roles: dict[str, Role] = {}
    for name, role_raw in top.roles.items():
        role, role_problems = _load_role(guild_dir, source, name, role_raw)
        problems.extend(role_problems)
        if role is not None:
            roles[name] = role

    tools, tool_problems = _load_manifests(guild_dir, source, top.tools)
    problems.extend(tool_problems)

    if top.entry_role not in top.roles:
        problems.append(
            f"{source}: entryRole `{top.entry_role}` is not a declared role - at `$.entryRole` "
            f"(declared roles: {_listing(top.roles)})"
        )
    if not tool_problems:
        for name, role in roles.items():
            for index, tool in enumerate(role.tools):
                if tool.startswith(MCP_PREFIX):
                    continue  # an MCP server's tool: checked against the deployment's mcpServers
                if tool not in tools:
                    problems.append(
                        f"{source}: role `{name}` lists tool `{tool}`, which no manifest declares - at "
                        f"`$.roles.{name}.tools[{index}]` (declared tools: {_listing(tools)})"
                    )
    if problems:
        return None, problems
    guild = Guild(
        entry_role=top.entry_role,
        roles=roles,
        tools=tools,
        directory=guild_dir,
        visualization=top.visualization,
    )
    return guild, []


def _load_role(guild_dir: Path, source: Path, name: str, raw: Any) -> tuple[Role | None, list[str]]:
    where = f"$.roles.{name}"
    if isinstance(raw, dict) and "includeReasoning" in raw:
        return None, [
            f"{source}: role `{name}` sets `includeReasoning`, which was removed - at "
            f"`{where}.includeReasoning`: reasoning is now always retained and replayed to the model; "
            "delete the key"
        ]
    try:
        spec = msgspec.convert(raw, _RoleFile)
    except msgspec.ValidationError as exc:
        return None, [f"{source}: role `{name}`: {_at(exc, where)}"]
    problems: list[str] = []
    prompt = _read_role_file(guild_dir, name, "systemPrompt", spec.system_prompt, problems)
    style = None
    if spec.style_guide is not None:
        style = _read_role_file(guild_dir, name, "styleGuide", spec.style_guide, problems)
    if prompt is None or problems:
        return None, [f"{source}: {p}" for p in problems]
    if style is not None:
        prompt = prompt.rstrip("\n") + "\n\n" + style
    role = Role(
        name=name,
        system_prompt=prompt,
        tools=list(spec.tools),
        label=_tiers(spec.label),
        description=_tiers(spec.description),
        working_label=_tiers(spec.working_label),
    )
    return role, []


def _read_role_file(guild_dir: Path, role: str, field: str, relative: str, problems: list[str]) -> str | None:
    path = guild_dir / relative
    data, error = _read_bytes(path)
    if data is None:
        problems.append(f"role `{role}`: {field} file `{relative}` {error} ({path}) - at `$.roles.{role}.{field}`")
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(f"role `{role}`: {field} file `{relative}` is not UTF-8 text ({path}): {exc}")
        return None


def _load_manifests(guild_dir: Path, source: Path, paths: list[str]) -> tuple[dict[str, ToolManifest], list[str]]:
    tools: dict[str, ToolManifest] = {}
    origin: dict[str, str] = {}
    problems: list[str] = []
    for index, relative in enumerate(paths):
        path = guild_dir / relative
        data, error = _read_bytes(path)
        if data is None:
            problems.append(f"{source}: tool manifest `{relative}` {error} ({path}) - at `$.tools[{index}]`")
            continue
        manifest, manifest_problems = parse_manifest(data)
        problems.extend(f"{path}: {p}" for p in manifest_problems)
        if manifest is None:
            continue
        if manifest.name in tools:
            problems.append(
                f"{path}: tool name `{manifest.name}` is already declared by `{origin[manifest.name]}`; "
                "manifest names must be unique"
            )
            continue
        tools[manifest.name] = manifest
        origin[manifest.name] = relative
    return tools, problems


def parse_manifest(data: bytes) -> tuple[ToolManifest | None, list[str]]:
    """Decode one manifest strictly and check its ``parameters`` is a JSON Schema for an object."""
    try:
        spec = msgspec.json.decode(data, type=_ManifestFile)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        return None, [str(exc)]
    problems: list[str] = []
    if spec.parameters.get("type") != "object":
        problems.append('`parameters` must be a JSON Schema with `"type": "object"` - at `$.parameters`')
    try:
        jsonschema.validators.validator_for(spec.parameters).check_schema(spec.parameters)
    except jsonschema.SchemaError as exc:
        location = "".join(f".{part}" for part in exc.absolute_path)
        problems.append(f"`parameters` is not a valid JSON Schema: {exc.message} - at `$.parameters{location}`")
    if problems:
        return None, problems
    manifest = ToolManifest(
        name=spec.name,
        description=spec.description,
        parameters=spec.parameters,
        human_label=_tiers(spec.human_label),
        human_description=_tiers(spec.human_description),
        human_call_label=_tiers(spec.human_call_label),
        human_working_label=_tiers(spec.human_working_label),
    )
    return manifest, []


def _tiers(spec: _TieredFile | None) -> Tiered | None:
    """Normalise a tiered text: a bare string becomes a one-element list; absent tiers are left out."""
    if spec is None:
        return None
    tiers: Tiered = {}
    for tier in ("detailed", "friendly", "whimsical"):
        value = getattr(spec, tier)
        if value is not None:
            tiers[tier] = [value] if isinstance(value, str) else list(value)
    return tiers


def _at(exc: msgspec.ValidationError, prefix: str) -> str:
    """msgspec's message with its ``$`` path re-rooted under ``prefix`` (``$.roles.coder``)."""
    message = str(exc)
    marker = " - at `$"
    if marker in message:
        return message.replace(marker, f" - at `{prefix}", 1)
    return f"{message} - at `{prefix}`"


def _read_bytes(path: Path) -> tuple[bytes | None, str]:
    try:
        return path.read_bytes(), ""
    except FileNotFoundError:
        return None, "does not exist"
    except IsADirectoryError:
        return None, "is a directory, not a file"
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror or exc}"


def _listing(names: Iterable[str]) -> str:
    return ", ".join(sorted(names)) or "(none)"
