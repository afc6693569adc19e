"""One sealed session folder on real files: the seal over the exact bytes, file modes, SEAL_MISMATCH causes
(a hand edit, a missing seal, bytes that do not decode) and such a folder never rewritten, the crash window
between the two renames, exclusive and compare-and-swap writes, one fsynced file per save, SIGKILLed
writers, and the sweep of their temp files."""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import time
from pathlib import Path

import msgspec
import pytest

from orchestrator.workflow.errors import SessionStoreError
from orchestrator.workflow.session import (
    CanonicalJsonError,
    SessionFile,
    canonical_bytes,
    load_or_create_key,
    new_session_file,
    seal,
    touch,
)
from orchestrator.workflow.session.keys import root_index
from orchestrator.workflow.session.sealed import (
    PENDING_SEAL_FILE,
    SEAL_FILE,
    SESSION_FILE,
    read_revision,
    revision_of,
    write_sealed,
)

T0 = 1_767_225_600.0


@pytest.fixture
def key(tmp_path: Path) -> bytes:
    return load_or_create_key(tmp_path / "k")


def _create(key: bytes, folder: Path) -> SessionFile:
    top = new_session_file(
        session_index=root_index(key, folder), workflow_id="work-package", workflow_version="3.44.0", now=T0
    )
    write_sealed(folder, top, key)
    return top


def _read(folder: Path, key: bytes) -> SessionFile:
    return read_revision(folder, key)[0]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _expect_mismatch(key: bytes, folder: Path, match: str) -> None:
    before = _snapshot(folder)
    with pytest.raises(SessionStoreError) as caught:
        read_revision(folder, key)
    assert caught.value.code == "SEAL_MISMATCH"
    assert str(folder) in caught.value.message and match in caught.value.message
    assert str(caught.value).startswith("SEAL_MISMATCH: ")
    # such a folder is never rewritten, whatever the caller tries
    replacement = new_session_file(session_index=root_index(key, folder), workflow_id="w", workflow_version="1")
    with pytest.raises(SessionStoreError) as refused:
        write_sealed(folder, replacement, key)
    assert refused.value.code == "SEAL_MISMATCH"
    assert _snapshot(folder) == before


def test_write_read_round_trip_and_file_modes(key: bytes, tmp_path: Path) -> None:
    folder = tmp_path / "acc-1"
    top = _create(key, folder)
    data = (folder / SESSION_FILE).read_bytes()
    assert data == canonical_bytes(top)
    assert (folder / SEAL_FILE).read_bytes() == hmac.new(key, data, hashlib.sha256).hexdigest().encode()
    assert read_revision(folder, key) == (top, revision_of(data))
    assert stat.S_IMODE((folder / SESSION_FILE).stat().st_mode) == 0o600
    assert stat.S_IMODE((folder / SEAL_FILE).stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(SessionStoreError, match="NOT_FOUND"):
        read_revision(tmp_path / "empty", key)


def test_token_whitespace_is_tolerated(key: bytes, tmp_path: Path) -> None:
    folder = tmp_path / "acc-ws"
    top = _create(key, folder)
    token = (folder / SEAL_FILE).read_bytes()
    (folder / SEAL_FILE).write_bytes(b"  " + token + b"\n")
    assert _read(folder, key) == top


def test_a_hand_edit_or_a_missing_seal_is_seal_mismatch_and_restoring_heals(key: bytes, tmp_path: Path) -> None:
    folder = tmp_path / "acc-21"
    top = _create(key, folder)
    original = (folder / SESSION_FILE).read_bytes()
    (folder / SESSION_FILE).write_bytes(original.replace(b'"seq": 0', b'"seq": 7'))
    _expect_mismatch(key, folder, "does not match")
    (folder / SESSION_FILE).write_bytes(original)
    assert _read(folder, key) == top
    (folder / SEAL_FILE).unlink()
    _expect_mismatch(key, folder, "missing")


def test_a_write_cut_between_its_two_renames_still_verifies(key: bytes, tmp_path: Path) -> None:
    """A kill after ``session.json`` was replaced but before the seal was: the pending seal (written
    first) signs the new bytes, so the folder reads; the next write leaves one seal and no pending."""
    folder = tmp_path / "acc-cut"
    top = _create(key, folder)
    old_seal = (folder / SEAL_FILE).read_bytes()
    newer = msgspec.structs.replace(top, seq=1)
    write_sealed(folder, newer, key)
    (folder / SEAL_FILE).write_bytes(old_seal)  # as if the seal rename never happened
    (folder / PENDING_SEAL_FILE).write_text(seal(key, (folder / SESSION_FILE).read_bytes()))
    assert _read(folder, key) == newer
    (folder / SEAL_FILE).unlink()  # a first write cut before its seal: the pending one still vouches
    assert _read(folder, key) == newer
    write_sealed(folder, msgspec.structs.replace(newer, seq=2), key)
    assert not (folder / PENDING_SEAL_FILE).exists() and _read(folder, key).seq == 2
    # a pending seal over other bytes vouches for nothing
    (folder / PENDING_SEAL_FILE).write_text(seal(key, b"other bytes"))
    (folder / SESSION_FILE).write_bytes((folder / SESSION_FILE).read_bytes().replace(b'"seq": 2', b'"seq": 9'))
    _expect_mismatch(key, folder, "does not match")


@pytest.mark.parametrize("edit", ["unknown history type", "bad JSON"])
def test_bytes_that_do_not_decode_are_seal_mismatch_even_when_sealed(key: bytes, tmp_path: Path, edit: str) -> None:
    folder = tmp_path / "acc-decode"
    _create(key, folder)
    data = (folder / SESSION_FILE).read_bytes()
    data = data.replace(b"variables_seeded", b"variables_planted") if edit == "unknown history type" else data[:20]
    (folder / SESSION_FILE).write_bytes(data)
    (folder / SEAL_FILE).write_text(seal(key, data))
    _expect_mismatch(key, folder, "not a valid session file")


def test_unencodable_state_writes_nothing(key: bytes, tmp_path: Path) -> None:
    folder = tmp_path / "acc-nan"
    top = _create(key, folder)
    before = _snapshot(folder)
    with pytest.raises(CanonicalJsonError, match=r"variables\.x"):
        write_sealed(folder, msgspec.structs.replace(top, variables={"x": float("nan")}), key)
    assert _snapshot(folder) == before


def test_exclusive_write_refuses_an_occupied_folder(key: bytes, tmp_path: Path) -> None:
    folder = tmp_path / "acc-ex"
    top = _create(key, folder)
    before = _snapshot(folder)
    with pytest.raises(SessionStoreError) as caught:
        write_sealed(folder, touch(top), key, exclusive=True)
    assert caught.value.code == "FOLDER_OCCUPIED"
    assert _snapshot(folder) == before


def test_a_stale_revision_is_a_conflict_and_writes_nothing(key: bytes, tmp_path: Path) -> None:
    folder = tmp_path / "acc-cas"
    _create(key, folder)
    state, stale = read_revision(folder, key)
    write_sealed(folder, touch(state, now=T0 + 5), key, expected=stale)  # the other writer wins
    after = _snapshot(folder)
    with pytest.raises(SessionStoreError) as caught:
        write_sealed(folder, touch(state, now=T0 + 9), key, expected=stale)
    assert caught.value.code == "SESSION_CONFLICT" and str(folder) in caught.value.message
    assert _snapshot(folder) == after
    fresh, revision = read_revision(folder, key)  # re-read, then the write lands
    write_sealed(folder, touch(fresh, now=T0 + 9), key, expected=revision)
    assert _read(folder, key).seq == 2


def test_one_fsynced_file_and_one_directory_fsync_per_save(
    key: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "acc-fsync"
    top = _create(key, folder)
    synced: list[str] = []
    real_fsync = os.fsync

    def counting(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting)
    write_sealed(folder, touch(top, now=T0 + 1), key)
    assert synced == ["file", "dir"]  # was six: three files, each with its own directory fsync
    write_sealed(folder, touch(top, now=T0 + 2), key, durable=False)
    assert synced == ["file", "dir"]  # a non-durable write is atomic, not synced
    assert _read(folder, key).seq == 1


_WRITER = """
import sys, time
from pathlib import Path
import msgspec
from orchestrator.workflow.session import load_or_create_key, touch
from orchestrator.workflow.session.sealed import read_revision, write_sealed
key = load_or_create_key(Path(sys.argv[1]))
folder = Path(sys.argv[2])
for _go in sys.stdin:  # one save per line the test sends, so the test knows which save can be in flight
    state, revision = read_revision(folder, key)
    big = {"blob": "x" * 200_000, "n": state.seq}  # a large file keeps each write in flight longer
    write_sealed(folder, touch(msgspec.structs.replace(state, variables=big), now=time.time()), key, expected=revision)
    print(state.seq + 1, flush=True)
"""


def test_killed_writers_leave_a_folder_that_verifies(key: bytes, tmp_path: Path) -> None:
    """SIGKILL a process that rewrites a session save by save, right after asking for one more save (after
    a varying number of reported saves), so the kill lands at a different point of a write each time; every
    time the folder verifies and holds the last reported save or the one in flight — never a torn or
    unsealed file. The saves are paced by the test, so a slow machine changes where a kill lands, not
    what the test may expect."""
    import random
    import signal
    import subprocess
    import sys

    folder = tmp_path / "acc-kill"
    _create(key, folder)
    rng = random.Random(15)
    src = str(Path(__file__).resolve().parents[3] / "src")
    for _ in range(12):
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(tmp_path / "k"), str(folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={"PYTHONPATH": src},
        )
        assert proc.stdin is not None and proc.stdout is not None
        last = None
        for _ in range(rng.randint(1, 6)):
            proc.stdin.write("save\n")
            proc.stdin.flush()
            last = int(proc.stdout.readline())
        proc.stdin.write("save\n")  # one more save, killed somewhere in its course (or before it starts)
        proc.stdin.flush()
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        state = _read(folder, key)  # raises SEAL_MISMATCH on a torn or unsealed folder
        assert last is not None and state.seq in (last, last + 1)
    # what the kills left behind (a temp file cut mid-write), once old enough, goes with the next write
    orphans = [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    stamp = time.time() - 3600
    for orphan in orphans:
        os.utime(orphan, (stamp, stamp))
    write_sealed(folder, touch(_read(folder, key), now=time.time()), key)
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_a_write_sweeps_the_temp_files_of_killed_writers(key: bytes, tmp_path: Path) -> None:
    """Issue 25: a ``kill -9`` mid-write left ``.session.json.<pid>.<hex>.tmp`` in the planning folder forever."""
    from tests.workflow.session.test_fsio import dead_pid, temp_file

    from orchestrator.workflow.session.fsio import ORPHAN_MIN_AGE_SECONDS

    folder = tmp_path / "acc-orphans"
    top = _create(key, folder)
    old = ORPHAN_MIN_AGE_SECONDS + 1
    first, second = temp_file(folder, dead_pid(), age=old), temp_file(folder, dead_pid(), age=old)
    pending = temp_file(folder, dead_pid(), name=".session-token.next", age=old)
    live = temp_file(folder, os.getpid(), age=old)
    write_sealed(folder, touch(top, now=T0 + 1), key)
    assert not first.exists() and not second.exists() and not pending.exists() and live.exists()
    assert _read(folder, key).seq == 1
