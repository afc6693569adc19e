"""SessionStore on real folders: lookup by stored index (a folder failing its seal included), the cache,
search roots, transients and promotion, the key, compare-and-swap saves through handles (the sealed folder
itself: ``test_sealed.py``)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import shutil
import stat
import threading
from pathlib import Path

import msgspec
import pytest

from orchestrator.workflow.errors import SessionStoreError, WorkspaceConfigError
from orchestrator.workflow.serverconfig import WorkflowSettings, load_workflow_settings
from orchestrator.workflow.session import (
    SESSION_FILE,
    LazyKey,
    SessionFile,
    SessionStore,
    TriggeredFrom,
    TriggeredWorkflow,
    load_or_create_key,
    new_session_file,
    planning_root,
    touch,
)
from orchestrator.workflow.session.store import ROOTS_FILE

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


# ------------------------------------------------------------------------- a folder failing its seal


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


# ----------------------------------------------------------------- compare-and-swap saves, the sweep


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
