"""WorkflowSettings: CLI > env > default, clamps and fallbacks, and errors that name the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.workflow.errors import WorkspaceConfigError
from orchestrator.workflow.serverconfig import BUNDLED_WORKFLOW_DIR, load_workflow_settings


def _load(tmp_path: Path, cli: dict[str, object] | None = None, **env: str):
    base = {"HOME": str(tmp_path / "home"), "WORKFLOW_WORKSPACE": str(tmp_path / "ws")}
    return load_workflow_settings({**base, **env}, cli or {}, cwd=tmp_path)


def test_defaults(tmp_path: Path) -> None:
    s = _load(tmp_path)
    assert s.workflow_dir == BUNDLED_WORKFLOW_DIR
    assert (BUNDLED_WORKFLOW_DIR / "meta").is_dir()
    assert s.schemas_dir == tmp_path / "schemas"
    assert s.workspace == tmp_path / "ws"
    assert s.install_dir == tmp_path / "home/.local/share/workflow-server"
    assert s.key_dir == tmp_path / "home/.workflow-server"
    assert (s.bundle_headroom_fraction, s.bundle_chars_per_token) == (0.8, 4.0)
    assert (s.batch_headroom_fraction, s.batch_max_activities) == (0.35, 3)
    assert s.min_checkpoint_response_seconds == 3.0
    assert (s.server_name, s.server_version, s.transport, s.port, s.host) == (
        "workflow-server",
        "2.1.0",
        "stdio",
        3000,
        "127.0.0.1",
    )
    assert (s.repo, s.engineering_dir, s.planning_slug, s.host_projects_root) == (None, None, None, None)


def test_local_workflows_folder_wins_over_the_bundled_one(tmp_path: Path) -> None:
    (tmp_path / "workflows").mkdir()
    assert _load(tmp_path).workflow_dir == tmp_path / "workflows"


def test_cli_beats_env_beats_default(tmp_path: Path) -> None:
    s = _load(
        tmp_path,
        {"workflow_dir": "cli-wf", "workspace": "/cli/ws", "transport": "http", "port": "4100", "host": "0.0.0.0"},
        WORKFLOW_DIR="env-wf",
        TRANSPORT="stdio",
        PORT="4200",
        HOST="h",
        WORKFLOW_SERVER_INSTALL_DIR="/inst",
    )
    assert s.workflow_dir == tmp_path / "cli-wf"
    assert s.workspace == Path("/cli/ws")
    assert (s.transport, s.port, s.host, s.install_dir) == ("http", 4100, "0.0.0.0", Path("/inst"))
    env_only = _load(tmp_path, {"workflow_dir": "  ", "port": None}, WORKFLOW_DIR="/abs/wf", PORT="nope")
    assert (env_only.workflow_dir, env_only.port) == (Path("/abs/wf"), 3000)


def test_workspace_aliases_and_key_dir_chain(tmp_path: Path) -> None:
    s = load_workflow_settings(
        {"HOME": "/h", "WORKTREE_ROOT": "/wt", "WORKFLOW_SERVER_STATE_DIR": "/state", "XDG_DATA_HOME": "/xdg"}, {}
    )
    assert (s.workspace, s.key_dir, s.install_dir) == (Path("/wt"), Path("/state"), Path("/xdg/workflow-server"))
    s = load_workflow_settings(
        {
            "HOME": "/h",
            "WORKFLOW_WORKSPACE": "/ws",
            "WORKFLOW_SERVER_KEY_DIR": "/keys",
            "WORKFLOW_SERVER_STATE_DIR": "/s",
        },
        {},
    )
    assert s.key_dir == Path("/keys")


@pytest.mark.parametrize(
    ("env", "field", "expected"),
    [
        ({"BUNDLE_HEADROOM_FRACTION": "0.5"}, "bundle_headroom_fraction", 0.5),
        ({"BUNDLE_HEADROOM_FRACTION": "0"}, "bundle_headroom_fraction", 0.8),
        ({"BUNDLE_HEADROOM_FRACTION": "-1"}, "bundle_headroom_fraction", 0.8),
        ({"BUNDLE_HEADROOM_FRACTION": "abc"}, "bundle_headroom_fraction", 0.8),
        ({"BUNDLE_CHARS_PER_TOKEN": "3.5"}, "bundle_chars_per_token", 3.5),
        ({"BUNDLE_CHARS_PER_TOKEN": "nan"}, "bundle_chars_per_token", 4.0),
        ({"BATCH_HEADROOM_FRACTION": "2"}, "batch_headroom_fraction", 1.0),
        ({"BATCH_HEADROOM_FRACTION": "-0.5"}, "batch_headroom_fraction", 0.0),
        ({"BATCH_HEADROOM_FRACTION": "x"}, "batch_headroom_fraction", 0.35),
        ({"BATCH_MAX_ACTIVITIES": "500"}, "batch_max_activities", 100),
        ({"BATCH_MAX_ACTIVITIES": "0"}, "batch_max_activities", 1),
        ({"BATCH_MAX_ACTIVITIES": "7"}, "batch_max_activities", 7),
        ({"MIN_CHECKPOINT_RESPONSE_SECONDS": "0"}, "min_checkpoint_response_seconds", 0.0),
        ({"MIN_CHECKPOINT_RESPONSE_SECONDS": "-3"}, "min_checkpoint_response_seconds", 3.0),
        ({"SERVER_NAME": "ws2", "SERVER_VERSION": "9.9.9"}, "server_name", "ws2"),
        ({"PLANNING_SLUG": " plans "}, "planning_slug", "plans"),
        ({"HOST_PROJECTS_DIR": "/host/p"}, "host_projects_root", Path("/host/p")),
        ({"HOST_WORKTREE_DIR": "/host/w"}, "host_worktree_root", Path("/host/w")),
        ({"TMPDIR": "/scratch"}, "tmp_dir", Path("/scratch")),
    ],
)
def test_knobs(tmp_path: Path, env: dict[str, str], field: str, expected: object) -> None:
    assert getattr(_load(tmp_path, **env), field) == expected


def test_bad_transport_names_its_source(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceConfigError, match=r"TRANSPORT is 'sse'; expected one of: stdio, http"):
        _load(tmp_path, TRANSPORT="sse")
    with pytest.raises(WorkspaceConfigError, match=r"--transport is 'ws'"):
        _load(tmp_path, {"transport": "ws"})


def test_repo_pin_is_normalised_or_refused(tmp_path: Path) -> None:
    assert _load(tmp_path, WORKFLOW_SERVER_REPO="git@github.com:acme/widgets.git").repo == "acme/widgets"
    assert _load(tmp_path, {"repo": "https://github.com/o/r"}, WORKFLOW_SERVER_REPO="x/y").repo == "o/r"
    with pytest.raises(WorkspaceConfigError, match=r"WORKFLOW_SERVER_REPO: repo 'nonsense'"):
        _load(tmp_path, WORKFLOW_SERVER_REPO="nonsense")


def test_no_workspace_or_pin_defaults_to_the_current_directory(tmp_path: Path) -> None:
    defaulted = load_workflow_settings({"HOME": str(tmp_path)}, {}, cwd=tmp_path)
    assert (defaulted.workspace, defaulted.workspace_defaulted) == (tmp_path.resolve(), True)
    given = load_workflow_settings({"HOME": str(tmp_path)}, {"workspace": "w"}, cwd=tmp_path)
    assert (given.workspace, given.workspace_defaulted) == (tmp_path.resolve() / "w", False)
    pinned = load_workflow_settings({"HOME": str(tmp_path), "WORKFLOW_SERVER_REPO": "a/b"}, {})
    assert (pinned.repo, pinned.workspace) == ("a/b", None)
    assert load_workflow_settings({"HOME": str(tmp_path)}, {}, require_workspace=False).workspace is None


def test_settings_are_frozen(tmp_path: Path) -> None:
    s = _load(tmp_path)
    with pytest.raises(AttributeError):
        s.port = 1  # type: ignore[misc]
