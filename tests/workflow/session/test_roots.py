"""Roots per root mode, slugs, host/server paths, and checkout facts read from real git repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from orchestrator.workflow.errors import ParameterError, SessionStoreError
from orchestrator.workflow.serverconfig import WorkflowSettings, load_workflow_settings, root_mode
from orchestrator.workflow.session import (
    check_new_planning_folder,
    dated_slug,
    derive_checkout,
    next_free_slug,
    planning_root,
    project_planning_root,
    search_roots,
    to_host_path,
    to_server_path,
    validate_slug,
)
from orchestrator.workflow.session.roots import ensure_planning_folder, writable_roots


def _settings(tmp_path: Path, **env: str) -> WorkflowSettings:
    base = {"HOME": str(tmp_path / "home"), "WORKFLOW_SERVER_INSTALL_DIR": str(tmp_path / "install")}
    return load_workflow_settings({**base, **env}, {}, cwd=tmp_path, require_workspace=False)


# ------------------------------------------------------------------------------------------ modes


def test_single_mode_planning_roots(tmp_path: Path) -> None:
    s = _settings(tmp_path, WORKFLOW_WORKSPACE=str(tmp_path / "ws"))
    assert root_mode(s) == "single"
    assert planning_root(s) == tmp_path / "ws/.engineering/artifacts/planning"
    assert planning_root(s, "acme/widgets") == planning_root(s)  # repo is metadata only
    eng = _settings(
        tmp_path, WORKFLOW_WORKSPACE=str(tmp_path / "ws"), WORKFLOW_SERVER_ENGINEERING_DIR=str(tmp_path / "eng")
    )
    assert planning_root(eng) == tmp_path / "eng/artifacts/planning"
    slugged = _settings(tmp_path, WORKFLOW_WORKSPACE=str(tmp_path / "ws"), PLANNING_SLUG="plans")
    assert planning_root(slugged) == tmp_path / "ws/plans"
    assert project_planning_root(slugged, tmp_path / "proj") == tmp_path / "proj/plans"
    assert project_planning_root(s, tmp_path / "proj") == tmp_path / "proj/.engineering/artifacts/planning"


def test_pinned_mode(tmp_path: Path) -> None:
    s = _settings(tmp_path, WORKFLOW_SERVER_REPO="https://github.com/acme/widgets.git")
    assert (root_mode(s), s.repo) == ("pinned", "acme/widgets")
    assert planning_root(s) == tmp_path / "install/projects/widgets/.engineering/artifacts/planning"


def test_multi_mode_needs_a_repo_and_scans_every_project(tmp_path: Path) -> None:
    multi = tmp_path / "install/projects"
    s = _settings(tmp_path, WORKFLOW_WORKSPACE=str(tmp_path / "ws"), WORKFLOW_SERVER_ENGINEERING_DIR=str(multi))
    assert root_mode(s) == "multi"
    with pytest.raises(SessionStoreError) as caught:
        planning_root(s)
    assert caught.value.code == "WORKSPACE_INVALID"
    assert planning_root(s, "acme/widgets") == multi / "widgets/.engineering/artifacts/planning"
    (multi / "widgets/.engineering").mkdir(parents=True)
    (multi / "acme/gadgets/.engineering").mkdir(parents=True)
    assert set(search_roots(s)) == {multi / "widgets/.engineering", multi / "acme/gadgets/.engineering"}
    named = _settings(tmp_path, WORKFLOW_SERVER_ENGINEERING_DIR=str(tmp_path / "elsewhere/projects"))
    assert root_mode(named) == "multi"


def test_no_workspace_means_single_mode_in_the_current_directory(tmp_path: Path) -> None:
    s = load_workflow_settings({"HOME": str(tmp_path / "home")}, {}, cwd=tmp_path)
    assert (root_mode(s), s.workspace_defaulted) == ("single", True)
    assert planning_root(s) == tmp_path.resolve() / ".engineering/artifacts/planning"


# ------------------------------------------------------------------------------------------ slugs


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "a\\b", " pad", "x\0y"])
def test_invalid_slugs_are_named(bad: str) -> None:
    with pytest.raises(SessionStoreError) as caught:
        validate_slug(bad)
    assert caught.value.code == "INVALID_INDEX"
    assert repr(bad) in caught.value.message


def test_dated_and_next_free_slugs(tmp_path: Path) -> None:
    assert dated_slug("work-package", now=1_767_225_599.0) == "2025-12-31-work-package"
    assert dated_slug("work-package", now=1_767_225_600.0) == "2026-01-01-work-package"
    assert next_free_slug(tmp_path, "2026-01-01-wp") == "2026-01-01-wp"
    (tmp_path / "2026-01-01-wp").mkdir()
    assert next_free_slug(tmp_path, "2026-01-01-wp") == "2026-01-01-wp"  # an empty folder is free
    for name in ("2026-01-01-wp", "2026-01-01-wp-2"):
        (tmp_path / name).mkdir(exist_ok=True)
        (tmp_path / name / "session.json").write_text("{}")
    assert next_free_slug(tmp_path, "2026-01-01-wp") == "2026-01-01-wp-3"


def test_new_planning_folder_must_sit_directly_under_the_root(tmp_path: Path) -> None:
    root = tmp_path / "ws/.engineering/artifacts/planning"
    assert check_new_planning_folder(root / "acc-2", root) == "acc-2"
    with pytest.raises(ParameterError, match="must be an absolute path"):
        check_new_planning_folder("rel/acc", root)
    for outside in (tmp_path / "x/y", root / "a/b"):
        with pytest.raises(SessionStoreError) as caught:
            check_new_planning_folder(outside, root)
        assert caught.value.code == "PLANNING_FOLDER_OUTSIDE_ROOT"
        assert str(root) in caught.value.message


# ------------------------------------------------------------------------------------------ paths


def test_host_server_path_mapping(tmp_path: Path) -> None:
    s = _settings(tmp_path, WORKFLOW_WORKSPACE="/srv/projects", HOST_PROJECTS_DIR="/Users/me/projects")
    server = "/srv/projects/widgets/.engineering/artifacts/planning/acc"
    host = "/Users/me/projects/widgets/.engineering/artifacts/planning/acc"
    assert to_host_path(server, s) == host
    assert to_server_path(host, s) == server
    assert to_host_path("/srv/projects/acme/widgets/.engineering/x", s) == "/Users/me/projects/widgets/.engineering/x"
    assert to_host_path("/srv/projectsX/a", s) == "/srv/projectsX/a"
    assert to_host_path("/srv/projects", s) == "/Users/me/projects"
    plain = _settings(tmp_path, WORKFLOW_WORKSPACE="/srv/projects")
    assert to_host_path(server, plain) == server
    assert to_server_path(host, plain) == host
    split = _settings(
        tmp_path,
        WORKFLOW_WORKSPACE="/srv/worktrees",
        WORKFLOW_SERVER_ENGINEERING_DIR="/srv/eng",
        HOST_PROJECTS_ROOT="/h/eng",
        HOST_WORKTREE_ROOT="/h/wt",
    )
    assert to_host_path("/srv/worktrees/w/x", split) == "/h/wt/w/x"
    assert to_host_path("/srv/eng/artifacts/planning/a", split) == "/h/eng/artifacts/planning/a"
    assert to_server_path("/h/wt/w/x", split) == "/srv/worktrees/w/x"


# ------------------------------------------------------------------------------------------ checkouts


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def _repo(path: Path, origin: str | None) -> Path:
    path.mkdir(parents=True)
    _git(path, "init", "-q")
    if origin:
        _git(path, "remote", "add", "origin", origin)
    _git(path, "commit", "-q", "--allow-empty", "-m", "init")
    return path


def test_checkout_with_ssh_origin(tmp_path: Path) -> None:
    projects = tmp_path / "p"
    widgets = _repo(projects / "widgets", "git@github.com:acme/widgets.git")
    (widgets / "src/deep").mkdir(parents=True)
    for wd in (widgets, widgets / "src/deep"):
        facts = derive_checkout(wd, [projects])
        assert facts.checkout == widgets.resolve()
        assert (facts.target_repo, facts.component_path, facts.is_monorepo) == ("acme/widgets", ".", False)
        assert facts.host_repo_path == widgets.resolve()
        assert facts.project_dir == widgets.resolve()
    assert derive_checkout(widgets).project_dir == widgets.resolve()
    assert derive_checkout(widgets).variables() == {
        "host_repo_path": str(widgets.resolve()),
        "target_repo": "acme/widgets",
        "component_path": ".",
        "is_monorepo": False,
    }


def test_checkout_with_https_origin_in_a_branch_named_folder(tmp_path: Path) -> None:
    checkout = _repo(tmp_path / "p/feature-login", "https://github.com/acme/gadgets.git")
    facts = derive_checkout(checkout, [tmp_path / "p"])
    assert facts.target_repo == "acme/gadgets"
    assert facts.origin_url == "https://github.com/acme/gadgets.git"


def test_checkout_without_origin(tmp_path: Path) -> None:
    facts = derive_checkout(_repo(tmp_path / "lonely", None))
    assert (facts.target_repo, facts.origin_url) == (None, None)
    assert "target_repo" not in facts.variables()


def test_worktrees_share_the_main_checkouts_project(tmp_path: Path) -> None:
    projects = tmp_path / "p"
    widgets = _repo(projects / "widgets", "git@github.com:acme/widgets.git")
    _git(widgets, "worktree", "add", "-q", "-b", "feat", ".worktrees/feat")
    _git(widgets, "worktree", "add", "-q", "-b", "side", str(tmp_path / "outside/side"))
    inner = widgets / ".worktrees/feat"
    assert (inner / ".git").is_file()
    for roots in ([projects], []):
        facts = derive_checkout(inner, roots)
        assert facts.checkout == inner.resolve()
        assert facts.target_repo == "acme/widgets"
        assert (facts.host_repo_path, facts.component_path) == (inner.resolve(), ".")
        assert facts.project_dir == widgets.resolve()
    side = derive_checkout(tmp_path / "outside/side", [projects])
    assert (side.target_repo, side.project_dir) == ("acme/widgets", widgets.resolve())


def test_engineering_worktree_rolls_up_to_its_host(tmp_path: Path) -> None:
    widgets = _repo(tmp_path / "p/widgets", "git@github.com:acme/widgets.git")
    _git(widgets, "worktree", "add", "-q", "-b", "engineering", ".engineering")
    facts = derive_checkout(widgets / ".engineering")
    assert facts.checkout == (widgets / ".engineering").resolve()
    assert (facts.target_repo, facts.host_repo_path, facts.component_path) == ("acme/widgets", widgets.resolve(), ".")
    assert facts.project_dir == widgets.resolve()


def test_submodule_monorepo(tmp_path: Path) -> None:
    lib = _repo(tmp_path / "src/core", "git@github.com:acme/core.git")
    host = _repo(tmp_path / "p/platform", "git@github.com:acme/platform.git")
    _git(host, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "libs/core")
    _git(host / "libs/core", "remote", "set-url", "origin", "git@github.com:acme/core.git")
    facts = derive_checkout(host / "libs/core", [tmp_path / "p"])
    assert facts.checkout == (host / "libs/core").resolve()
    assert facts.target_repo == "acme/core"
    assert (facts.host_repo_path, facts.component_path, facts.is_monorepo) == (host.resolve(), "libs/core", True)
    assert facts.project_dir == host.resolve()
    top = derive_checkout(host)
    assert (top.target_repo, top.component_path, top.is_monorepo) == ("acme/platform", ".", True)


def test_engineering_submodule_alone_is_not_a_monorepo(tmp_path: Path) -> None:
    host = _repo(tmp_path / "p/app", "git@github.com:acme/app.git")
    (host / ".gitmodules").write_text('[submodule ".engineering"]\n\tpath = .engineering\n\turl = ../eng.git\n')
    assert derive_checkout(host).is_monorepo is False


def test_checkout_errors(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="must be an absolute path"):
        derive_checkout("relative/dir")
    with pytest.raises(SessionStoreError, match=r"WORKSPACE_INVALID.*not inside a git checkout"):
        derive_checkout(tmp_path)
    with pytest.raises(SessionStoreError, match="does not exist"):
        derive_checkout(tmp_path / "missing")


# ------------------------------------------------------------------------------- planning root containment


def test_a_planning_root_through_a_symlinked_engineering_folder_is_refused(tmp_path: Path) -> None:
    # git keeps symlinks: a cloned checkout's .engineering may point anywhere
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / ".engineering").symlink_to(outside)
    s = _settings(tmp_path, WORKFLOW_WORKSPACE=str(workspace))
    root = planning_root(s)
    with pytest.raises(SessionStoreError, match="PLANNING_FOLDER_OUTSIDE_ROOT") as caught:
        ensure_planning_folder(root / "2026-01-01-bug-fix", root, writable_roots(s))
    assert str(outside) in caught.value.message and "nothing was written" in caught.value.message
    assert list(outside.iterdir()) == []


def test_a_symlink_that_stays_under_a_root_and_a_derived_project_are_accepted(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "shared-engineering").mkdir(parents=True)
    (workspace / ".engineering").symlink_to(workspace / "shared-engineering")
    s = _settings(tmp_path, WORKFLOW_WORKSPACE=str(workspace))
    root = planning_root(s)
    ensure_planning_folder(root / "a", root, writable_roots(s))
    assert (workspace / "shared-engineering" / "artifacts" / "planning" / "a").is_dir()
    project = tmp_path / "main-checkout"  # a worktree's main checkout, outside every configured root
    project_root = project_planning_root(s, project)
    ensure_planning_folder(project_root / "b", project_root, writable_roots(s, project))
    assert (project_root / "b").is_dir()
    with pytest.raises(SessionStoreError, match="PLANNING_FOLDER_OUTSIDE_ROOT"):
        ensure_planning_folder(project_root / "c", project_root, writable_roots(s))
