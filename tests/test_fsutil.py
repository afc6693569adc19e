"""``fsutil.py``: atomic replacement of a file (temp file beside it, then rename)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.fsutil import atomic_write, read_regular


@pytest.mark.parametrize("durable", [True, False])
def test_a_write_replaces_the_file_whole_and_leaves_no_temp_file(tmp_path: Path, durable: bool) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(b"old contents, longer than the new ones")
    atomic_write(path, b"new", durable=durable)
    assert path.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_a_stale_temp_file_from_a_killed_writer_is_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "meta.json"
    stale = tmp_path / f"meta.json.{os.getpid()}.tmp"
    stale.write_bytes(b"torn half of an earlier write")
    atomic_write(path, b"{}")
    assert path.read_bytes() == b"{}" and not stale.exists()


def test_a_large_write_is_complete(tmp_path: Path) -> None:
    data = bytes(range(256)) * 40_000  # ~10 MB: more than one os.write may take
    atomic_write(tmp_path / "big", data, durable=False)
    assert (tmp_path / "big").read_bytes() == data


def test_a_write_into_a_missing_folder_raises_and_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        atomic_write(tmp_path / "absent" / "f", b"x")
    assert list(tmp_path.iterdir()) == []


def test_read_regular_reads_a_file_and_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    (tmp_path / "secret").write_bytes(b"value\n")
    assert read_regular(tmp_path / "secret") == b"value\n"
    assert read_regular(tmp_path / "secret", limit=3) == b"val"
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError, match="not a regular file"):
        read_regular(tmp_path / "fifo")  # a plain open would wait for a writer forever
    with pytest.raises(OSError):
        read_regular(tmp_path)
