"""Repository names: the one ``owner/repo`` syntax a repo pin, a ``repo`` argument and a checkout's origin share.

A leaf: pure string work, no imports from the rest of the package, so the server's configuration
(``serverconfig``), the session roots and the tools all read repo names the same way.
"""

from __future__ import annotations

import re

from orchestrator.workflow.errors import ParameterError

__all__ = ["normalise_repo", "repo_basename"]

_NAME = r"[A-Za-z0-9._-]+"
_REPO_PATTERNS = (
    re.compile(rf"(?:https?|ssh|git)://(?:[^@/\s]+@)?[^/\s]+/({_NAME})/({_NAME})"),
    re.compile(rf"[^@\s/:]+@[^:\s/]+:/?({_NAME})/({_NAME})"),
    re.compile(rf"(?:www\.)?github\.com/({_NAME})/({_NAME})"),
    re.compile(rf"({_NAME})/({_NAME})"),
)


def normalise_repo(repo: str) -> str:
    """``owner/repo`` from ``owner/repo``, an https/ssh/git URL or an scp-style ``git@host:owner/repo.git``.

    Raises ``ParameterError`` naming the value when it is none of those.
    """
    value = repo.strip().rstrip("/")
    if value.lower().endswith(".git"):
        value = value[:-4]
    for pattern in _REPO_PATTERNS:
        match = pattern.fullmatch(value)
        if match and all(part not in (".", "..") for part in match.groups()):
            return f"{match.group(1)}/{match.group(2)}"
    raise ParameterError(
        f"repo '{repo}' is not owner/repo or a repository URL "
        "(expected e.g. acme/widgets, https://github.com/acme/widgets or git@github.com:acme/widgets.git)"
    )


def repo_basename(repo: str) -> str:
    """The checkout folder name of a repo (``acme/widgets`` → ``widgets``)."""
    return normalise_repo(repo).split("/")[1]
