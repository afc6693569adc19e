"""``orchestrator init [DIR]``: copy the packaged defaults into a workspace, where they can be edited.

What lands where (relative to DIR): the Guild in ``guild/``, the deployment file in
``deployment/deployment.json`` and, when asked, the workflows in ``workflows/``. These are the paths
the configuration lookup checks in a workspace (``orchestrator.config.locate_config``) and the folder
``orchestrator mcp`` picks up in its working directory.

Nothing existing is overwritten silently: without ``force`` the whole copy is refused (nothing is
written) when any target exists; with ``force`` each existing target is first renamed aside to
``<name>.replaced-<UTC timestamp>``, so nothing is lost. Each target appears whole or not at all: it is
built under a temporary name beside its final place, flushed, and renamed into place.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.defaults import PackagedName, packaged_path
from orchestrator.fsutil import fsync_dir

__all__ = ["Copied", "InitRefused", "init_targets", "init_workspace"]


class InitRefused(Exception):
    """A target already exists and ``force`` was not given; ``existing`` lists them all."""

    def __init__(self, existing: list[Path]) -> None:
        super().__init__(", ".join(str(path) for path in existing))
        self.existing = existing


@dataclass(frozen=True)
class Copied:
    """One target written: what it is, where it went, and where an older copy was moved (``--force``)."""

    what: str
    target: Path
    kept_as: Path | None


def init_targets(directory: Path, *, workflows: bool) -> list[tuple[str, Path, Path]]:
    """``(what, source, target)`` for every item ``init`` copies into ``directory``."""
    items: list[tuple[str, PackagedName, Path, Path]] = [
        ("Guild", "guild", Path(), Path("guild")),
        ("deployment file", "deployment", Path("deployment.json"), Path("deployment/deployment.json")),
    ]
    if workflows:
        items.append(("workflows", "workflows", Path(), Path("workflows")))
    return [(what, packaged_path(name) / inner, directory / target) for what, name, inner, target in items]


def init_workspace(
    directory: Path, *, force: bool, workflows: bool = False, now: datetime | None = None
) -> list[Copied]:
    """Copy the packaged defaults into ``directory`` (created when missing); see the module text.

    Raises ``InitRefused`` (before writing anything) when a target exists and ``force`` is false, and
    ``OSError`` when the filesystem refuses.
    """
    plan = init_targets(directory, workflows=workflows)
    existing = [target for _, _, target in plan if target.exists() or target.is_symlink()]
    if existing and not force:
        raise InitRefused(existing)
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    copied = []
    for what, source, target in plan:
        target.parent.mkdir(parents=True, exist_ok=True)
        staged = target.with_name(f".{target.name}.{os.getpid()}.init-tmp")
        _remove(staged)
        if source.is_dir():
            shutil.copytree(source, staged)
            _flush_tree(staged)
        else:
            shutil.copyfile(source, staged)
            _flush(staged)
        kept_as = None
        if target.exists() or target.is_symlink():
            kept_as = target.with_name(f"{target.name}.replaced-{stamp}")
            target.rename(kept_as)
        staged.rename(target)
        fsync_dir(target.parent)
        copied.append(Copied(what, target, kept_as))
    return copied


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _flush(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _flush_tree(root: Path) -> None:
    for folder, _, files in os.walk(root):
        for name in files:
            _flush(Path(folder) / name)
        fsync_dir(Path(folder))
