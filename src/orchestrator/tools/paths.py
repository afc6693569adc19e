"""Workspace containment for every file tool: canonicalize a path, refuse escapes and ``.orchestration``.

Rules:

* a relative path is taken from the workspace root, an absolute one as given;
* the result is realpath'd: an existing target fully; a missing one through its nearest existing
  ancestor (so a symlinked parent of a file about to be created cannot point outside);
* anything that lands outside the (realpath'd) root → ``invalid_arguments`` "path escapes the workspace";
* a first component that is, or resolves to, the top-level ``.orchestration`` → ``permission_denied``
  (``./.orchestration``, ``a/../.orchestration/x`` and a symlink to it all count).

The checks touch the file system only through ``os.path.realpath``; no file is opened here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from orchestrator.tools.base import ToolError

__all__ = ["ORCHESTRATION", "Resolved", "display_path", "is_bookkeeping", "resolve_path", "workspace_root"]

#: The executor's bookkeeping folder at the top of the workspace.
ORCHESTRATION = ".orchestration"

ESCAPE_MESSAGE = "path escapes the workspace"
BOOKKEEPING_MESSAGE = (
    "the top-level .orchestration folder is the executor's bookkeeping and is off limits to file tools; "
    "use read_plan / write_plan for the plan and read_run_log / search_run_log for the log"
)


@dataclass(frozen=True)
class Resolved:
    """A contained path: ``real`` (absolute, canonical) and ``rel`` (posix, root-relative, ``.`` = root)."""

    real: Path
    rel: str


def workspace_root(workspace: Path | str) -> str:
    """The canonical workspace root every containment check compares against."""
    return os.path.realpath(os.fspath(workspace))


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def display_path(root: str, real: str) -> str:
    """``real`` relative to ``root`` in posix form (``.`` for the root itself)."""
    rel = os.path.relpath(real, root)
    return "." if rel == os.curdir else rel.replace(os.sep, "/")


def is_bookkeeping(rel: str) -> bool:
    """True when a root-relative posix path is ``.orchestration`` or lies under it."""
    return rel.split("/", 1)[0] == ORCHESTRATION


def resolve_path(workspace: Path | str, raw: object) -> Resolved:
    """Canonicalize ``raw`` against the workspace; raises ``ToolError`` when it is not allowed.

    Raises: ``ToolError("invalid_arguments")`` for an empty path, a NUL byte or an escape;
    ``ToolError("permission_denied")`` for the top-level ``.orchestration`` in any spelling.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise ToolError("invalid_arguments", "path must be a non-empty string")
    if "\x00" in raw:
        raise ToolError("invalid_arguments", "path must not contain a NUL byte")
    root = workspace_root(workspace)
    joined = raw if os.path.isabs(raw) else os.path.join(root, raw)
    lexical = os.path.normpath(joined)
    if _inside(root, lexical) and is_bookkeeping(display_path(root, lexical)):
        raise ToolError("permission_denied", BOOKKEEPING_MESSAGE, {"path": raw})
    # Non-strict realpath resolves every existing component (and dangling links) and keeps the
    # missing tail as is: exactly "the nearest existing ancestor, realpath'd".
    real = os.path.realpath(joined)
    if not _inside(root, real):
        raise ToolError("invalid_arguments", ESCAPE_MESSAGE, {"path": raw})
    rel = display_path(root, real)
    if is_bookkeeping(rel):
        raise ToolError("permission_denied", BOOKKEEPING_MESSAGE, {"path": raw})
    return Resolved(real=Path(real), rel=rel)
