"""``Walk`` and ``in_worker``: the bounded, contained tree walk under the search tools, on its own."""

from __future__ import annotations

import threading
from pathlib import Path

import trio

from orchestrator.tools.walk import Walk, in_worker


def _walk(root: Path, *, skip: str | None = None, max_entries: int = 200_000) -> Walk:
    """A walk over ``root`` that prunes folders named ``skip``."""
    return Walk(
        root=str(root), stop=threading.Event(), skip_dir=lambda rel, name: name == skip, max_entries=max_entries
    )


def _tree(root: Path) -> None:
    for rel, text in {
        "b.txt": "bb",
        "a/one.py": "1",
        "a/two.py": "22",
        "a/deep/three.md": "333",
        "skipme/x.txt": "x",
        ".orchestration/runs/r/log.jsonl": "{}",
    }.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_files_come_sorted_with_their_size_and_skip_bookkeeping_and_pruned_folders(tmp_path: Path) -> None:
    _tree(tmp_path)
    walk = _walk(tmp_path, skip="skipme")
    found = [(rel, size) for rel, _, size in walk.files(str(tmp_path))]
    assert found == [("a/deep/three.md", 3), ("a/one.py", 1), ("a/two.py", 2), ("b.txt", 2)]
    assert not walk.exhausted


def test_symlinks_leading_out_of_the_root_or_into_bookkeeping_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    root = tmp_path / "root"
    _tree(root)
    (root / "out-file").symlink_to(outside / "secret.txt")
    (root / "out-dir").symlink_to(outside, target_is_directory=True)
    (root / "into-bookkeeping").symlink_to(root / ".orchestration" / "runs" / "r" / "log.jsonl")
    (root / "inside-link").symlink_to(root / "b.txt")
    rels = [rel for rel, _, _ in _walk(root).files(str(root))]
    assert "inside-link" in rels
    assert not {"out-file", "into-bookkeeping"} & set(rels)
    assert not any(rel.startswith(("out-dir", ".orchestration")) for rel in rels)


def test_a_walk_stops_after_max_entries_and_says_so(tmp_path: Path) -> None:
    for i in range(10):
        (tmp_path / f"f{i}.txt").write_text("x")
    walk = _walk(tmp_path, max_entries=4)
    assert len(list(walk.files(str(tmp_path)))) == 4
    assert walk.exhausted


def test_a_set_stop_event_ends_the_walk(tmp_path: Path) -> None:
    _tree(tmp_path)
    walk = _walk(tmp_path)
    files = walk.files(str(tmp_path))
    next(files)
    walk.stop.set()
    assert list(files) == []


def test_an_unreadable_start_yields_nothing(tmp_path: Path) -> None:
    assert list(_walk(tmp_path).files(str(tmp_path / "missing"))) == []


async def test_in_worker_returns_the_result_and_sets_stop_when_cancelled() -> None:
    assert await in_worker(lambda stop: 42) == 42
    started, seen = threading.Event(), threading.Event()

    def work(stop: threading.Event) -> None:
        started.set()
        if stop.wait(timeout=10):
            seen.set()

    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:

            async def cancel_once_started() -> None:
                await trio.to_thread.run_sync(started.wait)
                scope.cancel()

            nursery.start_soon(cancel_once_started)
            await in_worker(work)
    assert scope.cancelled_caught
    await trio.to_thread.run_sync(seen.wait, 10)
    assert seen.is_set()  # the abandoned thread saw ``stop`` and wound down
