"""``engine/runfolder.py``: run ids, the run folder, and ``meta.json`` written atomically and read
tolerantly."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

from orchestrator.conversation import ResultCard
from orchestrator.engine.runfolder import (
    RUN_ID_PATTERN,
    RunIdCollision,
    RunMeta,
    create_run_dir,
    new_run_id,
    read_meta,
    runs_root,
    write_meta,
)

META = RunMeta(
    run_id="run-20260102-030405",
    task="build it",
    status="running",
    effort="standard",
    log_level="full",
    guild_path="/g",
    start_time="2026-01-02T03:04:05Z",
)


def test_a_run_id_is_the_second_it_started_and_matches_the_pattern() -> None:
    run_id = new_run_id(datetime(2026, 1, 2, 3, 4, 5, 999_999, tzinfo=UTC))
    assert run_id == "run-20260102-030405"
    assert RUN_ID_PATTERN.match(run_id) and not RUN_ID_PATTERN.match(run_id + "x")


def test_a_run_folder_is_never_shared(tmp_path: Path) -> None:
    run_dir = create_run_dir(tmp_path, META.run_id)
    assert run_dir == runs_root(tmp_path) / META.run_id and run_dir.is_dir()
    with pytest.raises(RunIdCollision):
        create_run_dir(tmp_path, META.run_id)


def test_meta_round_trips_in_camel_case_without_unset_fields(tmp_path: Path) -> None:
    run_dir = create_run_dir(tmp_path, META.run_id)
    write_meta(run_dir, META)
    assert read_meta(run_dir) == META
    raw = (run_dir / "meta.json").read_text()
    assert '"runId":"run-20260102-030405"' in raw and "endTime" not in raw and "null" not in raw
    finished = msgspec.structs.replace(META, status="success", result=ResultCard(status="success", summary="done"))
    write_meta(run_dir, finished)
    assert read_meta(run_dir) == finished


def test_writing_meta_removes_temp_files_a_killed_writer_left(tmp_path: Path) -> None:
    run_dir = create_run_dir(tmp_path, META.run_id)
    (run_dir / "meta.json.4242.tmp").write_text("{torn")
    write_meta(run_dir, META)
    assert sorted(p.name for p in run_dir.iterdir()) == ["meta.json"]


@pytest.mark.parametrize("content", [None, b"", b"{torn", b"[]", b'{"runId": 5}', b'{"a":' * 5000])
def test_a_missing_torn_or_foreign_meta_reads_as_none(tmp_path: Path, content: bytes | None) -> None:
    if content is not None:
        (tmp_path / "meta.json").write_bytes(content)
    assert read_meta(tmp_path) is None
