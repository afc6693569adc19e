"""``orchestrator init``: ``init_workspace`` in-process, and the command through the editable install."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from tests.helpers import REPO

from orchestrator.defaults import packaged_path
from orchestrator.defaults.init import InitRefused, init_workspace

NOW = datetime(2026, 12, 1, 21, 0, 5, tzinfo=UTC)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_init_copies_the_guild_and_deployment_into_a_new_directory(tmp_path: Path) -> None:
    workspace = tmp_path / "new" / "ws"
    copied = init_workspace(workspace, force=False)
    assert [(c.what, c.target, c.kept_as) for c in copied] == [
        ("Guild", workspace / "guild", None),
        ("deployment file", workspace / "deployment" / "deployment.json", None),
    ]
    assert _tree(workspace / "guild") == _tree(packaged_path("guild"))
    assert (workspace / "deployment" / "deployment.json").read_bytes() == (
        packaged_path("deployment") / "deployment.json"
    ).read_bytes()
    assert not (workspace / "workflows").exists()
    assert sorted(p.name for p in workspace.iterdir()) == ["deployment", "guild"]  # no temp left behind


def test_init_refuses_when_anything_exists_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "deployment").mkdir()
    (tmp_path / "deployment" / "deployment.json").write_text('{"mine": true}')
    with pytest.raises(InitRefused) as refused:
        init_workspace(tmp_path, force=False, workflows=True)
    assert refused.value.existing == [tmp_path / "deployment" / "deployment.json"]
    assert not (tmp_path / "guild").exists() and not (tmp_path / "workflows").exists()
    assert (tmp_path / "deployment" / "deployment.json").read_text() == '{"mine": true}'


def test_force_replaces_and_keeps_every_old_copy(tmp_path: Path) -> None:
    (tmp_path / "guild").mkdir()
    (tmp_path / "guild" / "mine.md").write_text("my prompt")
    (tmp_path / "deployment").mkdir()
    (tmp_path / "deployment" / "deployment.json").write_text('{"mine": true}')
    copied = init_workspace(tmp_path, force=True, workflows=True, now=NOW)
    kept = {c.what: c.kept_as for c in copied}
    assert kept == {
        "Guild": tmp_path / "guild.replaced-20261201T210005Z",
        "deployment file": tmp_path / "deployment" / "deployment.json.replaced-20261201T210005Z",
        "workflows": None,
    }
    assert (tmp_path / "guild.replaced-20261201T210005Z" / "mine.md").read_text() == "my prompt"
    assert json.loads((tmp_path / "deployment" / "deployment.json.replaced-20261201T210005Z").read_text()) == {
        "mine": True
    }
    assert _tree(tmp_path / "guild") == _tree(packaged_path("guild"))
    assert _tree(tmp_path / "workflows") == _tree(packaged_path("workflows"))


def _orchestrator(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "PYTHONPATH": str(REPO / "src")},
    )


def test_the_command_reports_what_it_wrote_and_what_blocked_it(tmp_path: Path) -> None:
    done = _orchestrator("init", "ws", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"wrote the Guild to {tmp_path / 'ws' / 'guild'}" in done.stdout
    assert f"orchestrator check --workspace {tmp_path / 'ws'}" in done.stdout
    again = _orchestrator("init", "ws", cwd=tmp_path)
    assert again.returncode == 2 and again.stdout == ""
    assert "nothing written; these already exist:" in again.stderr
    assert f"  - {tmp_path / 'ws' / 'guild'}\n  - {tmp_path / 'ws' / 'deployment' / 'deployment.json'}" in again.stderr
    assert "--force" in again.stderr
    checked = _orchestrator("check", "--no-probe", "--workspace", "ws", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    rendered = json.loads(checked.stdout)
    assert (rendered["guildSource"], rendered["deploymentSource"]) == ("workspace", "workspace")
    assert f"Guild: {tmp_path / 'ws' / 'guild'} (from workspace)" in checked.stderr


def test_an_unwritable_target_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    done = _orchestrator("init", "file", cwd=tmp_path)
    assert done.returncode == 2 and f"orchestrator init: cannot write into {tmp_path / 'file'}" in done.stderr


def test_version_comes_from_the_package(tmp_path: Path) -> None:
    import orchestrator

    done = _orchestrator("--version", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, f"orchestrator {orchestrator.__version__}\n")
    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and 'version = { attr = "orchestrator.__version__" }' in pyproject
