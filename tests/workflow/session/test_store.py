"""SessionStore on real folders: seals, SEAL_MISMATCH causes, lookup by stored index, transients, the key."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import shutil
import stat
import threading
import time
from pathlib import Path

import msgspec
import pytest

from orchestrator.workflow.errors import SessionStoreError, WorkspaceConfigError
from orchestrator.workflow.serverconfig import WorkflowSettings, load_workflow_settings
from orchestrator.workflow.session import (
    SEAL_FILE,
    SESSION_FILE,
    CanonicalJsonError,
    LazyKey,
    SessionFile,
    SessionStore,
    TriggeredFrom,
    TriggeredWorkflow,
    canonical_bytes,
    load_or_create_key,
    new_session_file,
    planning_root,
    seal,
    touch,
)
from orchestrator.workflow.session.store import PENDING_SEAL_FILE, ROOTS_FILE

T0 = 1_767_225_600.0


@pytest.fixture
def settings(tmp_path: Path) -> WorkflowSettings:
    (tmp_path / "ws").mkdir()
    env = {
        "HOME": str(tmp_path / "home"),
        "WORKFLOW_WORKSPACE": str(tmp_path / "ws"),
        "WORKFLOW_SERVER_KEY_DIR": str(tmp_path / "k"),
        "TMPDIR": str(tmp_path / "tmp"),
    }
    return load_workflow_settings(env, {}, cwd=tmp_path)


@pytest.fixture
def store(settings: WorkflowSettings) -> SessionStore:
    return SessionStore(settings, load_or_create_key(settings.key_dir))


@pytest.fixture
def root(settings: WorkflowSettings) -> Path:
    return planning_root(settings)


def _create(store: SessionStore, folder: Path, workflow: str = "work-package") -> SessionFile:
    top = new_session_file(
        session_index=store.root_index(folder), workflow_id=workflow, workflow_version="3.44.0", now=T0
    )
    store.write(folder, top)
    return top


def _add_child(
    store: SessionStore, folder: Path, top: SessionFile, path: tuple[int, ...], workflow: str
) -> SessionFile:
    """Append a child under the session at ``path[:-1]`` (its slot must be ``path[-1]``) and write."""
    from orchestrator.workflow.session import replace_at, state_at

    parent = state_at(top, path[:-1])
    assert len(parent.triggered_workflows) == path[-1]
    index = store.child_index(folder, path)
    child = new_session_file(session_index=index, workflow_id=workflow, workflow_version="1.0.0", agent_id="worker")
    entry = TriggeredWorkflow(
        workflow_id=workflow,
        session_index=index,
        triggered_at=child.started_at,
        triggered_from=TriggeredFrom(activity_id=parent.current_activity),
        state=child,
    )
    parent = msgspec.structs.replace(parent, triggered_workflows=[*parent.triggered_workflows, entry])
    top = replace_at(top, path[:-1], parent)
    store.write(folder, top)
    return top


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# --------------------------------------------------------------------------------------- seal


def test_write_read_round_trip_and_file_modes(store: SessionStore, root: Path) -> None:
    folder = root / "acc-1"
    top = _create(store, folder)
    data = (folder / SESSION_FILE).read_bytes()
    assert data == canonical_bytes(top)
    assert (folder / SEAL_FILE).read_bytes() == hmac.new(store.key, data, hashlib.sha256).hexdigest().encode()
    assert store.read(folder) == top
    assert stat.S_IMODE((folder / SESSION_FILE).stat().st_mode) == 0o600
    assert stat.S_IMODE((folder / SEAL_FILE).stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_token_whitespace_is_tolerated(store: SessionStore, root: Path) -> None:
    folder = root / "acc-ws"
    top = _create(store, folder)
    token = (folder / SEAL_FILE).read_bytes()
    (folder / SEAL_FILE).write_bytes(b"  " + token + b"\n")
    assert store.read(folder) == top


def _expect_mismatch(store: SessionStore, folder: Path, match: str) -> None:
    before = _snapshot(folder)
    with pytest.raises(SessionStoreError) as caught:
        store.read(folder)
    assert caught.value.code == "SEAL_MISMATCH"
    assert str(folder) in caught.value.message
    assert match in caught.value.message
    assert str(caught.value).startswith("SEAL_MISMATCH: ")
    # such a folder is never rewritten, whatever the caller tries
    replacement = new_session_file(session_index=store.root_index(folder), workflow_id="w", workflow_version="1")
    with pytest.raises(SessionStoreError) as refused:
        store.write(folder, replacement)
    assert refused.value.code == "SEAL_MISMATCH"
    assert _snapshot(folder) == before


def test_hand_edit_is_seal_mismatch_and_restoring_bytes_heals(store: SessionStore, root: Path) -> None:
    folder = root / "acc-21"
    top = _create(store, folder)
    index = top.session_index
    assert store.locate(index).folder == folder  # cache warm
    original = (folder / SESSION_FILE).read_bytes()
    (folder / SESSION_FILE).write_bytes(original.replace(b'"seq": 0', b'"seq": 7'))
    _expect_mismatch(store, folder, "does not match")
    for fresh in (store, SessionStore(store.settings, store.key)):
        with pytest.raises(SessionStoreError, match="SEAL_MISMATCH"):
            fresh.locate(index)
    (folder / SESSION_FILE).write_bytes(original)
    assert store.locate(index).state == top


def test_missing_token_is_seal_mismatch(store: SessionStore, root: Path) -> None:
    folder = root / "acc-tok"
    _create(store, folder)
    (folder / SEAL_FILE).unlink()
    _expect_mismatch(store, folder, "missing")


def test_a_write_cut_between_its_two_renames_still_verifies(store: SessionStore, root: Path) -> None:
    """A kill after ``session.json`` was replaced but before the seal was: the pending seal (written
    first) signs the new bytes, so the folder reads; the next write leaves one seal and no pending."""
    folder = root / "acc-cut"
    top = _create(store, folder)
    old_seal = (folder / SEAL_FILE).read_bytes()
    newer = msgspec.structs.replace(top, seq=1)
    store.write(folder, newer)
    (folder / SEAL_FILE).write_bytes(old_seal)  # as if the seal rename never happened
    (folder / PENDING_SEAL_FILE).write_text(seal(store.key, (folder / SESSION_FILE).read_bytes()))
    assert store.read(folder) == newer
    (folder / SEAL_FILE).unlink()  # a first write cut before its seal: the pending one still vouches
    assert store.read(folder) == newer
    store.write(folder, msgspec.structs.replace(newer, seq=2))
    assert not (folder / PENDING_SEAL_FILE).exists() and store.read(folder).seq == 2
    # a pending seal over other bytes vouches for nothing
    (folder / PENDING_SEAL_FILE).write_text(seal(store.key, b"other bytes"))
    (folder / SESSION_FILE).write_bytes((folder / SESSION_FILE).read_bytes().replace(b'"seq": 2', b'"seq": 9'))
    _expect_mismatch(store, folder, "does not match")


def _reseal(store: SessionStore, folder: Path, data: bytes) -> None:
    (folder / SESSION_FILE).write_bytes(data)
    (folder / SEAL_FILE).write_text(seal(store.key, data))


def test_unknown_history_type_is_seal_mismatch_even_when_sealed(store: SessionStore, root: Path) -> None:
    folder = root / "acc-hist"
    _create(store, folder)
    data = (folder / SESSION_FILE).read_bytes().replace(b"variables_seeded", b"variables_planted")
    _reseal(store, folder, data)
    _expect_mismatch(store, folder, "not a valid session file")


def test_bad_json_is_seal_mismatch_even_when_sealed(store: SessionStore, root: Path) -> None:
    folder = root / "acc-json"
    _create(store, folder)
    _reseal(store, folder, b'{"schemaVersion": 1,')
    _expect_mismatch(store, folder, "not a valid session file")


def test_unencodable_state_writes_nothing(store: SessionStore, root: Path) -> None:
    folder = root / "acc-nan"
    top = _create(store, folder)
    before = _snapshot(folder)
    with pytest.raises(CanonicalJsonError, match=r"variables\.x"):
        store.write(folder, msgspec.structs.replace(top, variables={"x": float("nan")}))
    assert _snapshot(folder) == before


def test_exclusive_write_refuses_an_occupied_folder(store: SessionStore, root: Path) -> None:
    folder = root / "acc-ex"
    top = _create(store, folder)
    before = _snapshot(folder)
    with pytest.raises(SessionStoreError) as caught:
        store.write(folder, touch(top), exclusive=True)
    assert caught.value.code == "FOLDER_OCCUPIED"
    assert _snapshot(folder) == before


# --------------------------------------------------------------------------------------- indexes


def _manual_index(key: bytes, text: str) -> str:
    return base64.b32encode(hmac.new(key, text.encode(), hashlib.sha256).digest()[:5]).decode()[:6]


def test_index_derivation_is_stable_and_follows_realpath(store: SessionStore, root: Path, tmp_path: Path) -> None:
    folder = root / "acc-idx"
    folder.mkdir(parents=True)
    real = os.path.realpath(folder)
    assert store.root_index(folder) == _manual_index(store.key, real)
    assert SessionStore(store.settings, store.key).root_index(folder) == store.root_index(folder)
    link = tmp_path / "link"
    link.symlink_to(folder)
    assert store.root_index(link) == store.root_index(folder)
    assert store.child_index(folder, (1,)) == _manual_index(store.key, f"{real}:triggeredWorkflows.1.state")
    assert store.child_index(folder, (1, 0)) == _manual_index(
        store.key, f"{real}:triggeredWorkflows.1.state.triggeredWorkflows.0.state"
    )
    assert store.child_index(folder, ()) == store.root_index(folder)
    assert len({store.child_index(folder, (n,)) for n in range(5)}) == 5


# --------------------------------------------------------------------------------------- lookup


def test_locate_root_and_embedded_children(store: SessionStore, root: Path) -> None:
    folder = root / "acc-2"
    top = _create(store, folder)
    top = _add_child(store, folder, top, (0,), "one")
    top = _add_child(store, folder, top, (1,), "two")
    top = _add_child(store, folder, top, (1, 0), "three")
    for fresh in (False, True):
        s = SessionStore(store.settings, store.key) if fresh else store
        handle = s.locate(top.session_index)
        assert (handle.folder, handle.path, handle.transient) == (folder, (), False)
        assert handle.state == top
        child = s.locate(store.child_index(folder, (1,)))
        assert (child.path, child.state.workflow_id, child.state.agent_id) == ((1,), "two", "worker")
        grandchild = s.locate(store.child_index(folder, (1, 0)))
        assert (grandchild.path, grandchild.state.workflow_id) == ((1, 0), "three")


def test_save_replaces_only_the_addressed_child(store: SessionStore, root: Path) -> None:
    folder = root / "acc-save"
    top = _create(store, folder)
    top = _add_child(store, folder, top, (0,), "one")
    top = _add_child(store, folder, top, (1,), "two")
    handle = store.locate(store.child_index(folder, (1,)))
    saved = store.save(handle, touch(msgspec.structs.replace(handle.state, current_activity="go"), now=T0 + 5))
    assert saved.state.current_activity == "go"
    on_disk = store.read(folder)
    assert on_disk == saved.top
    assert on_disk.triggered_workflows[0] == top.triggered_workflows[0]
    assert on_disk.triggered_workflows[1].state.seq == 1  # type: ignore[union-attr]
    assert handle.state.current_activity == ""  # handles are values


def test_not_found_invalid_index_and_collision(store: SessionStore, root: Path) -> None:
    top = _create(store, root / "acc-3")
    with pytest.raises(SessionStoreError) as missing:
        store.locate("AAAAAA" if top.session_index != "AAAAAA" else "BBBBBB")
    assert missing.value.code == "NOT_FOUND"
    assert str(root) in missing.value.message
    for bad in ("abcdef", "ABCDE1", "ABCDEFG", "", 123):
        with pytest.raises(SessionStoreError) as invalid:
            store.locate(bad)  # type: ignore[arg-type]
        assert invalid.value.code == "INVALID_INDEX"
    shutil.copytree(root / "acc-3", root / "acc-3-copy")
    with pytest.raises(SessionStoreError) as collision:
        SessionStore(store.settings, store.key).locate(top.session_index)
    assert collision.value.code == "COLLISION"
    assert "acc-3-copy" in collision.value.message and str(root / "acc-3") in collision.value.message


def test_stale_cache_falls_back_to_a_scan(store: SessionStore, root: Path) -> None:
    top = _create(store, root / "acc-4")
    assert store.locate(top.session_index).folder == root / "acc-4"
    (root / "acc-4").rename(root / "moved")
    assert store.locate(top.session_index).folder == root / "moved"  # stored index, not the path
    shutil.rmtree(root / "moved")
    with pytest.raises(SessionStoreError, match="NOT_FOUND"):
        store.locate(top.session_index)


def test_scan_ignores_unparseable_neighbours(store: SessionStore, root: Path) -> None:
    top = _create(store, root / "acc-5")
    (root / "junk").mkdir()
    (root / "junk" / SESSION_FILE).write_bytes(b"\xff not json " + top.session_index.encode())
    (root / "odd").mkdir()
    (root / "odd" / SESSION_FILE).write_bytes(b'{"sessionIndex": 5, "triggeredWorkflows": {"x": 1}}')
    assert SessionStore(store.settings, store.key).locate(top.session_index).folder == root / "acc-5"


def test_added_search_root_is_scanned(store: SessionStore, tmp_path: Path) -> None:
    elsewhere = tmp_path / "p" / "widgets" / ".engineering" / "artifacts" / "planning"
    top = _create(store, elsewhere / "2026-01-01-wp")
    fresh = SessionStore(store.settings, store.key)
    with pytest.raises(SessionStoreError, match="NOT_FOUND"):
        fresh.locate(top.session_index)
    fresh.add_search_root(elsewhere)
    assert fresh.locate(top.session_index).folder == elsewhere / "2026-01-01-wp"
    # a restarted server (a new store on the same settings) still scans the learned root
    restarted = SessionStore(store.settings, store.key)
    assert elsewhere in restarted.search_roots()
    assert restarted.locate(top.session_index).folder == elsewhere / "2026-01-01-wp"
    # a damaged roots file is no roots, never an error
    (store.settings.key_dir / ROOTS_FILE).write_text("{not json")
    assert elsewhere not in SessionStore(store.settings, store.key).search_roots()


# --------------------------------------------------------------------------------------- transients


def _transient(store: SessionStore, slug: str | None = None) -> tuple[Path, SessionFile]:
    folder, index = store.create_transient(slug)
    top = new_session_file(
        session_index=index, workflow_id="meta", workflow_version="1.0.0", variables={"user_request": "fix login"}
    )
    store.write(folder, top)
    return folder, top


def test_transient_promotion(store: SessionStore, root: Path, settings: WorkflowSettings) -> None:
    folder, top = _transient(store, "acc-18")
    assert folder.parent == settings.tmp_dir and folder.name.startswith("workflow-server-transient-")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    handle = store.locate(top.session_index)
    assert handle.transient and store.is_transient(top.session_index)
    assert store.transient_slug(top.session_index) == "acc-18"
    other = SessionStore(settings, store.key)  # another process (or a restart) sharing TMPDIR adopts it
    assert other.locate(top.session_index).transient and other.transient_slug(top.session_index) == "acc-18"
    target = root / "acc-18"
    promoted_top = msgspec.structs.replace(top, planning_folder_path=str(target), repo="acme/widgets")
    promoted = store.promote(handle, target, promoted_top)
    assert (promoted.folder, promoted.transient, promoted.index) == (target, False, top.session_index)
    assert not folder.exists()
    assert not store.is_transient(top.session_index)
    assert store.locate(top.session_index).state.repo == "acme/widgets"
    assert SessionStore(settings, store.key).locate(top.session_index).folder == target  # survives restarts
    _add_child(store, target, promoted_top, (0,), "work-package")
    assert store.locate(store.child_index(target, (0,))).path == (0,)


def test_promotion_onto_an_occupied_folder_touches_nothing(store: SessionStore, root: Path) -> None:
    _create(store, root / "acc-19")
    folder, top = _transient(store)
    before_target, before_tmp = _snapshot(root / "acc-19"), _snapshot(folder)
    handle = store.locate(top.session_index)
    with pytest.raises(SessionStoreError) as caught:
        store.promote(handle, root / "acc-19", msgspec.structs.replace(top, repo="acme/widgets"))
    assert caught.value.code == "FOLDER_OCCUPIED"
    assert str(root / "acc-19") in caught.value.message
    assert _snapshot(root / "acc-19") == before_target
    assert _snapshot(folder) == before_tmp
    assert store.locate(top.session_index).transient


def test_promote_requires_a_transient(store: SessionStore, root: Path) -> None:
    top = _create(store, root / "acc-20")
    with pytest.raises(ValueError, match="not transient"):
        store.promote(store.locate(top.session_index), root / "other")


def test_invalid_transient_slug(store: SessionStore) -> None:
    with pytest.raises(SessionStoreError, match="INVALID_INDEX"):
        store.create_transient("a/b")


# --------------------------------------------------------------------------------------- the key


def test_key_is_created_lazily_with_private_modes(tmp_path: Path) -> None:
    key_dir = tmp_path / "state" / "keys"
    lazy = LazyKey(key_dir)
    assert not key_dir.exists()
    key = lazy.get()
    assert len(key) == 32
    assert stat.S_IMODE(key_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((key_dir / "secret").stat().st_mode) == 0o600
    assert load_or_create_key(key_dir) == key
    assert sorted(p.name for p in key_dir.iterdir()) == ["secret"]


def test_racing_creators_agree_on_one_key(tmp_path: Path) -> None:
    key_dir = tmp_path / "k"
    results: list[bytes] = []
    barrier = threading.Barrier(8)

    def create() -> None:
        barrier.wait()
        results.append(load_or_create_key(key_dir))

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8 and len(set(results)) == 1
    assert sorted(p.name for p in key_dir.iterdir()) == ["secret"]


def test_wrong_length_key_is_fatal(tmp_path: Path) -> None:
    (tmp_path / "secret").write_bytes(b"short")
    (tmp_path / "secret").chmod(0o600)
    with pytest.raises(WorkspaceConfigError, match=r"holds 5 bytes, expected 32") as caught:
        load_or_create_key(tmp_path)
    assert str(tmp_path / "secret") in caught.value.message
    assert (tmp_path / "secret").read_bytes() == b"short"


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620])
def test_a_key_readable_by_group_or_other_is_refused_naming_chmod(tmp_path: Path, mode: int) -> None:
    key = tmp_path / "secret"
    key.write_bytes(os.urandom(32))
    key.chmod(mode)
    with pytest.raises(WorkspaceConfigError) as caught:
        load_or_create_key(tmp_path)
    assert f"chmod 600 {key}" in caught.value.message and f"{mode:04o}" in caught.value.message
    key.chmod(0o600)
    assert load_or_create_key(tmp_path) == key.read_bytes()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_key_owned_by_another_user_is_refused_naming_chown(tmp_path: Path) -> None:
    key = tmp_path / "secret"
    key.write_bytes(os.urandom(32))
    key.chmod(0o600)
    os.chown(key, 4242, -1)
    with pytest.raises(WorkspaceConfigError) as caught:
        load_or_create_key(tmp_path)
    assert "owned by uid 4242" in caught.value.message and f"chown {os.geteuid()} {key}" in caught.value.message


def test_unwritable_key_dir_is_a_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(WorkspaceConfigError, match="WORKFLOW_SERVER_KEY_DIR"):
        load_or_create_key(blocker / "keys")


def test_open_folder_and_non_durable_writes(settings: WorkflowSettings, root: Path) -> None:
    store = SessionStore(settings, load_or_create_key(settings.key_dir), durable=False)
    top = _create(store, root / "acc-fast")
    handle = SessionStore(settings, store.key).open_folder(root / "acc-fast")
    assert (handle.top, handle.path, handle.transient, handle.index) == (top, (), False, top.session_index)
    with pytest.raises(SessionStoreError, match="NOT_FOUND"):
        store.open_folder(root / "empty")


# --------------------------------------------------------------------------------------- durability, CAS


def test_one_fsynced_file_and_one_directory_fsync_per_save(
    store: SessionStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = root / "acc-fsync"
    _create(store, folder)
    handle = store.open_folder(folder)
    synced: list[str] = []
    real_fsync = os.fsync

    def counting(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting)
    store.save(handle, touch(handle.state, now=T0 + 1))
    assert synced == ["file", "dir"]  # was six: three files, each with its own directory fsync


def test_a_stale_handle_is_a_conflict_and_writes_nothing(settings: WorkflowSettings, root: Path) -> None:
    key = load_or_create_key(settings.key_dir)
    first, second = SessionStore(settings, key), SessionStore(settings, key)  # two processes' stores
    folder = root / "acc-cas"
    _create(first, folder)
    stale = first.open_folder(folder)
    winner = second.open_folder(folder)
    second.save(winner, touch(winner.state, now=T0 + 5))
    after = _snapshot(folder)
    with pytest.raises(SessionStoreError) as caught:
        first.save(stale, touch(stale.state, now=T0 + 9))
    assert caught.value.code == "SESSION_CONFLICT" and str(folder) in caught.value.message
    assert _snapshot(folder) == after
    fresh = first.open_folder(folder)  # re-read, then the write lands
    assert first.save(fresh, touch(fresh.state, now=T0 + 9)).state.seq == 2


_WRITER = """
import sys, time
from pathlib import Path
import msgspec
from orchestrator.workflow.session import SessionStore, load_or_create_key, touch
from orchestrator.workflow.serverconfig import load_workflow_settings
settings = load_workflow_settings({"WORKFLOW_WORKSPACE": sys.argv[1], "WORKFLOW_SERVER_KEY_DIR": sys.argv[2],
                                   "TMPDIR": sys.argv[3]}, {})
store = SessionStore(settings, load_or_create_key(settings.key_dir))
folder = Path(sys.argv[4])
for _go in sys.stdin:  # one save per line the test sends, so the test knows which save can be in flight
    handle = store.open_folder(folder)
    big = {"blob": "x" * 200_000, "n": handle.state.seq}  # a large file keeps each write in flight longer
    store.save(handle, touch(msgspec.structs.replace(handle.state, variables=big), now=time.time()))
    print(handle.state.seq + 1, flush=True)
"""


def test_killed_writers_leave_a_folder_that_verifies(settings: WorkflowSettings, root: Path) -> None:
    """SIGKILL a process that rewrites a session save by save, right after asking for one more save (after
    a varying number of reported saves), so the kill lands at a different point of a write each time; every
    time the folder verifies and holds the last reported save or the one in flight — never a torn or
    unsealed file. The saves are paced by the test, so a slow machine changes where a kill lands, not
    what the test may expect."""
    import random
    import signal
    import subprocess
    import sys

    store = SessionStore(settings, load_or_create_key(settings.key_dir))
    folder = root / "acc-kill"
    _create(store, folder)
    rng = random.Random(15)
    src = str(Path(__file__).resolve().parents[3] / "src")
    for _ in range(12):
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(settings.workspace), str(settings.key_dir), str(settings.tmp_dir),
             str(folder)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={"PYTHONPATH": src},
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
        state = store.read(folder)  # raises SEAL_MISMATCH on a torn or unsealed folder
        assert last is not None and state.seq in (last, last + 1)
    # what the kills left behind (a temp file cut mid-write), once old enough, goes with the next write
    orphans = [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    stamp = time.time() - 3600
    for orphan in orphans:
        os.utime(orphan, (stamp, stamp))
    store.write(folder, touch(store.read(folder), now=time.time()))
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_a_write_and_an_open_sweep_the_temp_files_of_killed_writers(store: SessionStore, root: Path) -> None:
    """Issue 25: a ``kill -9`` mid-write left ``.session.json.<pid>.<hex>.tmp`` in the planning folder forever."""
    from tests.workflow.session.test_fsio import dead_pid, temp_file

    from orchestrator.workflow.session.fsio import ORPHAN_MIN_AGE_SECONDS

    folder = root / "acc-orphans"
    _create(store, folder)
    old = ORPHAN_MIN_AGE_SECONDS + 1
    first, second = temp_file(folder, dead_pid(), age=old), temp_file(folder, dead_pid(), age=old)
    live = temp_file(folder, os.getpid(), age=old)
    store.write(folder, touch(store.read(folder), now=T0 + 1))
    assert not first.exists() and not second.exists() and live.exists()
    third = temp_file(folder, dead_pid(), name=".session-token.next", age=old)
    store.open_folder(folder)
    assert not third.exists() and live.exists()
    assert store.read(folder).seq == 1
