"""Session folders found by index: the lookup, the transients and their promotion.

Reading and writing one sealed folder (``session.json`` and its ``.session-token``, the compare-and-swap
write) is ``sealed``'s; this store adds the addressing. Every method is synchronous, does small local
file I/O, and raises ``SessionStoreError`` with the codes of ``sealed`` (``NOT_FOUND``, ``SEAL_MISMATCH``,
``FOLDER_OCCUPIED``, ``SESSION_CONFLICT``) and these:

- ``NOT_FOUND``: no session with that index anywhere.
- ``INVALID_INDEX`` (malformed index), ``COLLISION`` (an index stored more than once),
  ``FOLDER_OCCUPIED`` (promotion onto a folder that already holds a session; nothing is touched).

Lookup is by the *stored* ``sessionIndex``: this store's transient map first, then its index→folder
cache (re-verified against the file on every use), then a recursive scan of every ``session.json``
under the search roots, matching the top-level index and each embedded child's. The store instance
owns the transient map and the cache; nothing is global.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import msgspec

from orchestrator.workflow.errors import SessionStoreError
from orchestrator.workflow.serverconfig import WorkflowSettings
from orchestrator.workflow.session import keys
from orchestrator.workflow.session.fsio import make_private_dirs, sweep_orphan_temps, write_private
from orchestrator.workflow.session.probe import stored_indexes
from orchestrator.workflow.session.roots import search_roots, validate_slug
from orchestrator.workflow.session.sealed import (
    LOCK_FILE,
    PENDING_SEAL_FILE,
    SEAL_FILE,
    SESSION_FILE,
    occupied,
    read_revision,
    revision_of,
    write_sealed,
)
from orchestrator.workflow.session.sessionfile import (
    SessionFile,
    SlotPath,
    find_index,
    replace_at,
    state_at,
    walk_sessions,
)

__all__ = [
    "LOCK_FILE",  # the sealed folder's names, also importable from here (their home is ``sealed``)
    "PENDING_SEAL_FILE",
    "ROOTS_FILE",
    "SEAL_FILE",
    "SESSION_FILE",
    "TRANSIENT_PREFIX",
    "SessionHandle",
    "SessionStore",
    "revision_of",
]

#: the planning roots ``add_search_root`` learned, kept beside the key (see ``SessionStore``)
ROOTS_FILE = "planning-roots.json"
TRANSIENT_PREFIX = "workflow-server-transient-"
#: a transient's planning slug (given at start), read by any process that adopts the transient
TRANSIENT_SLUG_FILE = ".planning-slug"
_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__"})


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

    def read(self, folder: Path) -> SessionFile:
        """The verified top-level session in ``folder``: seal checked over the raw bytes, then decoded."""
        return self.read_revision(folder)[0]

    def read_revision(self, folder: Path) -> tuple[SessionFile, str]:
        """``read`` plus the revision of the bytes read (``sealed.revision_of``)."""
        return read_revision(folder, self.key)

    def write(self, folder: Path, top: SessionFile, *, exclusive: bool = False, expected: str = "") -> bytes:
        """Write ``top`` to ``folder`` and remember where its indexes are; returns the bytes written.
        ``exclusive``, ``expected`` (a compare-and-swap on that revision) and the errors are
        ``sealed.write_sealed``'s."""
        data = write_sealed(folder, top, self.key, exclusive=exclusive, expected=expected, durable=self.durable)
        self._remember(folder, top)
        return data

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
                    return SessionHandle(folder=entry.folder, top=top, path=paths[0], transient=True, revision=revision)
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
            raise occupied(target)
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
