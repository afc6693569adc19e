"""Workspace trust: the pure verdict (``assess``) and the store at the edges (``trust_workspace``,
``apply_trust``) on real files in tmp_path, the state directory pointed there too."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from orchestrator.config.settings import locate_config
from orchestrator.config.trust import (
    TrustedWorkspace,
    TrustReport,
    apply_trust,
    assess,
    load_store,
    trust_store_path,
    trust_workspace,
    workspace_hashes,
)
from orchestrator.defaults import packaged_path

PACKAGED = {"guild/guild.json": "aa", "guild/prompts/p.md": "bb"}


def _assess(
    current: dict[str, str], *, servers: list[str] | None = None, trusted: TrustedWorkspace | None = None
) -> TrustReport:
    return assess(
        Path("/ws"),
        guild_from_workspace=any(p.startswith("guild/") for p in current),
        deployment_from_workspace="deployment/deployment.json" in current,
        current=current,
        packaged_guild=PACKAGED,
        deployment_servers=servers or [],
        trusted=trusted,
    )


def test_a_packaged_copy_and_a_deployment_without_servers_need_no_trust() -> None:
    report = _assess({**PACKAGED, "deployment/deployment.json": "dd"})
    assert (report.state, report.ignored, report.command) == ("not_needed", [], None)


def test_a_changed_guild_is_ignored_with_the_deployment_beside_it() -> None:
    report = _assess({**PACKAGED, "guild/guild.json": "changed", "deployment/deployment.json": "dd"})
    assert report.state == "untrusted" and report.command == "orchestrator trust /ws"
    reasons = {item.path: item.reason for item in report.ignored}
    assert "differ from the packaged Guild" in reasons["guild/"] and "never trusted" in reasons["guild/"]
    assert "together with" in reasons["deployment/deployment.json"]
    assert any("orchestrator trust /ws" in line for line in report.notes())


def test_mcp_servers_need_trust_and_a_matching_record_grants_it() -> None:
    current = {"deployment/deployment.json": "dd"}
    untrusted = _assess(current, servers=["evil"])
    assert untrusted.state == "untrusted" and "mcpServers (evil)" in untrusted.ignored[0].reason
    trusted = _assess(current, servers=["evil"], trusted=TrustedWorkspace(files=dict(current), trusted_at="t"))
    assert (trusted.state, trusted.ignored) == ("trusted", [])


def test_a_tool_environment_needs_trust_too(tmp_path: Path) -> None:
    """A planted deployment naming variables for the tools (``GH_PAT``) would hand the model a secret."""
    report = assess(
        Path("/ws"),
        guild_from_workspace=False,
        deployment_from_workspace=True,
        current={"deployment/deployment.json": "dd"},
        packaged_guild=PACKAGED,
        deployment_servers=[],
        trusted=None,
        deployment_tool_environment=["GH_PAT"],
    )
    assert report.state == "untrusted"
    assert "its toolEnvironment (GH_PAT) would hand these variables to every command" in report.ignored[0].reason
    env = {"ORCHESTRATOR_STATE_DIR": str(tmp_path / "state")}
    workspace = tmp_path / "ws"
    deployment = json.loads((packaged_path("deployment") / "deployment.json").read_text())
    deployment["toolEnvironment"] = ["GH_PAT"]
    (workspace / "deployment").mkdir(parents=True)
    (workspace / "deployment" / "deployment.json").write_text(json.dumps(deployment))
    _, applied = apply_trust(locate_config(None, None, env, workspace), workspace, env)
    assert applied.state == "untrusted" and [i.path for i in applied.ignored] == ["deployment/deployment.json"]


def test_a_file_changed_since_trust_is_named() -> None:
    record = TrustedWorkspace(files={**PACKAGED, "guild/guild.json": "mine"}, trusted_at="2026-01-01T00:00:00Z")
    report = _assess({**PACKAGED, "guild/guild.json": "mine", "guild/prompts/new.md": "x"}, trusted=record)
    (item,) = report.ignored
    assert "changed since it was trusted at 2026-01-01T00:00:00Z (guild/prompts/new.md)" in item.reason


def test_trust_is_recorded_outside_the_workspace_and_survives_only_unchanged_files(tmp_path: Path) -> None:
    env = {"ORCHESTRATOR_STATE_DIR": str(tmp_path / "state")}
    workspace = tmp_path / "ws"
    shutil.copytree(packaged_path("guild"), workspace / "guild")
    deployment = json.loads((packaged_path("deployment") / "deployment.json").read_text())
    deployment["mcpServers"] = {"files": {"command": "true"}}
    (workspace / "deployment").mkdir()
    (workspace / "deployment" / "deployment.json").write_text(json.dumps(deployment))
    paths = locate_config(None, None, env, workspace)

    used, report = apply_trust(paths, workspace, env)
    assert report.state == "untrusted" and [i.path for i in report.ignored] == ["deployment/deployment.json", "guild/"]
    assert used.guild_dir == packaged_path("guild") and used.guild_source.startswith("packaged default")
    assert used.deployment_file == packaged_path("deployment") / "deployment.json"

    record = trust_workspace(workspace, env)
    assert record.files == workspace_hashes(workspace) and "deployment/deployment.json" in record.files
    assert trust_store_path(env).parent == tmp_path / "state" and not list(workspace.rglob("trust.json"))
    assert load_store(trust_store_path(env)).workspaces[str(workspace.resolve())] == record
    used, report = apply_trust(paths, workspace, env)
    assert report.state == "trusted" and used == paths

    (workspace / "deployment" / "deployment.json").write_text(json.dumps({**deployment, "logging": None}))
    assert apply_trust(paths, workspace, env)[1].state == "untrusted"


def test_flags_and_variables_are_the_operators_choice(tmp_path: Path) -> None:
    env = {"ORCHESTRATOR_STATE_DIR": str(tmp_path / "state")}
    paths = locate_config(str(tmp_path / "g"), str(tmp_path / "d.json"), env, tmp_path)
    assert apply_trust(paths, tmp_path, env) == (paths, apply_trust(paths, tmp_path, env)[1])
    assert apply_trust(paths, tmp_path, env)[1].state == "not_needed"


def test_a_damaged_store_trusts_nothing(tmp_path: Path) -> None:
    path = tmp_path / "trust.json"
    path.write_text("{not json")
    assert load_store(path).workspaces == {}
