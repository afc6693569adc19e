"""Sealed session folders: read, write, locate by index, transients and their promotion.

A session folder holds ``session.json`` (canonical JSON of the top-level ``SessionFile``, children
embedded) and ``.session-token`` (the hex HMAC of those exact bytes). Every method is synchronous,
does small local file I/O, and raises ``SessionStoreError`` with one of these codes:

- ``NOT_FOUND``: no ``session.json`` in the folder / no session with that index anywhere.
- ``SEAL_MISMATCH``: the token is missing or does not match the bytes, or the bytes are not a valid
  ``SessionFile`` (bad JSON, unknown history type, wrong field type…). The message names the folder.
  Such a folder is never written again by this store (``write`` checks the existing seal first).
- ``INVALID_INDEX`` (malformed index), ``COLLISION`` (an index stored more than once),
  ``FOLDER_OCCUPIED`` (promotion onto a folder that already holds a session; nothing is touched).
- ``SESSION_CONFLICT``: another call (in this process or another one sharing the folder) wrote the
  session after this call read it; nothing was written (compare-and-swap on the file's revision under
  an exclusive ``flock`` of the folder's ``.session.lock``).

Lookup is by the *stored* ``sessionIndex``: this store's transient map first, then its index→folder
cache (re-verified against the file on every use), then a recursive scan of every ``session.json``
under the search roots, matching the top-level index and each embedded child's. The store instance
owns the transient map and the cache; nothing is global.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import msgspec

from orchestrator.workflow.errors import SessionStoreError
from orchestrator.workflow.serverconfig import WorkflowSettings
from orchestrator.workflow.session import keys
from orchestrator.workflow.session.canonical import canonical_bytes
from orchestrator.workflow.session.fsio import (
    fsync_dir,
    make_private_dirs,
    sweep_orphan_temps,
    write_in_place,
    write_private,
)
from orchestrator.workflow.session.probe import stored_indexes
from orchestrator.workflow.session.roots import search_roots, validate_slug
from orchestrator.workflow.session.sessionfile import (
    SessionFile,
    SlotPath,
    find_index,
    replace_at,
    state_at,
    walk_sessions,
)

__all__ = [
    "LOCK_FILE",
    "PENDING_SEAL_FILE",
    "SEAL_FILE",
    "SESSION_FILE",
    "TRANSIENT_PREFIX",
    "SessionHandle",
    "SessionStore",
    "revision_of",
]

SESSION_FILE = "session.json"
SEAL_FILE = ".session-token"
#: the planning roots ``add_search_root`` learned, kept beside the key (see ``SessionStore``)
ROOTS_FILE = "planning-roots.json"
#: the next seal, written just before ``session.json`` is replaced and removed after the seal is
PENDING_SEAL_FILE = ".session-token.next"
#: held (``flock`` exclusive) around every compare-and-swap write of the folder's session
LOCK_FILE = ".session.lock"
TRANSIENT_PREFIX = "workflow-server-transient-"
#: a transient's planning slug (given at start), read by any process that adopts the transient
TRANSIENT_SLUG_FILE = ".planning-slug"
_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__"})
_DECODER = msgspec.json.Decoder(SessionFile)


class SessionHandle(msgspec.Struct, frozen=True, kw_only=True):
    """A located session: the folder, its verified top-level file, and the slot path to the session."""

    folder: Path
    top: SessionFile
    path: SlotPath = ()
    transient: bool = False
    #: ``revision_of`` the bytes ``top`` was read from ("" when unknown: the write is not compared)
    revision: str = ""

    @property
    def state(self) -> SessionFile:
        """The addressed session (``top`` itself when ``path`` is ``()``)."""
        return state_at(self.top, self.path)

    @property
    def index(self) -> str:
        return self.state.session_index


def revision_of(data: bytes) -> str:
    """A session file's revision: a digest of its exact bytes (what a compare-and-swap write compares)."""
    return hashlib.sha256(data).hexdigest()[:32]


class _Transient(NamedTuple):
    folder: Path
    slug: str | None


class SessionStore:
    """Session folders under the configured roots plus this process's transient folders.

    ``key`` is the server key, or a ``keys.LazyKey`` resolved on first use. ``roots`` replaces the
    search roots derived from ``settings`` (tests); ``add_search_root`` adds one at run time and, with
    derived roots, remembers it in ``<key dir>/planning-roots.json`` so a restarted server still finds the
    sessions it opened under a ``working_directory`` project (a missing or malformed file is no roots).
    ``durable=False`` skips fsync (writes stay atomic; a power loss may lose the latest write).
    """

    def __init__(
        self,
        settings: WorkflowSettings,
        key: bytes | keys.LazyKey,
        *,
        roots: Sequence[Path] | None = None,
        durable: bool = True,
    ) -> None:
        self.settings = settings
        self.durable = durable
        self._key_source = key
        self._roots = list(roots) if roots is not None else None
        self._extra_roots: list[Path] = self._remembered_roots() if roots is None else []
        self._transients: dict[str, _Transient] = {}
        self._cache: dict[str, Path] = {}

    # ------------------------------------------------------------------------------ keys, indexes

    @property
    def key(self) -> bytes:
        source = self._key_source
        return source.get() if isinstance(source, keys.LazyKey) else source

    def root_index(self, folder: Path) -> str:
        """The index a top-level session created in ``folder`` gets."""
        return keys.root_index(self.key, folder)

    def child_index(self, top_folder: Path, path: SlotPath) -> str:
        """The index a child created at slot ``path`` of ``top_folder``'s file gets."""
        return keys.child_index(self.key, top_folder, path)

    def search_roots(self) -> list[Path]:
        """The folders ``locate`` scans (existing ones only)."""
        base = self._roots if self._roots is not None else search_roots(self.settings)
        return [root for root in [*base, *self._extra_roots] if root.is_dir()]

    def add_search_root(self, root: Path) -> None:
        """Also scan ``root`` from now on (e.g. a project's planning root opened via ``working_directory``),
        in this process and, with derived roots, after a restart."""
        if all(os.path.realpath(root) != os.path.realpath(known) for known in self._extra_roots):
            self._extra_roots.append(root)
            if self._roots is None:
                self._remember_roots()

    def _roots_file(self) -> Path:
        return self.settings.key_dir / ROOTS_FILE

    def _remembered_roots(self) -> list[Path]:
        try:
            listed = msgspec.json.decode(self._roots_file().read_bytes(), type=list[str])
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            return []
        return [Path(item) for item in listed if os.path.isabs(item)]

    def _remember_roots(self) -> None:
        """Best effort: an unwritable key dir only costs finding these sessions after a restart."""
        try:
            make_private_dirs(self.settings.key_dir)
            data = msgspec.json.encode(sorted({str(root) for root in self._extra_roots}))
            write_private(self._roots_file(), data, durable=self.durable)
        except OSError:
            pass

    # ------------------------------------------------------------------------------ read / write

    def _mismatch(self, folder: Path, cause: str) -> SessionStoreError:
        return SessionStoreError(
            "SEAL_MISMATCH",
            f"session in {folder} fails its seal check ({cause}); the folder was left untouched. "
            "Stop and tell the user: restore the original session.json bytes (or the server key).",
        )

    def _verified_bytes(self, folder: Path) -> bytes:
        """The seal-checked bytes. Reads take no lock; a pair that does not verify may have been read while
        another process was between its renames, so it is read once more under a shared lock (writers hold
        the exclusive one) before it is called ``SEAL_MISMATCH``."""
        try:
            return self._verified_bytes_unlocked(folder)
        except SessionStoreError as exc:
            if exc.code != "SEAL_MISMATCH":
                raise
            try:
                fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
            except OSError:
                raise exc from None
            try:
                fcntl.flock(fd, fcntl.LOCK_SH)
                return self._verified_bytes_unlocked(folder)
            finally:
                os.close(fd)

    def _verified_bytes_unlocked(self, folder: Path) -> bytes:
        try:
            data = (folder / SESSION_FILE).read_bytes()
        except FileNotFoundError:
            raise SessionStoreError("NOT_FOUND", f"no {SESSION_FILE} in {folder}") from None
        except OSError as exc:
            raise self._mismatch(folder, f"{SESSION_FILE} is unreadable: {exc.strerror or exc}") from None
        try:
            token = (folder / SEAL_FILE).read_bytes()
        except FileNotFoundError:
            if self._pending_seal_matches(folder, data):  # a first write cut before its seal landed
                return data
            raise self._mismatch(folder, f"the seal file {SEAL_FILE} is missing") from None
        except OSError as exc:
            raise self._mismatch(folder, f"{SEAL_FILE} is unreadable: {exc.strerror or exc}") from None
        if not keys.verify_seal(self.key, data, token) and not self._pending_seal_matches(folder, data):
            raise self._mismatch(folder, f"{SESSION_FILE} does not match {SEAL_FILE}")
        return data

    def _pending_seal_matches(self, folder: Path, data: bytes) -> bool:
        """Whether a crash cut a write between its two renames: the seal written ahead of the new
        ``session.json`` (``PENDING_SEAL_FILE``) signs exactly these bytes. Only our key can have made
        it, so accepting it admits nothing a forger could; the next write replaces both seals."""
        try:
            return keys.verify_seal(self.key, data, (folder / PENDING_SEAL_FILE).read_bytes())
        except OSError:
            return False

    def read(self, folder: Path) -> SessionFile:
        """The verified top-level session in ``folder``: seal checked over the raw bytes, then decoded."""
        return self.read_revision(folder)[0]

    def read_revision(self, folder: Path, *, holding_lock: bool = False) -> tuple[SessionFile, str]:
        """``read`` plus the revision of the bytes read (see ``revision_of``). ``holding_lock``: the caller
        holds the folder's exclusive lock (no writer can be mid-way; no second lock is taken)."""
        data = self._verified_bytes_unlocked(folder) if holding_lock else self._verified_bytes(folder)
        try:
            return _DECODER.decode(data), revision_of(data)
        except (msgspec.MsgspecError, RecursionError, ValueError) as exc:
            raise self._mismatch(folder, f"{SESSION_FILE} is not a valid session file: {exc}") from None

    @contextmanager
    def _locked(self, folder: Path) -> Iterator[None]:
        """An exclusive ``flock`` on the folder's lock file (processes sharing the folder serialise here)."""
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def write(self, folder: Path, top: SessionFile, *, exclusive: bool = False, expected: str = "") -> bytes:
        """Write ``top`` to ``folder`` (session.json, then the seal; each atomic). Returns the bytes.

        Creates the folder (0700). Refuses with ``SEAL_MISMATCH`` when the folder already holds a
        session that fails its seal or does not decode. ``exclusive`` requires that no ``session.json`` exists yet
        (``FOLDER_OCCUPIED`` otherwise, nothing written). ``expected`` (a revision) makes the write a
        compare-and-swap: under the folder's lock, a file whose revision differs is ``SESSION_CONFLICT``
        and nothing is written. Raises ``CanonicalJsonError`` for a value with no JSON form (e.g. a NaN
        variable). ``seq``/``ts`` are the caller's (``sessionfile.touch``).

        Durability: one fsync'd write per save. Only ``session.json`` goes through a temp file, fsync and
        rename; the two 64-byte seal files are written in place, which the pending seal makes safe: a torn
        new pending seal sits beside the untouched old pair, and a torn seal beside a complete pending one
        that signs the new bytes (see ``_pending_seal_matches``). One directory fsync at the end makes the
        rename and the unlink durable together.
        """
        data = canonical_bytes(top)
        target = folder / SESSION_FILE
        if exclusive and os.path.lexists(target):
            raise self._occupied(folder)
        make_private_dirs(folder)
        with self._locked(folder):
            if not exclusive and os.path.lexists(target):
                # A failing folder is never overwritten: bytes whose revision is the one the caller decoded
                # need only their seal checked; anything else is decoded too.
                current = (
                    revision_of(self._verified_bytes_unlocked(folder))
                    if expected
                    else self.read_revision(folder, holding_lock=True)[1]
                )
                if expected and current != expected:
                    raise SessionStoreError(
                        "SESSION_CONFLICT",
                        f"the session in {folder} was changed by another call after this one read it; nothing "
                        "was written. Read its state again (get_workflow_status) and repeat the call if it "
                        "still applies.",
                    )
            sweep_orphan_temps(folder)  # a writer killed mid-write (kill -9) left its temp file behind
            token = keys.seal(self.key, data).encode("ascii")
            # The new seal goes down first beside the old one, so a crash between the session.json rename
            # and the seal rename leaves a folder that still verifies (see ``_pending_seal_matches``).
            pending = folder / PENDING_SEAL_FILE
            if os.path.lexists(pending):  # left by a crash and perhaps vouching for the current bytes: replace
                write_private(pending, token, durable=False)  # it atomically, never tear it
            else:
                write_in_place(pending, token)
            try:
                write_private(target, data, exclusive=exclusive, durable=self.durable, sync_dir=False)
            except FileExistsError:
                pending.unlink(missing_ok=True)
                raise self._occupied(folder) from None
            write_in_place(folder / SEAL_FILE, token)
            pending.unlink(missing_ok=True)
            if self.durable:
                fsync_dir(folder)
        self._remember(folder, top)
        return data

    def _occupied(self, folder: Path) -> SessionStoreError:
        return SessionStoreError(
            "FOLDER_OCCUPIED",
            f"planning folder {folder} already holds a session; nothing was written. "
            "Choose another planning_slug, or resume that folder with start_session.",
        )

    def _remember(self, folder: Path, top: SessionFile) -> None:
        for _, state in walk_sessions(top):
            if state.session_index not in self._transients:
                self._cache[state.session_index] = folder

    def replace(self, handle: SessionHandle, new_state: SessionFile) -> SessionFile:
        """The handle's top-level file with the addressed session replaced (nothing is written)."""
        return replace_at(handle.top, handle.path, new_state)

    def save(self, handle: SessionHandle, new_state: SessionFile) -> SessionHandle:
        """Write ``new_state`` in place of the addressed session; returns the updated handle."""
        top = self.replace(handle, new_state)
        data = self.write(handle.folder, top, expected=handle.revision)
        return msgspec.structs.replace(handle, top=top, revision=revision_of(data))

    def open_folder(self, folder: Path) -> SessionHandle:
        """The top-level session stored in ``folder`` (resume by path), verified."""
        top, revision = self.read_revision(folder)
        sweep_orphan_temps(folder)
        self._remember(folder, top)
        transient = any(entry.folder == folder for entry in self._transients.values())
        return SessionHandle(folder=folder, top=top, transient=transient, revision=revision)

    # ------------------------------------------------------------------------------ lookup

    def locate(self, index: str) -> SessionHandle:
        """The session whose stored ``sessionIndex`` is ``index`` (see the module docstring)."""
        keys.check_index(index)
        entry = self._transients.get(index)
        if entry is not None:
            try:
                top, revision = self.read_revision(entry.folder)
            except SessionStoreError as exc:
                if exc.code != "NOT_FOUND":
                    raise
                self._transients.pop(index, None)  # promoted by another process: found by the scan below
            else:
                paths = find_index(top, index)
                if len(paths) == 1:
                    return SessionHandle(
                        folder=entry.folder, top=top, path=paths[0], transient=True, revision=revision
                    )
                raise SessionStoreError("NOT_FOUND", f"transient session {index} is no longer in {entry.folder}")
        cached = self._cache.get(index)
        if cached is not None:
            handle = self._try_cached(index, cached)
            if handle is not None:
                return handle
            self._cache.pop(index, None)
        try:
            return self._locate_by_scan(index)
        except SessionStoreError as exc:
            if exc.code == "NOT_FOUND" and self._adopt_shared_transient(index):
                return self.locate(index)
            raise

    def _try_cached(self, index: str, folder: Path) -> SessionHandle | None:
        try:
            top, revision = self.read_revision(folder)
        except SessionStoreError as exc:
            if exc.code == "NOT_FOUND":
                return None
            raise
        paths = find_index(top, index)
        return SessionHandle(folder=folder, top=top, path=paths[0], revision=revision) if len(paths) == 1 else None

    def _scan(self, index: str) -> list[tuple[Path, SlotPath]]:
        needle = index.encode("ascii")
        seen: set[str] = set()
        matches: list[tuple[Path, SlotPath]] = []
        for root in self.search_roots():
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = [name for name in dirnames if name not in _SKIP_DIRS]
                if SESSION_FILE not in filenames:
                    continue
                real = os.path.realpath(dirpath)
                if real in seen:
                    continue
                seen.add(real)
                try:
                    data = Path(dirpath, SESSION_FILE).read_bytes()
                except OSError:
                    continue
                if needle not in data:
                    continue
                matches.extend((Path(dirpath), path) for stored, path in stored_indexes(data) if stored == index)
        return matches

    def _locate_by_scan(self, index: str) -> SessionHandle:
        matches = self._scan(index)
        if not matches:
            roots = ", ".join(str(root) for root in self.search_roots()) or "(no search roots exist)"
            raise SessionStoreError(
                "NOT_FOUND",
                f"no session with index {index} under {roots}; resume it with start_session and its planning_folder",
            )
        if len(matches) > 1:
            where = "; ".join(
                f"{folder}" + (f" at {keys.slot_path_text(path)}" if path else "") for folder, path in matches
            )
            raise SessionStoreError("COLLISION", f"session index {index} is stored {len(matches)} times: {where}")
        folder = matches[0][0]
        top, revision = self.read_revision(folder)
        paths = find_index(top, index)
        if len(paths) != 1:
            raise SessionStoreError("NOT_FOUND", f"session {index} changed while it was being located in {folder}")
        self._remember(folder, top)
        return SessionHandle(folder=folder, top=top, path=paths[0], revision=revision)

    # ------------------------------------------------------------------------------ transients

    def create_transient(self, slug: str | None = None) -> tuple[Path, str]:
        """A new private temp folder for a transient session and the index it gets.

        The folder is ``$TMPDIR/workflow-server-transient-<uuid>/`` (0700); the index and the
        remembered ``slug`` live only in this store (lost on restart). Write the session with ``write``.
        """
        if slug is not None:
            validate_slug(slug)
        make_private_dirs(self.settings.tmp_dir)
        folder = self.settings.tmp_dir / f"{TRANSIENT_PREFIX}{uuid.uuid4()}"
        os.mkdir(folder, 0o700)
        if slug is not None:  # beside the session, so another server process sharing TMPDIR knows it too
            write_private(folder / TRANSIENT_SLUG_FILE, slug.encode("utf-8"), durable=False)
        index = self.root_index(folder)
        self._transients[index] = _Transient(folder, slug)
        return folder, index

    def _adopt_shared_transient(self, index: str) -> bool:
        """Find a transient another process (sharing ``TMPDIR``) created, and remember it here."""
        try:
            candidates = sorted(self.settings.tmp_dir.glob(f"{TRANSIENT_PREFIX}*/{SESSION_FILE}"))
        except OSError:
            return False
        needle = index.encode("ascii")
        for file in candidates:
            try:
                data = file.read_bytes()
            except OSError:
                continue
            if needle in data and any(stored == index and not path for stored, path in stored_indexes(data)):
                try:
                    slug: str | None = (file.parent / TRANSIENT_SLUG_FILE).read_text("utf-8") or None
                except OSError:
                    slug = None
                self._transients[index] = _Transient(file.parent, slug)
                return True
        return False

    def is_transient(self, index: str) -> bool:
        return index in self._transients

    def transient_slug(self, index: str) -> str | None:
        """The planning slug remembered for a transient session (``None`` if none or not transient)."""
        entry = self._transients.get(index)
        return entry.slug if entry is not None else None

    def promote(self, handle: SessionHandle, target: Path, top: SessionFile | None = None) -> SessionHandle:
        """Move a transient session (``top``, default ``handle.top``) into the new folder ``target``.

        ``target`` holding ``session.json`` ⇒ ``FOLDER_OCCUPIED`` with zero writes or deletes, the
        transient still addressable. Otherwise: write it there (exclusive create), repoint every
        index in the file at ``target``, and delete the temp folder. The stored indexes do not change.
        """
        if not handle.transient:
            raise ValueError(f"session {handle.index} in {handle.folder} is not transient")
        if os.path.lexists(target / SESSION_FILE):
            raise self._occupied(target)
        new_top = handle.top if top is None else top
        data = self.write(target, new_top, exclusive=True)
        self._transients.pop(handle.top.session_index, None)
        self._remember(target, new_top)
        if os.path.realpath(handle.folder) != os.path.realpath(target):
            shutil.rmtree(handle.folder, ignore_errors=True)
        return SessionHandle(folder=target, top=new_top, path=handle.path, revision=revision_of(data))

    def transient_folders(self) -> dict[str, Path]:
        """index → folder of the live transients (for diagnostics and tests)."""
        return {index: entry.folder for index, entry in self._transients.items()}
