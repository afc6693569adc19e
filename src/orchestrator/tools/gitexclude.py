"""Keep the executor's bookkeeping out of git: ``/.orchestration/`` in the repository's info/exclude.

Best effort and idempotent; never raises (a run must not fail over git hygiene).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["EXCLUDE_LINE", "ensure_git_exclude", "git_common_dir"]

EXCLUDE_LINE = "/.orchestration/"
#: Lines that already keep the top-level folder out (any one of them is enough).
_EQUIVALENT = frozenset({"/.orchestration/", "/.orchestration", ".orchestration/", ".orchestration"})


def git_common_dir(workspace: Path) -> Path | None:
    """The git directory whose ``info/exclude`` applies to ``workspace`` (its top level), or ``None``.

    ``.git`` may be a folder, or a file ``gitdir: <path>`` (worktrees, submodules); a worktree's git
    dir names the shared one in its ``commondir`` file, which is where git reads ``info/exclude``.
    """
    dot_git = workspace / ".git"
    if dot_git.is_dir():
        return dot_git
    if not dot_git.is_file():
        return None
    text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
    if not text.startswith("gitdir:"):
        return None
    git_dir = Path(text[len("gitdir:") :].strip())
    if not git_dir.is_absolute():
        git_dir = workspace / git_dir
    if not git_dir.is_dir():
        return None
    common = git_dir / "commondir"
    if common.is_file():
        shared = Path(common.read_text(encoding="utf-8", errors="replace").strip())
        shared = shared if shared.is_absolute() else git_dir / shared
        if shared.is_dir():
            return Path(os.path.normpath(shared))
    return git_dir


def ensure_git_exclude(workspace: Path) -> bool:
    """Make sure ``/.orchestration/`` is excluded; True when it is (already or now), False otherwise.

    Does nothing when the workspace is not the top of a git checkout. Never raises.
    """
    try:
        git_dir = git_common_dir(Path(workspace))
        if git_dir is None:
            return False
        exclude = git_dir / "info" / "exclude"
        try:
            current = exclude.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            current = ""
        if any(line.strip() in _EQUIVALENT for line in current.splitlines()):
            return True
        exclude.parent.mkdir(parents=True, exist_ok=True)
        prefix = "" if not current or current.endswith("\n") else "\n"
        with exclude.open("a", encoding="utf-8") as handle:
            handle.write(f"{prefix}{EXCLUDE_LINE}\n")
        return True
    except Exception:  # best effort by contract: permissions, odd files, anything
        return False
