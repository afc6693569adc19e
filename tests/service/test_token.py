"""The access token: the per-workspace file (0600, atomic, reused), ``ORCHESTRATOR_TOKEN``, comparison."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from orchestrator.errors import ConfigError
from orchestrator.service.token import (
    MIN_TOKEN_CHARS,
    check_orchestration_dir,
    check_token_value,
    load_or_create_token,
    read_token_file,
    resolve_token,
    token_matches,
    token_path,
)


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


@pytest.mark.parametrize("value", ["a", "x" * 15])
def test_a_short_environment_token_is_refused_with_the_fix(tmp_path: Path, value: str) -> None:
    # a short token is guessable, and the redactor leaves values under 8 characters in the text
    with pytest.raises(ConfigError, match=f"{len(value)} characters; use at least {MIN_TOKEN_CHARS}"):
        resolve_token(tmp_path, {"ORCHESTRATOR_TOKEN": value})
    assert check_token_value("WORKFLOW_SERVER_TOKEN", "y" * MIN_TOKEN_CHARS) == "y" * MIN_TOKEN_CHARS


def test_load_or_create_token_keeps_a_token_anywhere(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "http-token"
    first = load_or_create_token(path)
    assert len(first) >= 43 and load_or_create_token(path) == first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o757])
def test_an_orchestration_folder_others_may_write_is_refused_even_through_a_symlink(tmp_path: Path, mode: int) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".orchestration").symlink_to(shared)
    with pytest.raises(ConfigError, match=r"writable by other users.*chmod 700"):
        resolve_token(workspace, {})
    with pytest.raises(ConfigError, match=r"a link to .*shared"):
        check_orchestration_dir(workspace)
    assert list(shared.iterdir()) == []
    shared.chmod(0o700)
    check_orchestration_dir(workspace)  # the user's own private folder behind a link is accepted
    assert resolve_token(workspace, {}).origin == str(token_path(workspace))


def test_an_orchestration_folder_the_users_own_group_may_write_is_accepted(tmp_path: Path) -> None:
    folder = tmp_path / ".orchestration"
    folder.mkdir()
    folder.chmod(0o775)  # umask 002 with a user-private group
    os.chown(folder, -1, os.getegid())
    check_orchestration_dir(tmp_path)
    check_orchestration_dir(tmp_path / "missing")  # no folder yet: nothing to check


def test_an_orchestration_that_is_a_file_or_a_dangling_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / ".orchestration").write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        check_orchestration_dir(tmp_path / "a")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / ".orchestration").symlink_to(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="symbolic link to nothing"):
        check_orchestration_dir(tmp_path / "b")
    assert not (tmp_path / "nowhere").exists()
