"""``run_shell``: the command's environment is the allow-listed part of the service's; no secret reaches it."""

from __future__ import annotations

from pathlib import Path

from tests.tools.support import make_ctx

from orchestrator.tools.shell import run_shell

ENV = {
    "PATH": "/usr/bin:/bin",
    "ORCHESTRATOR_API_KEY": "sk-model-key-123",
    "ORCHESTRATOR_KAGI_API_KEY": "kagi-key-4567",
    "ORCHESTRATOR_TOKEN": "service-token-89",
    "GITHUB_TOKEN": "ghp_abcdefgh",
    "NPM_TOKEN": "npm_abcdefgh",
    "Db_Password": "hunter22hunter",
    "DATABASE_URL": "postgres://u:pa55w0rd-xyz@h/db",
    "GH_PAT": "gh-pat-value-0001",
    "PLAIN_SETTING": "withheld",
    "LANG": "C.UTF-8",
}


def _names(stdout: str) -> set[str]:
    return {line.split("=", 1)[0] for line in stdout.splitlines() if "=" in line}


async def test_run_shell_gets_the_allow_listed_variables_only(tmp_path: Path) -> None:
    result = await run_shell(make_ctx(tmp_path, env=ENV), {"command": "env"})
    names = _names(result.data["stdout"])
    assert {"PATH", "LANG"} <= names
    assert not names & {"ORCHESTRATOR_API_KEY", "ORCHESTRATOR_KAGI_API_KEY", "ORCHESTRATOR_TOKEN", "GITHUB_TOKEN"}
    assert not names & {"NPM_TOKEN", "Db_Password", "DATABASE_URL", "GH_PAT", "PLAIN_SETTING"}


async def test_the_deployments_tool_environment_adds_names(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, env=ENV, tool_env_allow=("GH_PAT", "PLAIN_SETTING"))
    result = await run_shell(ctx, {"command": "env"})
    names = _names(result.data["stdout"])
    assert {"GH_PAT", "PLAIN_SETTING"} <= names and "DATABASE_URL" not in names


async def test_the_allow_list_passes_exactly_the_named_variables(tmp_path: Path) -> None:
    env = {**ENV, "ORCHESTRATOR_TOOL_ENV_ALLOW": "GITHUB_TOKEN, ORCHESTRATOR_API_KEY"}
    result = await run_shell(make_ctx(tmp_path, env=env), {"command": "env"})
    names = _names(result.data["stdout"])
    assert "GITHUB_TOKEN" in names and "NPM_TOKEN" not in names
    assert "ORCHESTRATOR_API_KEY" not in names  # the orchestrator's own secrets are never allowed
