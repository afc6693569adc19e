"""The service's access token: where it comes from, how it is kept, how a presented one is compared.

``ORCHESTRATOR_TOKEN`` sets it (at least 16 characters: a shorter one is guessable and too short for
the redactor to scrub); otherwise a random 256-bit token lives in ``<workspace>/.orchestration/token``
(mode 0600). The file is created atomically and never replaced: a private temp file (``O_EXCL``, mode
0600) is written, fsynced and hard-linked into place, so two servers starting at once agree on one token
and a restart keeps it. ``orchestrator mcp --transport http`` keeps its own token the same way
(``load_or_create_token``). The workspace's ``.orchestration`` must be this user's and not writable by
others (``check_orchestration_dir``), a symlink to it included.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import ConfigError
from orchestrator.fsutil import fsync_dir

__all__ = [
    "MIN_TOKEN_CHARS",
    "NO_TOKEN_ENV",
    "TOKEN_ENV",
    "TokenSource",
    "check_orchestration_dir",
    "check_token_value",
    "load_or_create_token",
    "read_token_file",
    "resolve_token",
    "token_matches",
    "token_path",
]

TOKEN_ENV = "ORCHESTRATOR_TOKEN"
#: ``1`` turns the token off (accepted on a loopback bind only; ``serve --no-token`` does the same).
NO_TOKEN_ENV = "ORCHESTRATOR_NO_TOKEN"
#: Bytes of randomness in a generated token (256 bits; the issue's floor is 128).
TOKEN_BYTES = 32
#: The shortest token accepted from the environment (a generated one has 43 characters).
MIN_TOKEN_CHARS = 16


def token_path(workspace: Path) -> Path:
    return workspace / ".orchestration" / "token"


@dataclass(frozen=True)
class TokenSource:
    """The token and where it came from (``ORCHESTRATOR_TOKEN`` or the file's path), for the start-up line."""

    token: str
    origin: str


def resolve_token(workspace: Path, env: Mapping[str, str]) -> TokenSource:
    """``ORCHESTRATOR_TOKEN`` when set (non-blank), else the workspace's token file (created when missing)."""
    configured = env.get(TOKEN_ENV)
    if configured is not None:
        return TokenSource(check_token_value(TOKEN_ENV, configured), TOKEN_ENV)
    check_orchestration_dir(workspace)
    path = token_path(workspace)
    return TokenSource(load_or_create_token(path), str(path))


def check_token_value(name: str, value: str) -> str:
    """``value`` when it can serve as a token set in the variable ``name``, else a ConfigError naming it."""
    if not value.strip():
        raise ConfigError(f"{name} is set but empty; unset it (a token is then generated) or give a value")
    if not all(0x21 <= ord(c) < 0x7F and c not in ';,"\\' for c in value):
        raise ConfigError(f"{name} must be printable ASCII without spaces, quotes, backslashes, ';' or ','")
    if len(value) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"{name} has {len(value)} characters; use at least {MIN_TOKEN_CHARS} (e.g. openssl rand -hex 32), "
            "or unset it to get a generated one"
        )
    return value


def load_or_create_token(path: Path) -> str:
    """The token kept at ``path`` (see :func:`read_token_file`), created atomically when missing."""
    existing = read_token_file(path)
    if existing is not None:
        return existing
    return _create_token_file(path)


def check_orchestration_dir(workspace: Path) -> None:
    """Refuse a ``<workspace>/.orchestration`` (a symlink followed to its target) that another user owns or
    that others (or a group other than the user's own) may write: whoever can write it can swap the token,
    the queue and the run folders. A missing one is fine (it is created mode 0700)."""
    folder = workspace / ".orchestration"
    try:
        info = folder.stat()
    except FileNotFoundError:
        if folder.is_symlink():
            raise ConfigError(f"{folder}: a symbolic link to nothing; remove it") from None
        return
    except OSError as exc:
        raise ConfigError(f"{folder}: unusable ({exc.strerror or exc.__class__.__name__})") from None
    shown = f"{folder} (a link to {folder.resolve()})" if folder.is_symlink() else str(folder)
    if not stat.S_ISDIR(info.st_mode):
        raise ConfigError(f"{shown}: not a directory; remove it")
    if info.st_uid != os.geteuid():
        raise ConfigError(f"{shown}: owned by another user (uid {info.st_uid}); use a directory of your own")
    # group write is the user's own when the group is theirs (a user-private group, umask 002)
    if info.st_mode & stat.S_IWOTH or (info.st_mode & stat.S_IWGRP and info.st_gid != os.getegid()):
        raise ConfigError(
            f"{shown}: writable by other users (mode {stat.S_IMODE(info.st_mode):o}), who could swap the token "
            "and the queue; run chmod 700 on it"
        )


def read_token_file(path: Path) -> str | None:
    """The token stored at ``path``, ``None`` when there is no file; a broken file is a ConfigError.

    Only a regular file owned by this user and private to it counts: the file is opened without following
    a symlink and without blocking (a FIFO planted there would otherwise hang the start), then checked on
    the open descriptor, so what is checked is what is read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if path.is_symlink():
            raise ConfigError(f"token file {path}: is a symbolic link; delete it to get a new one") from None
        raise ConfigError(
            f"token file {path}: unreadable ({exc.__class__.__name__}); delete it to get a new one"
        ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"token file {path}: not a regular file; delete it to get a new one")
        if info.st_uid != os.geteuid():
            raise ConfigError(
                f"token file {path}: owned by another user (uid {info.st_uid}); delete it to get a new one"
            )
        mode = info.st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError(
                f"token file {path}: readable by other users (mode {mode & 0o777:o}); run chmod 600 on it"
            )
        raw = os.read(fd, 4096)
    finally:
        os.close(fd)
    try:
        text = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        raise ConfigError(f"token file {path}: unreadable (UnicodeDecodeError); delete it to get a new one") from None
    if not text or any(c.isspace() for c in text):
        raise ConfigError(f"token file {path}: not a token; delete it to get a new one")
    return text


def _create_token_file(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.write(fd, f"{token}\n".encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # never replaces: a concurrent creator's token wins and we read it
        except FileExistsError:
            existing = read_token_file(path)
            if existing is None:  # pragma: no cover - deleted between link and read
                raise ConfigError(f"token file {path}: vanished while it was being created; start again") from None
            return existing
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)
    return token


def token_matches(presented: str | None, expected: str) -> bool:
    """Constant-time comparison (on bytes, so a non-ASCII guess compares as unequal, never raises)."""
    if presented is None:
        return False
    return hmac.compare_digest(presented.encode("utf-8", "surrogateescape"), expected.encode("utf-8"))
