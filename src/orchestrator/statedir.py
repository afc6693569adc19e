"""The user's state directory, outside every workspace: the trust store and the queue-seal key live here.

``ORCHESTRATOR_STATE_DIR`` sets it; else ``$XDG_STATE_HOME/orchestrator``; else
``~/.local/state/orchestrator``. A checkout cannot carry anything in it, which is the point: what is
kept here is the operator's word, not the repository's. The directory is created mode 0700.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

from orchestrator.errors import ConfigError
from orchestrator.fsutil import fsync_dir

__all__ = ["KEY_BYTES", "STATE_DIR_ENV", "read_or_create_key", "state_dir"]

STATE_DIR_ENV = "ORCHESTRATOR_STATE_DIR"
#: Bytes of randomness in a generated key (256 bits).
KEY_BYTES = 32


def state_dir(env: Mapping[str, str]) -> Path:
    """Where the state lives (not created here; see :func:`read_or_create_key`)."""
    configured = env.get(STATE_DIR_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    xdg = env.get("XDG_STATE_HOME", "").strip()
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "orchestrator"
    home = env.get("HOME", "").strip()
    return (Path(home) if home else Path.home()) / ".local" / "state" / "orchestrator"


def read_or_create_key(path: Path) -> bytes:
    """The secret key at ``path`` (hex text, mode 0600), created once when missing.

    Like the token file: a private temp file is written, fsynced and hard-linked into place (never
    replacing), so two processes starting at once agree on one key. Only a regular file owned by this
    user and private to it is read (opened without following a symlink)."""
    existing = _read_key(path)
    if existing is not None:
        return existing
    try:
        return _create_key(path)
    except OSError as exc:
        raise ConfigError(
            f"key file {path}: cannot be created ({exc.strerror or exc}); set {STATE_DIR_ENV} to a writable directory"
        ) from None


def _create_key(path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = secrets.token_bytes(KEY_BYTES)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.write(fd, f"{key.hex()}\n".encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            raced = _read_key(path)
            if raced is None:  # pragma: no cover - deleted between link and read
                raise ConfigError(f"key file {path}: vanished while it was being created; start again") from None
            return raced
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)
    return key


def _read_key(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
    except (FileNotFoundError, NotADirectoryError):  # no key yet (creating it says what is in the way)
        return None
    except OSError as exc:
        kind = exc.__class__.__name__
        raise ConfigError(f"key file {path}: unreadable ({kind}); delete it to get a new one") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            raise ConfigError(f"key file {path}: not a regular file of this user; delete it to get a new one")
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError(f"key file {path}: readable by other users; run chmod 600 on it")
        raw = os.read(fd, 4096)
    finally:
        os.close(fd)
    try:
        key = bytes.fromhex(raw.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        raise ConfigError(f"key file {path}: not a key; delete it to get a new one") from None
    if len(key) < 16:
        raise ConfigError(f"key file {path}: too short to be a key; delete it to get a new one")
    return key
