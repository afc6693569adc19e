"""One sealed session folder on disk: the seal check on read, the compare-and-swap write, revisions.

A session folder holds ``session.json`` (canonical JSON of the top-level ``SessionFile``, children
embedded) and ``.session-token`` (the hex HMAC of those exact bytes, under the server key). Each function
is synchronous, does small local file I/O, and raises ``SessionStoreError``: ``NOT_FOUND`` (no
``session.json``), ``SEAL_MISMATCH`` (the seal missing or not matching, or bytes that do not decode —
such a folder is never written again), ``FOLDER_OCCUPIED`` (an exclusive write onto a session) and
``SESSION_CONFLICT`` (a compare-and-swap write that lost: another writer got there first). Finding a
folder by index, the transients and promotion are ``store.SessionStore``'s.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec

from orchestrator.workflow.errors import SessionStoreError
from orchestrator.workflow.session import keys
from orchestrator.workflow.session.canonical import canonical_bytes
from orchestrator.workflow.session.fsio import (
    fsync_dir,
    make_private_dirs,
    sweep_orphan_temps,
    write_in_place,
    write_private,
)
from orchestrator.workflow.session.sessionfile import SessionFile

__all__ = [
    "LOCK_FILE",
    "PENDING_SEAL_FILE",
    "SEAL_FILE",
    "SESSION_FILE",
    "folder_lock",
    "occupied",
    "read_revision",
    "revision_of",
    "verified_bytes",
    "write_sealed",
]

SESSION_FILE = "session.json"
SEAL_FILE = ".session-token"
#: the next seal, written just before ``session.json`` is replaced and removed after the seal is
PENDING_SEAL_FILE = ".session-token.next"
#: held (``flock`` exclusive) around every compare-and-swap write of the folder's session
LOCK_FILE = ".session.lock"
_DECODER = msgspec.json.Decoder(SessionFile)


def revision_of(data: bytes) -> str:
    """A session file's revision: a digest of its exact bytes (what a compare-and-swap write compares)."""
    return hashlib.sha256(data).hexdigest()[:32]


def _mismatch(folder: Path, cause: str) -> SessionStoreError:
    return SessionStoreError(
        "SEAL_MISMATCH",
        f"session in {folder} fails its seal check ({cause}); the folder was left untouched. "
        "Stop and tell the user: restore the original session.json bytes (or the server key).",
    )


def occupied(folder: Path) -> SessionStoreError:
    """``FOLDER_OCCUPIED``: a new session may not go where one already is."""
    return SessionStoreError(
        "FOLDER_OCCUPIED",
        f"planning folder {folder} already holds a session; nothing was written. "
        "Choose another planning_slug, or resume that folder with start_session.",
    )


def verified_bytes(folder: Path, key: bytes, *, holding_lock: bool = False) -> bytes:
    """The seal-checked bytes of ``folder``'s ``session.json``.

    Reads take no lock; a pair that does not verify may have been read while another process was between
    its renames, so it is read once more under a shared lock (writers hold the exclusive one) before it is
    called ``SEAL_MISMATCH``. ``holding_lock``: the caller holds the exclusive lock (no writer can be mid-way).
    """
    try:
        return _verified_bytes_unlocked(folder, key)
    except SessionStoreError as exc:
        if holding_lock or exc.code != "SEAL_MISMATCH":
            raise
        try:
            fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            raise exc from None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            return _verified_bytes_unlocked(folder, key)
        finally:
            os.close(fd)


def _verified_bytes_unlocked(folder: Path, key: bytes) -> bytes:
    try:
        data = (folder / SESSION_FILE).read_bytes()
    except FileNotFoundError:
        raise SessionStoreError("NOT_FOUND", f"no {SESSION_FILE} in {folder}") from None
    except OSError as exc:
        raise _mismatch(folder, f"{SESSION_FILE} is unreadable: {exc.strerror or exc}") from None
    try:
        token = (folder / SEAL_FILE).read_bytes()
    except FileNotFoundError:
        if _pending_seal_matches(folder, key, data):  # a first write cut before its seal landed
            return data
        raise _mismatch(folder, f"the seal file {SEAL_FILE} is missing") from None
    except OSError as exc:
        raise _mismatch(folder, f"{SEAL_FILE} is unreadable: {exc.strerror or exc}") from None
    if not keys.verify_seal(key, data, token) and not _pending_seal_matches(folder, key, data):
        raise _mismatch(folder, f"{SESSION_FILE} does not match {SEAL_FILE}")
    return data


def _pending_seal_matches(folder: Path, key: bytes, data: bytes) -> bool:
    """Whether a crash cut a write between its two renames: the seal written ahead of the new
    ``session.json`` (``PENDING_SEAL_FILE``) signs exactly these bytes. Only our key can have made
    it, so accepting it admits nothing a forger could; the next write replaces both seals."""
    try:
        return keys.verify_seal(key, data, (folder / PENDING_SEAL_FILE).read_bytes())
    except OSError:
        return False


def read_revision(folder: Path, key: bytes, *, holding_lock: bool = False) -> tuple[SessionFile, str]:
    """The verified top-level session in ``folder`` (seal checked over the raw bytes, then decoded) and the
    revision of the bytes read. ``holding_lock``: as for ``verified_bytes``."""
    data = verified_bytes(folder, key, holding_lock=holding_lock)
    try:
        return _DECODER.decode(data), revision_of(data)
    except (msgspec.MsgspecError, RecursionError, ValueError) as exc:
        raise _mismatch(folder, f"{SESSION_FILE} is not a valid session file: {exc}") from None


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive ``flock`` on the folder's lock file (processes sharing the folder serialise here)."""
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def write_sealed(
    folder: Path, top: SessionFile, key: bytes, *, exclusive: bool = False, expected: str = "", durable: bool = True
) -> bytes:
    """Write ``top`` to ``folder`` (session.json, then the seal; each atomic). Returns the bytes.

    Creates the folder (0700). Refuses with ``SEAL_MISMATCH`` when the folder already holds a
    session that fails its seal or does not decode. ``exclusive`` requires that no ``session.json`` exists yet
    (``FOLDER_OCCUPIED`` otherwise, nothing written). ``expected`` (a revision) makes the write a
    compare-and-swap: under the folder's lock, a file whose revision differs is ``SESSION_CONFLICT``
    and nothing is written. Raises ``CanonicalJsonError`` for a value with no JSON form (e.g. a NaN
    variable). ``seq``/``ts`` are the caller's (``sessionfile.touch``). ``durable=False`` skips fsync
    (the write stays atomic; a power loss may lose it).

    Durability: one fsync'd write per save. Only ``session.json`` goes through a temp file, fsync and
    rename; the two 64-byte seal files are written in place, which the pending seal makes safe: a torn
    new pending seal sits beside the untouched old pair, and a torn seal beside a complete pending one
    that signs the new bytes (see ``_pending_seal_matches``). One directory fsync at the end makes the
    rename and the unlink durable together.
    """
    data = canonical_bytes(top)
    target = folder / SESSION_FILE
    if exclusive and os.path.lexists(target):
        raise occupied(folder)
    make_private_dirs(folder)
    with folder_lock(folder):
        if not exclusive and os.path.lexists(target):
            # A failing folder is never overwritten: bytes whose revision is the one the caller decoded
            # need only their seal checked; anything else is decoded too.
            current = (
                revision_of(verified_bytes(folder, key, holding_lock=True))
                if expected
                else read_revision(folder, key, holding_lock=True)[1]
            )
            if expected and current != expected:
                raise SessionStoreError(
                    "SESSION_CONFLICT",
                    f"the session in {folder} was changed by another call after this one read it; nothing "
                    "was written. Read its state again (get_workflow_status) and repeat the call if it "
                    "still applies.",
                )
        sweep_orphan_temps(folder)  # a writer killed mid-write (kill -9) left its temp file behind
        token = keys.seal(key, data).encode("ascii")
        # The new seal goes down first beside the old one, so a crash between the session.json rename
        # and the seal rename leaves a folder that still verifies (see ``_pending_seal_matches``).
        pending = folder / PENDING_SEAL_FILE
        if os.path.lexists(pending):  # left by a crash and perhaps vouching for the current bytes: replace
            write_private(pending, token, durable=False)  # it atomically, never tear it
        else:
            write_in_place(pending, token)
        try:
            write_private(target, data, exclusive=exclusive, durable=durable, sync_dir=False)
        except FileExistsError:
            pending.unlink(missing_ok=True)
            raise occupied(folder) from None
        write_in_place(folder / SEAL_FILE, token)
        pending.unlink(missing_ok=True)
        if durable:
            fsync_dir(folder)
    return data
