"""The access token: the per-workspace file (0600, atomic, reused), ``ORCHESTRATOR_TOKEN``, comparison."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from orchestrator.errors import ConfigError
from orchestrator.service.token import read_token_file, resolve_token, token_matches, token_path


def test_a_generated_token_is_private_long_and_kept(tmp_path: Path) -> None:
    first = resolve_token(tmp_path, {})
    path = token_path(tmp_path)
    assert first.origin == str(path)
    assert len(first.token) >= 22  # ≥ 128 bits of urlsafe base64 (it is 256)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert resolve_token(tmp_path, {}).token == first.token  # a restart keeps it
    assert [p.name for p in path.parent.iterdir()] == ["token"]  # no temp file left behind


def test_two_workspaces_get_different_tokens(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert resolve_token(tmp_path / "a", {}).token != resolve_token(tmp_path / "b", {}).token


def test_the_environment_wins_and_writes_nothing(tmp_path: Path) -> None:
    source = resolve_token(tmp_path, {"ORCHESTRATOR_TOKEN": "from-the-env-123"})
    assert (source.token, source.origin) == ("from-the-env-123", "ORCHESTRATOR_TOKEN")
    assert not token_path(tmp_path).exists()


@pytest.mark.parametrize("value", ["", "   ", "has space", "semi;colon", 'quo"te', "ünicode"])
def test_a_bad_environment_token_is_named(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match="ORCHESTRATOR_TOKEN"):
        resolve_token(tmp_path, {"ORCHESTRATOR_TOKEN": value})


def test_a_readable_token_file_is_refused_with_the_fix(tmp_path: Path) -> None:
    resolve_token(tmp_path, {})
    path = token_path(tmp_path)
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        resolve_token(tmp_path, {})


def test_a_broken_token_file_is_named(tmp_path: Path) -> None:
    path = token_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("two words\n")
    path.chmod(0o600)
    with pytest.raises(ConfigError, match="not a token"):
        read_token_file(path)


def test_concurrent_creators_agree_on_one_token(tmp_path: Path) -> None:
    tokens: list[str] = []
    barrier = threading.Barrier(8)

    def create() -> None:
        barrier.wait()
        tokens.append(resolve_token(tmp_path, {}).token)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(tokens)) == 1
    assert token_path(tmp_path).read_text().strip() == tokens[0]
    assert sorted(os.listdir(token_path(tmp_path).parent)) == ["token"]


def test_comparison() -> None:
    assert token_matches("abc", "abc")
    assert not token_matches("abd", "abc")
    assert not token_matches("", "abc")
    assert not token_matches(None, "abc")
    assert not token_matches("ab\udcff", "abc")  # undecodable input compares unequal, never raises


def test_a_planted_fifo_symlink_or_directory_is_refused_without_hanging(tmp_path: Path) -> None:
    # Whoever can write the workspace's .orchestration/ before the first start must not hang the start
    # (a FIFO blocks a plain read forever) nor choose the token (a symlink to a file they know).
    known = tmp_path / "known"
    known.write_text("attacker-knows-this\n")
    known.chmod(0o600)
    for kind, plant, message in [
        ("fifo", lambda p: os.mkfifo(p, 0o600), "not a regular file"),
        ("symlink", lambda p: p.symlink_to(known), "symbolic link"),
        ("dangling", lambda p: p.symlink_to(tmp_path / "nowhere"), "symbolic link"),
        ("directory", lambda p: p.mkdir(), "unreadable|not a regular file"),
    ]:
        workspace = tmp_path / kind
        path = token_path(workspace)
        path.parent.mkdir(parents=True)
        plant(path)
        with pytest.raises(ConfigError, match=message):
            resolve_token(workspace, {})
        assert not (tmp_path / "nowhere").exists()  # nothing was written through the dangling link


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_token_file_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    resolve_token(tmp_path, {})
    os.chown(token_path(tmp_path), 4242, -1)
    with pytest.raises(ConfigError, match="owned by another user"):
        resolve_token(tmp_path, {})
