"""``run_shell``: the command's environment never holds the orchestrator's secrets."""

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
    "PLAIN_SETTING": "kept",
}


def _names(stdout: str) -> set[str]:
    return {line.split("=", 1)[0] for line in stdout.splitlines() if "=" in line}


async def test_run_shell_strips_secrets_and_keeps_the_rest(tmp_path: Path) -> None:
    result = await run_shell(make_ctx(tmp_path, env=ENV), {"command": "env"})
    names = _names(result.data["stdout"])
    assert {"PATH", "PLAIN_SETTING"} <= names
    assert not names & {"ORCHESTRATOR_API_KEY", "ORCHESTRATOR_KAGI_API_KEY", "ORCHESTRATOR_TOKEN", "GITHUB_TOKEN"}
    assert not names & {"NPM_TOKEN", "Db_Password"}


async def test_the_allow_list_passes_exactly_the_named_variables(tmp_path: Path) -> None:
    env = {**ENV, "ORCHESTRATOR_TOOL_ENV_ALLOW": "GITHUB_TOKEN, ORCHESTRATOR_API_KEY"}
    result = await run_shell(make_ctx(tmp_path, env=env), {"command": "env"})
    names = _names(result.data["stdout"])
    assert "GITHUB_TOKEN" in names and "NPM_TOKEN" not in names
    assert "ORCHESTRATOR_API_KEY" not in names  # the orchestrator's own secrets are never allowed
