"""The server key's file and directory: what ``load_or_create_key`` refuses to read or write.

(Creation, races, length and mode of the key file itself are in ``test_store.py``'s key section.)
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from tests.slowness import budget

from orchestrator.workflow.errors import WorkspaceConfigError
from orchestrator.workflow.session.keys import KEY_BYTES, load_or_create_key


def _private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700)
    return path


def test_a_symlinked_key_file_is_refused_even_to_a_private_key(tmp_path: Path) -> None:
    chosen = _private_dir(tmp_path / "chosen") / "known-key"
    chosen.write_bytes(b"k" * KEY_BYTES)  # a key whoever planted the link knows
    chosen.chmod(0o600)
    key_dir = _private_dir(tmp_path / "keys")
    (key_dir / "secret").symlink_to(chosen)
    with pytest.raises(WorkspaceConfigError, match="is a symbolic link"):
        load_or_create_key(key_dir)


def test_a_dangling_key_symlink_is_refused_and_never_written_through(tmp_path: Path) -> None:
    key_dir = _private_dir(tmp_path / "keys")
    target = tmp_path / "elsewhere"
    (key_dir / "secret").symlink_to(target)
    with pytest.raises(WorkspaceConfigError, match="is a symbolic link"):
        load_or_create_key(key_dir)
    assert not target.exists()


def test_a_fifo_key_is_refused_without_blocking(tmp_path: Path) -> None:
    key_dir = _private_dir(tmp_path / "keys")
    os.mkfifo(key_dir / "secret", 0o600)
    outcome: list[BaseException | bytes] = []

    def load() -> None:
        try:
            outcome.append(load_or_create_key(key_dir))
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=load, daemon=True)  # a blocking open would never return
    worker.start()
    worker.join(budget(10))
    assert outcome, "load_or_create_key blocked on a FIFO"
    assert isinstance(outcome[0], WorkspaceConfigError) and "not a regular file" in outcome[0].message


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o703])
def test_a_key_directory_others_may_write_is_refused_before_and_after_the_key_exists(tmp_path: Path, mode: int) -> None:
    key_dir = _private_dir(tmp_path / "keys")
    key_dir.chmod(mode)
    with pytest.raises(WorkspaceConfigError, match=f"chmod 700 {key_dir}"):
        load_or_create_key(key_dir)
    assert list(key_dir.iterdir()) == []  # no key was written where it could be swapped
    key_dir.chmod(0o700)
    key = load_or_create_key(key_dir)
    key_dir.chmod(mode)
    with pytest.raises(WorkspaceConfigError, match=f"{mode:04o}"):
        load_or_create_key(key_dir)
    key_dir.chmod(0o700)
    assert load_or_create_key(key_dir) == key


def test_a_symlinked_key_directory_is_judged_by_its_target(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (tmp_path / "keys").symlink_to(shared)
    with pytest.raises(WorkspaceConfigError, match="other users may replace"):
        load_or_create_key(tmp_path / "keys")
    shared.chmod(0o700)
    assert len(load_or_create_key(tmp_path / "keys")) == KEY_BYTES


def test_the_users_own_group_may_write_the_key_directory(tmp_path: Path) -> None:
    key_dir = _private_dir(tmp_path / "keys")
    key_dir.chmod(0o770)  # umask 002 with a user-private group
    os.chown(key_dir, -1, os.getegid())
    assert len(load_or_create_key(key_dir)) == KEY_BYTES
    assert stat.S_IMODE(key_dir.stat().st_mode) == 0o770


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
def test_a_key_directory_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    key_dir = _private_dir(tmp_path / "keys")
    os.chown(key_dir, 4242, -1)
    with pytest.raises(WorkspaceConfigError, match="owned by uid 4242"):
        load_or_create_key(key_dir)
