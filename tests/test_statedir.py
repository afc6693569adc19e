"""The user's state directory and its key file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.errors import ConfigError
from orchestrator.statedir import read_or_create_key, state_dir


def test_the_state_directory_follows_the_variable_then_xdg_then_home(tmp_path: Path) -> None:
    assert state_dir({"ORCHESTRATOR_STATE_DIR": str(tmp_path / "s")}) == tmp_path / "s"
    assert state_dir({"XDG_STATE_HOME": str(tmp_path / "x")}) == tmp_path / "x" / "orchestrator"
    assert state_dir({"XDG_STATE_HOME": "relative", "HOME": str(tmp_path)}) == (
        tmp_path / ".local" / "state" / "orchestrator"
    )


def test_the_key_is_created_once_private_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "state" / "queue-key"
    key = read_or_create_key(path)
    assert len(key) == 32 and read_or_create_key(path) == key
    assert os.stat(path).st_mode & 0o777 == 0o600 and os.stat(path.parent).st_mode & 0o077 == 0


def test_a_shared_or_broken_key_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "queue-key"
    path.write_text("zz\n")
    path.chmod(0o600)
    with pytest.raises(ConfigError, match="not a key"):
        read_or_create_key(path)
    path.write_text("00" * 32)
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="readable by other users"):
        read_or_create_key(path)


def test_an_unwritable_state_directory_is_a_clear_configuration_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ConfigError, match=r"cannot be created .* ORCHESTRATOR_STATE_DIR"):
        read_or_create_key(blocker / "queue-key")
