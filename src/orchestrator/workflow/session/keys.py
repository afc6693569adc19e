"""The server key, seals and session indexes.

Key: 32 random bytes in ``<key_dir>/secret``. ``load_or_create_key`` creates it on first use,
exclusively: the bytes go to a private temp file that is then hard-linked into place, so two
processes racing to create it agree on one key and nobody ever reads a half-written file (where the
filesystem has no hard links, ``O_EXCL`` on the final name is used). Directory 0700, file 0600.
A key file of the wrong length is fatal (``WorkspaceConfigError``): silently replacing it would turn
every existing session into ``SEAL_MISMATCH``. So is a key file that is a symlink, a FIFO or anything but
a regular file (it is opened without following a link and without blocking, and checked on the open
descriptor), and a key directory another user owns or others may write (they could swap the key).

Seal: lowercase hex HMAC-SHA256(key, exact bytes). Index: the first 30 bits of
HMAC-SHA256(key, text) as RFC 4648 base32 (6 characters); a root session hashes ``realpath(folder)``,
a child hashes ``"<realpath(top folder)>:triggeredWorkflows.<i>.state[.triggeredWorkflows.<j>.state…]"``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

from orchestrator.workflow.errors import SessionStoreError, WorkspaceConfigError
from orchestrator.workflow.session.fsio import make_private_dirs

__all__ = [
    "KEY_BYTES",
    "KEY_FILE_NAME",
    "LazyKey",
    "check_index",
    "check_key_dir",
    "child_index",
    "derive_index",
    "hmac_hex",
    "load_or_create_key",
    "root_index",
    "seal",
    "slot_path_text",
    "verify_seal",
]

KEY_FILE_NAME = "secret"
KEY_BYTES = 32
_INDEX_RE = re.compile(r"[A-Z2-7]{6}")


def check_key_file(path: Path, info: os.stat_result) -> None:
    """Refuse a key file another user owns or that group/other may read or write, naming the fix."""
    if info.st_uid != os.geteuid():
        raise WorkspaceConfigError(
            f"server key {path} is owned by uid {info.st_uid}, not by this user (uid {os.geteuid()}); run "
            f"`chown {os.geteuid()} {path}` if it is yours, or point WORKFLOW_SERVER_KEY_DIR at your own key"
        )
    if info.st_mode & 0o077:
        raise WorkspaceConfigError(
            f"server key {path} has mode {stat.S_IMODE(info.st_mode):04o}: group or other may read it; run "
            f"`chmod 600 {path}` (and `chmod 700 {path.parent}`)"
        )


def check_key_dir(key_dir: Path, info: os.stat_result) -> None:
    """Refuse a key directory (a symlink followed) another user owns, or that others may write — or a group
    other than the user's own (a user-private group with umask 002 is the user): whoever may write it can
    replace the key and forge every seal."""
    if info.st_uid != os.geteuid():
        raise WorkspaceConfigError(
            f"server key directory {key_dir} is owned by uid {info.st_uid}, not by this user (uid {os.geteuid()}); "
            "point WORKFLOW_SERVER_KEY_DIR at a directory of your own"
        )
    if info.st_mode & stat.S_IWOTH or (info.st_mode & stat.S_IWGRP and info.st_gid != os.getegid()):
        raise WorkspaceConfigError(
            f"server key directory {key_dir} has mode {stat.S_IMODE(info.st_mode):04o}: other users may replace "
            f"the key in it; run `chmod 700 {key_dir}`"
        )


def _read_key(path: Path) -> bytes:
    try:
        check_key_dir(path.parent, os.stat(path.parent))
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if os.path.islink(path):
            raise WorkspaceConfigError(
                f"server key {path} is a symbolic link; replace it with the key file itself (a link can point "
                "the server at a key someone else chose)"
            ) from None
        raise WorkspaceConfigError(f"cannot read the server key {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise WorkspaceConfigError(f"server key {path} is not a regular file; restore the key file")
        check_key_file(path, info)
        data = os.read(fd, 4096)
    except OSError as exc:
        raise WorkspaceConfigError(f"cannot read the server key {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) != KEY_BYTES:
        raise WorkspaceConfigError(
            f"server key {path} holds {len(data)} bytes, expected {KEY_BYTES}; "
            "restore the original key (a new one would break every sealed session)"
        )
    return data


def load_or_create_key(key_dir: Path) -> bytes:
    """The 32-byte server key in ``key_dir/secret``, created (exclusively) if absent.

    Raises ``WorkspaceConfigError`` naming the path when the directory is unusable or the file has
    the wrong length.
    """
    path = key_dir / KEY_FILE_NAME
    if os.path.lexists(path):  # a dangling symlink too: it is refused, never written through
        return _read_key(path)
    try:
        make_private_dirs(key_dir)
        check_key_dir(key_dir, os.stat(key_dir))  # before a key is written where others could swap it
        tmp = key_dir / f".{KEY_FILE_NAME}.{os.getpid()}.{secrets.token_hex(6)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, secrets.token_bytes(KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process won the race; use its key
        except OSError:
            _create_excl(path)
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as exc:
        raise WorkspaceConfigError(
            f"cannot create the server key in {key_dir}: {exc.strerror or exc} "
            "(set WORKFLOW_SERVER_KEY_DIR to a writable directory)"
        ) from None
    return _read_key(path)


def _create_excl(path: Path) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    try:
        os.write(fd, secrets.token_bytes(KEY_BYTES))
        os.fsync(fd)
    finally:
        os.close(fd)


class LazyKey:
    """The key, loaded (or created) on first ``get()`` and cached."""

    def __init__(self, key_dir: Path, loader: Callable[[Path], bytes] = load_or_create_key) -> None:
        self.key_dir = key_dir
        self._loader = loader
        self._key: bytes | None = None

    def get(self) -> bytes:
        if self._key is None:
            self._key = self._loader(self.key_dir)
        return self._key


def hmac_hex(key: bytes, data: bytes) -> str:
    """Lowercase hex HMAC-SHA256."""
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def seal(key: bytes, data: bytes) -> str:
    """The seal of exact file bytes (what ``.session-token`` holds)."""
    return hmac_hex(key, data)


def verify_seal(key: bytes, data: bytes, token: bytes) -> bool:
    """Constant-time check of a stored token (surrounding whitespace ignored) against ``data``."""
    return hmac.compare_digest(seal(key, data).encode("ascii"), token.strip())


def derive_index(key: bytes, text: str) -> str:
    """Six base32 characters: the first 30 bits (MSB-first) of HMAC-SHA256(key, text)."""
    digest = hmac.new(key, text.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
    return base64.b32encode(digest[:5]).decode("ascii")[:6]


def slot_path_text(path: tuple[int, ...]) -> str:
    """``(0, 2)`` → ``triggeredWorkflows.0.state.triggeredWorkflows.2.state``."""
    return ".".join(f"triggeredWorkflows.{slot}.state" for slot in path)


def root_index(key: bytes, folder: Path) -> str:
    """The index of the top-level session stored in ``folder``."""
    return derive_index(key, os.path.realpath(folder))


def child_index(key: bytes, top_folder: Path, path: tuple[int, ...]) -> str:
    """The index of the child embedded at slot ``path`` of the file in ``top_folder``."""
    if not path:
        return root_index(key, top_folder)
    return derive_index(key, f"{os.path.realpath(top_folder)}:{slot_path_text(path)}")


def check_index(index: object) -> str:
    """``index`` if it is six characters of ``A-Z2-7``, else ``SessionStoreError('INVALID_INDEX')``."""
    if not isinstance(index, str) or not _INDEX_RE.fullmatch(index):
        raise SessionStoreError(
            "INVALID_INDEX",
            f"session_index {index!r} is not a session index: expected 6 characters of A-Z and 2-7, "
            "as returned by start_session",
        )
    return index
