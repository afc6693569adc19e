"""ensure_git_exclude: best effort, idempotent, worktree-aware, never raises."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from orchestrator.tools.gitexclude import EXCLUDE_LINE, ensure_git_exclude


def test_adds_the_line_once(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    assert ensure_git_exclude(tmp_path) is True
    assert ensure_git_exclude(tmp_path) is True
    exclude = tmp_path / ".git" / "info" / "exclude"
    assert exclude.read_text() == f"{EXCLUDE_LINE}\n"


def test_keeps_existing_content_and_respects_an_equivalent_line(tmp_path: Path) -> None:
    info = tmp_path / ".git" / "info"
    info.mkdir(parents=True)
    (info / "exclude").write_text("# comment\n*.log")  # no trailing newline
    ensure_git_exclude(tmp_path)
    assert (info / "exclude").read_text() == f"# comment\n*.log\n{EXCLUDE_LINE}\n"
    (info / "exclude").write_text(".orchestration/\n")
    ensure_git_exclude(tmp_path)
    assert (info / "exclude").read_text() == ".orchestration/\n"


def test_follows_a_worktree_gitdir_file_to_the_common_dir(tmp_path: Path) -> None:
    main_git = tmp_path / "main" / ".git"
    worktree_git = main_git / "worktrees" / "wt"
    worktree_git.mkdir(parents=True)
    (worktree_git / "commondir").write_text("../..\n")
    checkout = tmp_path / "wt"
    checkout.mkdir()
    (checkout / ".git").write_text(f"gitdir: {worktree_git}\n")
    assert ensure_git_exclude(checkout) is True
    assert (main_git / "info" / "exclude").read_text() == f"{EXCLUDE_LINE}\n"
    assert not (worktree_git / "info").exists()


def test_a_relative_gitdir_without_commondir(tmp_path: Path) -> None:
    (tmp_path / "modules" / "sub").mkdir(parents=True)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / ".git").write_text("gitdir: ../modules/sub\n")
    assert ensure_git_exclude(checkout) is True
    assert (tmp_path / "modules" / "sub" / "info" / "exclude").read_text() == f"{EXCLUDE_LINE}\n"


def test_never_raises(tmp_path: Path) -> None:
    assert ensure_git_exclude(tmp_path) is False  # not a repository
    (tmp_path / ".git").write_text("garbage")
    assert ensure_git_exclude(tmp_path) is False
    (tmp_path / ".git").unlink()
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "info").write_text("a file where a folder should be")
    assert ensure_git_exclude(tmp_path) is False
    assert ensure_git_exclude(tmp_path / "missing") is False


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_really_ignores_the_bookkeeping(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".orchestration" / "runs").mkdir(parents=True)
    (tmp_path / ".orchestration" / "runs" / "x").write_text("x")
    (tmp_path / "real.txt").write_text("y")
    ensure_git_exclude(tmp_path)
    status = subprocess.run(
        ["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert status.splitlines() == ["?? real.txt"]
