"""The durable evaluation cache: a finished run is found again by a new process, with its run folder."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from orchestrator.foundry.evalcache import EvalCache
from orchestrator.foundry.job import RunOutcome
from orchestrator.foundry.trace import RoleTrace


def _archive() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = b'{"type":"role_start"}\n'
        info = tarfile.TarInfo("run-1/log.jsonl")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_a_put_run_survives_a_new_cache_and_keeps_its_folder(tmp_path: Path) -> None:
    cache = EvalCache(tmp_path)
    assert cache.get("c", "b", 0) is None
    outcome = RunOutcome(status="pass", roles=[RoleTrace(role="lead", task="t", lines=["x"])], archive=_archive())
    cache.put("c", "b", 0, outcome)
    assert (tmp_path / "runs" / "c" / "b" / "0" / "run-1" / "log.jsonl").is_file()
    again = EvalCache(tmp_path).get("c", "b", 0)
    assert again is not None and again.status == "pass" and again.roles[0].lines == ["x"]
    assert again.archive == b""  # the archive lives unpacked under runs/, not in the cache file
    assert EvalCache(tmp_path).count() == 1 and cache.added == 1


def test_a_torn_or_foreign_file_counts_as_absent(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "c" / "b" / "0.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"status": "pa')
    assert EvalCache(tmp_path).get("c", "b", 0) is None
