"""Startup configuration: the deployment file, ORCHESTRATOR_* overrides, the model probe and the Guild.

Typical use::

    paths = locate_config(args.guild, args.deployment, os.environ, workspace)  # flag, env, workspace, package
    settings = load_config(paths, os.environ)                          # sync, offline; ConfigError
    settings = await probe_model(settings)                              # GET {apiBase}/models once
    print(render_settings(settings))                                    # JSON-able, key redacted

Every failure is one ``orchestrator.errors.ConfigError`` whose ``problems`` name the file and key path,
or the environment variable, of each finding.
"""

from orchestrator.config.deployment import (
    ContextPolicy,
    Deployment,
    ExecutorConfig,
    Generation,
    InterruptTriggers,
    LoggingConfig,
    ModelConfig,
)
from orchestrator.config.guild import Guild, Role, ToolManifest, load_guild
from orchestrator.config.overridetable import ENV_OVERRIDES
from orchestrator.config.probe import probe_model
from orchestrator.config.secrets import read_secret
from orchestrator.config.settings import (
    ConfigPaths,
    Settings,
    load_config,
    load_settings,
    locate_config,
    render_settings,
    resolve_paths,
)

__all__ = [
    "ENV_OVERRIDES",
    "ConfigPaths",
    "ContextPolicy",
    "Deployment",
    "ExecutorConfig",
    "Generation",
    "Guild",
    "InterruptTriggers",
    "LoggingConfig",
    "ModelConfig",
    "Role",
    "Settings",
    "ToolManifest",
    "load_config",
    "load_guild",
    "load_settings",
    "locate_config",
    "probe_model",
    "read_secret",
    "render_settings",
    "resolve_paths",
]
