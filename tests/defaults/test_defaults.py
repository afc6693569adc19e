"""``orchestrator.defaults``: the packaged Guild, deployment file and workflows, found through importlib.resources.

In this checkout (and its editable install) the package's three entries are symlinks to the repository's
top-level folders, so the packaged defaults are those folders; the wheel's real copies are checked by
``test_wheel.py``.
"""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import pytest
from tests.helpers import REPO

from orchestrator import defaults
from orchestrator.config import load_settings
from orchestrator.defaults import PACKAGED, packaged_path
from orchestrator.workflow.serverconfig import BUNDLED_WORKFLOW_DIR

DEFAULTS = REPO / "src" / "orchestrator" / "defaults"


@pytest.mark.parametrize("name", PACKAGED)
def test_each_packaged_default_is_a_relative_link_to_the_top_level_folder(name: str) -> None:
    link = DEFAULTS / name
    assert link.is_symlink(), f"{link} must be a symlink, not a second copy"
    assert not os.readlink(link).startswith("/"), "a relative link survives a move of the checkout"
    assert packaged_path(name) == REPO / name


def test_the_packaged_guild_and_deployment_load_together(tmp_path: Path) -> None:
    settings = load_settings(
        packaged_path("guild"), packaged_path("deployment") / "deployment.json", {}, secrets_dir=tmp_path
    )
    assert settings.guild.entry_role == "orchestrator" and len(settings.guild.roles) >= 10


def test_the_workflow_server_default_is_the_packaged_workflows() -> None:
    assert packaged_path("workflows") == BUNDLED_WORKFLOW_DIR
    assert (BUNDLED_WORKFLOW_DIR / "meta" / "workflow.yaml").is_file()


def test_a_zip_imported_package_is_refused_with_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    # What importlib.resources hands out for a package imported from a zip file: a Traversable, not a Path.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("orchestrator/defaults/guild/guild.json", "{}")
    in_zip = zipfile.Path(zipfile.ZipFile(buffer), "orchestrator/defaults/")
    monkeypatch.setattr(defaults.resources, "files", lambda _package: in_zip)
    with pytest.raises(RuntimeError, match="packaged guild/ is not on a filesystem"):
        packaged_path("guild")


def test_a_checkout_says_its_packaged_defaults_are_its_own_folders() -> None:
    assert all(defaults.from_checkout(name) for name in PACKAGED)  # the wheel's copies: test_wheel.py
