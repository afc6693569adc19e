"""Private-file I/O for session folders: 0700 directories, 0600 files, atomic replacement.

``write_private`` stages the bytes in a uniquely named temp file in the destination's directory,
fsyncs, then renames it over the destination (or, with ``exclusive=True``, hard-links it into place so
an existing destination is never replaced). A rename that fails with ``EXDEV`` falls back to copying
the bytes onto the destination and fsyncing. The temp file is always removed — unless the process is
killed mid-write (``kill -9``): ``sweep_orphan_temps`` removes such a dead writer's temp files later. A
reader sees the old file or the new one, never a torn mix.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import time
from pathlib import Path

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "ORPHAN_MIN_AGE_SECONDS",
    "fsync_dir",
    "make_private_dirs",
    "pid_alive",
    "sweep_orphan_temps",
    "write_in_place",
    "write_private",
]

DIR_MODE = 0o700
FILE_MODE = 0o600
#: ``write_private``'s temp file name: ``.<name>.<pid>.<8 hex digits>.tmp``.
_TEMP_NAME = re.compile(r"^\..+\.(?P<pid>[0-9]+)\.[0-9a-f]{8}\.tmp$")
#: A dead writer's temp file is swept only once it is this old. A live write keeps its temp file for
#: milliseconds; the margin covers a writer in another pid namespace (a container sharing the folder),
#: whose pid means nothing here.
ORPHAN_MIN_AGE_SECONDS = 60.0


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists here (signal 0; another user's process counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists; anything else: do not guess it dead
        return True
    return True


def sweep_orphan_temps(directory: Path, *, min_age_seconds: float = ORPHAN_MIN_AGE_SECONDS) -> list[Path]:
    """Remove the temp files ``write_private`` left in ``directory`` when its process died mid-write.

    A temp file is an orphan when the pid in its name is not a live process and it was last modified at
    least ``min_age_seconds`` ago. Returns the files removed; I/O errors leave a file where it is.
    """
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        match = _TEMP_NAME.match(entry.name)
        if match is None or pid_alive(int(match["pid"])):
            continue
        try:
            if (
                not entry.is_file(follow_symlinks=False)
                or now - entry.stat(follow_symlinks=False).st_mtime < min_age_seconds
            ):
                continue
            os.unlink(entry.path)
        except OSError:
            continue
        removed.append(Path(entry.path))
    return removed


def make_private_dirs(directory: Path) -> None:
    """Create ``directory`` and any missing parents, each new one with mode 0700."""
    missing: list[Path] = []
    probe = directory
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, DIR_MODE)
        except FileExistsError:
            pass


def fsync_dir(directory: Path) -> None:
    """fsync a directory (makes the renames in it durable); errors are ignored."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_fd(fd: int, data: bytes, durable: bool = True) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    if durable:
        os.fsync(fd)


def write_private(
    path: Path, data: bytes, *, exclusive: bool = False, durable: bool = True, sync_dir: bool = True
) -> None:
    """Atomically set ``path`` to ``data`` (mode 0600).

    With ``exclusive`` the file must not exist yet: ``FileExistsError`` is raised and nothing changes.
    ``durable=False`` skips the fsyncs (still atomic, not crash-durable); ``sync_dir=False`` leaves the
    directory fsync to the caller (who batches several renames under one).
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        try:
            _write_fd(fd, data, durable)
        finally:
            os.close(fd)
        if exclusive:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise
            except OSError:  # no hard links here: exclusive create in place instead
                out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
                try:
                    _write_fd(out, data, durable)
                finally:
                    os.close(out)
        else:
            try:
                os.replace(tmp, path)
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise
                out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
                try:
                    _write_fd(out, data, durable)
                finally:
                    os.close(out)
    finally:
        tmp.unlink(missing_ok=True)
    if durable and sync_dir:
        fsync_dir(path.parent)


def write_in_place(path: Path, data: bytes) -> None:
    """Truncate and write a small file (0600 when new) without a temp file: *not* atomic — a reader or a
    crash may see it empty or torn, which the caller must make harmless (the session store's pending seal)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        _write_fd(fd, data, durable=False)
    finally:
        os.close(fd)
