"""Resolved startup settings: where the files are, loading them all at once, and rendering the result.

``load_settings`` reads the deployment file, the Guild, the ORCHESTRATOR_* overrides and the API key,
and either returns one :class:`Settings` or raises one ``ConfigError`` listing every problem it found.
It does no network I/O; the model probe (:func:`orchestrator.config.probe_model`) completes the model
fields afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import msgspec

from orchestrator.config.deployment import (
    Deployment,
    ObservabilityConfig,
    decode_deployment,
    deployment_problems,
    field_value,
)
from orchestrator.config.guild import GUILD_FILE, Guild, read_guild
from orchestrator.config.mcpservers import McpResolved, reference_problems, resolve_server_secrets
from orchestrator.config.overrides import apply_overrides, parse_overrides
from orchestrator.config.secrets import DEFAULT_SECRETS_DIR, REDACTED, Redactor, read_api_key, secret_values
from orchestrator.defaults import PackagedName, from_checkout, packaged_path
from orchestrator.errors import ConfigError
from orchestrator.schema import Base

__all__ = [
    "DEPLOYMENT_FILE_VARIABLE",
    "GUILD_DIR_VARIABLE",
    "WORKSPACE_DEPLOYMENT_FILE",
    "WORKSPACE_GUILD_DIR",
    "ConfigPaths",
    "ModelStatus",
    "Settings",
    "load_config",
    "load_settings",
    "locate_config",
    "render_settings",
    "resolve_paths",
]

GUILD_DIR_VARIABLE = "ORCHESTRATOR_GUILD_DIR"
DEPLOYMENT_FILE_VARIABLE = "ORCHESTRATOR_DEPLOYMENT_FILE"
# Where a workspace keeps its own copies (what `orchestrator init` writes), relative to the workspace.
WORKSPACE_GUILD_DIR = Path("guild")
WORKSPACE_DEPLOYMENT_FILE = Path("deployment/deployment.json")


class ModelStatus(Base):
    """What the last model probe found (see ``config/probe.py``): shown by ``check`` and ``/api/config``.

    ``reachable`` is false when the listing could not be fetched (down, loading, HTTP error);
    ``loading`` when the server answered ``503 Loading model``; ``tools_problem`` names a chat
    template that cannot render tools (llama-server's ``GET /props``) — runs refuse to start then.
    """

    reachable: bool
    message: str
    loading: bool = False
    tools_problem: str | None = None


class Settings(Base):
    """Everything startup resolved. ``api_key`` is the secret itself; it never appears in ``repr``.

    ``secret_values`` are every secret known at load time (``config.secrets.secret_values``: the API
    key, the Kagi key, the token, secret-looking and withheld variables); rendering and the engine redact them.
    """

    deployment: Deployment
    guild: Guild
    guild_dir: Path
    deployment_file: Path
    api_key: str | None = None
    #: Each MCP server's env/headers with ``${NAME}`` secrets resolved (never rendered or logged).
    mcp_resolved: dict[str, McpResolved] = {}
    notes: list[str] = []
    # Where each path came from (see ``ConfigPaths``); ``None`` when the caller passed paths directly.
    guild_source: str | None = None
    deployment_source: str | None = None
    #: The last model probe's finding; ``None`` when the model was not probed (``check --no-probe``).
    model_status: ModelStatus | None = None
    secret_values: tuple[str, ...] = ()

    def redactor(self) -> Redactor:
        """A redactor over the API key and every other secret known at load time."""
        return Redactor([*self.secret_values, *([self.api_key] if self.api_key else [])])

    def __repr__(self) -> str:
        key = REDACTED if self.api_key is not None else None
        return self.redactor().redact(
            f"Settings(guild_dir={self.guild_dir!r}, deployment_file={self.deployment_file!r}, "
            f"api_key={key!r}, deployment={self.deployment!r}, notes={self.notes!r})"
        )

    def __rich_repr__(self) -> Iterator[tuple[str, Any]]:
        yield "guild_dir", self.guild_dir
        yield "deployment_file", self.deployment_file
        yield "api_key", REDACTED if self.api_key is not None else None
        yield "deployment", self.deployment
        yield "notes", self.notes


class ConfigPaths(Base):
    """The Guild directory and deployment file to load, and where each choice came from.

    A source is one of ``flag --guild`` / ``flag --deployment``, ``environment <VARIABLE>``,
    ``workspace`` (the workspace's own ``guild/`` or ``deployment/deployment.json``) and
    ``packaged default``.
    """

    guild_dir: Path
    deployment_file: Path
    guild_source: str
    deployment_source: str

    def notes(self) -> list[str]:
        """Where each came from; a packaged default read from a source checkout is called that checkout's
        own folder (which it is: the package links to it), so an edit there is seen as taking effect."""
        guild = _origin(self.guild_source, "guild", "guild/")
        deployment = _origin(self.deployment_source, "deployment", "deployment/deployment.json")
        return [f"Guild: {self.guild_dir} ({guild})", f"deployment file: {self.deployment_file} ({deployment})"]


def _origin(source: str, name: PackagedName, shown: str) -> str:
    if source == "packaged default" and from_checkout(name):
        return f"this checkout's {shown}, the packaged default"
    return f"from {source}"


def locate_config(
    guild: str | None, deployment: str | None, env: Mapping[str, str], workspace: Path | None = None
) -> ConfigPaths:
    """Resolve each path: the CLI flag, else the variable, else the workspace's copy, else the packaged one.

    An empty flag or variable counts as not given. The workspace (default: the current directory) counts
    when it holds ``guild/`` (a directory) or ``deployment/deployment.json`` (a file); the two are
    resolved independently. The packaged defaults are the ones shipped inside the ``orchestrator``
    package (:mod:`orchestrator.defaults`).
    """
    base = workspace if workspace is not None else Path.cwd()
    guild_dir, guild_source = _locate(
        ("flag --guild", guild),
        ("environment " + GUILD_DIR_VARIABLE, env.get(GUILD_DIR_VARIABLE)),
        workspace=(base / WORKSPACE_GUILD_DIR, Path.is_dir),
        packaged=lambda: packaged_path("guild"),
    )
    deployment_file, deployment_source = _locate(
        ("flag --deployment", deployment),
        ("environment " + DEPLOYMENT_FILE_VARIABLE, env.get(DEPLOYMENT_FILE_VARIABLE)),
        workspace=(base / WORKSPACE_DEPLOYMENT_FILE, Path.is_file),
        packaged=lambda: packaged_path("deployment") / "deployment.json",
    )
    return ConfigPaths(
        guild_dir=guild_dir,
        deployment_file=deployment_file,
        guild_source=guild_source,
        deployment_source=deployment_source,
    )


def _locate(
    flag: tuple[str, str | None],
    variable: tuple[str, str | None],
    *,
    workspace: tuple[Path, Callable[[Path], bool]],
    packaged: Callable[[], Path],
) -> tuple[Path, str]:
    for source, value in (flag, variable):
        if value:
            return Path(value), source
    candidate, present = workspace
    if present(candidate):
        return candidate, "workspace"
    return packaged(), "packaged default"


def resolve_paths(
    guild: str | None, deployment: str | None, env: Mapping[str, str], workspace: Path | None = None
) -> tuple[Path, Path]:
    """The guild directory and deployment file (:func:`locate_config` without the sources)."""
    paths = locate_config(guild, deployment, env, workspace)
    return paths.guild_dir, paths.deployment_file


def load_settings(
    guild_dir: Path,
    deployment_file: Path,
    env: Mapping[str, str],
    *,
    secrets_dir: Path = DEFAULT_SECRETS_DIR,
) -> Settings:
    """Load the deployment file, the Guild, the overrides and the API key; check them together.

    Synchronous and offline. The file is validated on its own (including its handler roles against the
    Guild), then each set ORCHESTRATOR_* variable replaces one field and the merged result is validated
    again, with every finding about an overridden field naming the variable.

    Raises: ``ConfigError`` whose ``problems`` lists every finding, each naming the file and key path or
    the environment variable. Problems and notes are scrubbed of every known secret (the API key, the
    Kagi key, the token, secret-looking variables), so a key pasted into the wrong variable stays hidden.
    """
    problems: list[str] = []
    notes: list[str] = []

    deployment = _read_deployment(deployment_file, problems)
    guild, guild_problems = read_guild(guild_dir)
    problems.extend(guild_problems)
    role_names = set(guild.roles) if guild is not None else None
    overrides, override_problems = parse_overrides(env)
    problems.extend(override_problems)
    secret, secret_problems = read_api_key(env, secrets_dir)
    problems.extend(secret_problems)

    merged = deployment
    if deployment is not None:
        problems.extend(
            f"{deployment_file}: {field} {message}" for field, message in deployment_problems(deployment, role_names)
        )
        merged, merge_problems = apply_overrides(deployment, overrides)
        problems.extend(merge_problems)
        by_field = {override.field: override.variable for override in overrides}
        problems.extend(
            f"{by_field[field]}: {field} {message}"
            for field, message in deployment_problems(merged, role_names)
            if field in by_field
        )
        notes.extend(_override_notes(deployment, merged, by_field))
        if guild is not None:
            role_tools = {name: role.tools for name, role in guild.roles.items()}
            problems.extend(
                f"{guild_dir / GUILD_FILE}: {field} {message}"
                for field, message in reference_problems(role_tools, deployment.mcp_servers)
            )

    mcp_resolved: dict[str, McpResolved] = {}
    if merged is not None:
        mcp_resolved, mcp_problems = resolve_server_secrets(merged.mcp_servers, env, secrets_dir)
        problems.extend(f"{deployment_file}: {problem}" for problem in mcp_problems)
    api_key = secret.value if secret else None
    mcp_secrets = [value for resolved in mcp_resolved.values() for value in resolved.secrets]
    allow = merged.tool_environment if merged is not None else ()
    known = (*secret_values(env, secrets_dir, allow=allow), *mcp_secrets)
    redactor = Redactor([*known, *([api_key] if api_key else [])])
    if problems or merged is None or guild is None:
        raise ConfigError(redactor.redact_all(problems))
    notes.append(f"model API key: set (from {secret.source})" if secret else "model API key: not set")
    return Settings(
        deployment=merged,
        guild=guild,
        guild_dir=guild_dir,
        deployment_file=deployment_file,
        api_key=api_key,
        mcp_resolved=mcp_resolved,
        notes=redactor.redact_all(notes),
        secret_values=known,
    )


def load_config(paths: ConfigPaths, env: Mapping[str, str], *, secrets_dir: Path = DEFAULT_SECRETS_DIR) -> Settings:
    """:func:`load_settings` on located paths; the settings remember each path's source, and the notes
    start with one line per path saying where it came from."""
    settings = load_settings(paths.guild_dir, paths.deployment_file, env, secrets_dir=secrets_dir)
    return msgspec.structs.replace(
        settings,
        guild_source=paths.guild_source,
        deployment_source=paths.deployment_source,
        notes=[*settings.redactor().redact_all(paths.notes()), *settings.notes],
    )


def _read_deployment(path: Path, problems: list[str]) -> Deployment | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        problems.append(f"{path}: the deployment file does not exist")
        return None
    except OSError as exc:
        problems.append(f"{path}: the deployment file cannot be read ({exc.strerror or exc})")
        return None
    deployment, decode_problems = decode_deployment(data)
    problems.extend(f"{path}: {problem}" for problem in decode_problems)
    return deployment


def _override_notes(before: Deployment, after: Deployment, by_field: dict[str, str]) -> list[str]:
    notes = []
    for field, variable in by_field.items():
        old, new = field_value(before, field), field_value(after, field)
        if new is not None:
            shown = "unset" if old is None else repr(old)
            notes.append(f"{variable} overrides {field}: {shown} → {new!r}")
    return notes


def render_settings(settings: Settings) -> dict[str, Any]:
    """The resolved configuration as a JSON-able dict (camelCase keys), with the API key redacted.

    Unlike the file, every field is present: defaults are filled in and unset optionals are ``None``.
    The API key shows as ``"<redacted>"`` when set; every known secret is scrubbed from every other string.
    """
    deployment = settings.deployment
    model = deployment.model
    executor = deployment.executor
    triggers = executor.interrupt_triggers
    guild = settings.guild
    rendered = {
        "deploymentFile": str(settings.deployment_file),
        "guildDir": str(settings.guild_dir),
        "deploymentSource": settings.deployment_source,
        "guildSource": settings.guild_source,
        "modelStatus": None if settings.model_status is None else _builtins(settings.model_status),
        "model": {
            "name": model.name,
            "apiBase": model.api_base,
            "contextWindow": model.context_window,
            "generation": _builtins(model.generation),
            "apiKey": REDACTED if settings.api_key is not None else None,
        },
        "executor": {
            "maxAgentDepth": executor.max_agent_depth,
            "defaultToolTimeoutSeconds": executor.default_tool_timeout_seconds,
            "maxCompactionAttempts": executor.max_compaction_attempts,
            "contextPressureThreshold": executor.context_pressure_threshold,
            "contextHandlerRole": executor.context_handler_role,
            "inquiryHandlerRole": executor.inquiry_handler_role,
            "interruptTriggers": None
            if triggers is None
            else {
                "handlerRole": triggers.handler_role,
                "everyToolCalls": triggers.every_tool_calls,
                "everyTokens": triggers.every_tokens,
                "planOwnerRole": triggers.plan_owner_role,
            },
        },
        "contextPolicy": _builtins(deployment.context_policy),
        "logging": None if deployment.logging is None else _builtins(deployment.logging),
        "observability": _observability(deployment.observability),
        "mcpServers": {
            name: {
                "command": server.command,
                "args": list(server.args),
                "url": server.url,
                "env": {key: REDACTED for key in server.env},
                "headers": {key: REDACTED for key in server.headers},
            }
            for name, server in deployment.mcp_servers.items()
        },
        "entryRole": guild.entry_role,
        "roles": {
            name: {
                "tools": list(role.tools),
                "label": role.label,
                "description": role.description,
                "workingLabel": role.working_label,
                "systemPromptChars": len(role.system_prompt),
            }
            for name, role in guild.roles.items()
        },
        "tools": {
            name: {
                "description": tool.description,
                "humanLabel": tool.human_label,
                "humanDescription": tool.human_description,
                "humanCallLabel": tool.human_call_label,
                "humanWorkingLabel": tool.human_working_label,
            }
            for name, tool in guild.tools.items()
        },
        "visualization": guild.visualization,
        "notes": list(settings.notes),
    }
    # A secret echoed as, say, a model name or a role description is scrubbed too.
    return cast("dict[str, Any]", settings.redactor().redact_value(rendered))


def _observability(block: ObservabilityConfig | None) -> dict[str, Any] | None:
    """The trace-export block with every field (``check`` shows what is in force, defaults included)."""
    if block is None:
        return None
    return {
        "enabled": block.enabled,
        "endpoint": block.endpoint,
        "serviceName": block.service_name,
        "captureMessageContent": block.capture_message_content,
        "maxQueueSize": block.max_queue_size,
        "exportTimeoutSeconds": block.export_timeout_seconds,
        "shutdownTimeoutSeconds": block.shutdown_timeout_seconds,
    }


def _builtins(struct: msgspec.Struct) -> dict[str, Any]:
    return cast("dict[str, Any]", msgspec.to_builtins(struct))
