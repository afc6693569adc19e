"""``workflow/repos.py``: every accepted spelling of a repository becomes ``owner/repo``; anything else is named."""

from __future__ import annotations

import pytest

from orchestrator.workflow.errors import ParameterError
from orchestrator.workflow.repos import normalise_repo, repo_basename


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("acme/widgets", "acme/widgets"),
        (" acme/widgets/ ", "acme/widgets"),
        ("git@github.com:acme/widgets.git", "acme/widgets"),
        ("https://github.com/acme/widgets", "acme/widgets"),
        ("https://github.com/acme/widgets.git", "acme/widgets"),
        ("https://user@github.com/acme/my.repo.git/", "acme/my.repo"),
        ("ssh://git@github.com/acme/widgets.git", "acme/widgets"),
        ("github.com/acme/widgets", "acme/widgets"),
    ],
)
def test_normalise_repo(raw: str, expected: str) -> None:
    assert normalise_repo(raw) == expected


@pytest.mark.parametrize("bad", ["widgets", "a/b/c", "https://github.com/acme", "../x", "acme/..", ""])
def test_normalise_repo_rejects_naming_the_value(bad: str) -> None:
    with pytest.raises(ParameterError) as caught:
        normalise_repo(bad)
    assert f"'{bad}'" in caught.value.message


def test_repo_basename_is_the_checkout_folder() -> None:
    assert repo_basename("git@github.com:acme/widgets.git") == "widgets"
