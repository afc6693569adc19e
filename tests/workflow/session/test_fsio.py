"""``fsio``: private atomic writes leave no temp file, and a dead writer's temp files are swept."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from orchestrator.workflow.session.fsio import ORPHAN_MIN_AGE_SECONDS, pid_alive, sweep_orphan_temps, write_private


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(30)
    assert not pid_alive(proc.pid)
    return proc.pid


def temp_file(folder: Path, pid: int, name: str = "session.json", age: float = 0.0) -> Path:
    path = folder / f".{name}.{pid}.{os.urandom(4).hex()}.tmp"
    path.write_bytes(b'{"half": ')
    if age:
        stamp = time.time() - age
        os.utime(path, (stamp, stamp))
    return path


def test_pid_alive() -> None:
    assert pid_alive(os.getpid())
    assert not pid_alive(dead_pid())
    assert not pid_alive(0) and not pid_alive(-5)


def test_a_dead_writers_old_temp_files_are_swept_and_nothing_else(tmp_path: Path) -> None:
    dead = dead_pid()
    old = ORPHAN_MIN_AGE_SECONDS + 5
    orphan = temp_file(tmp_path, dead, age=old)
    orphan_seal = temp_file(tmp_path, dead, name=".session-token.next", age=old)
    mine = temp_file(tmp_path, os.getpid(), age=old)  # a live writer's: in flight
    fresh = temp_file(tmp_path, dead)  # too recent: its pid may belong to another pid namespace
    unrelated = tmp_path / ".notes.123.tmp"  # not write_private's name
    unrelated.write_text("keep")
    os.utime(unrelated, (time.time() - old, time.time() - old))
    (tmp_path / "session.json").write_text("{}")
    assert sorted(sweep_orphan_temps(tmp_path)) == sorted([orphan, orphan_seal])
    left = {p.name for p in tmp_path.iterdir()}
    assert left == {mine.name, fresh.name, unrelated.name, "session.json"}
    assert sweep_orphan_temps(tmp_path / "missing") == []


def test_write_private_leaves_no_temp_file(tmp_path: Path) -> None:
    write_private(tmp_path / "f.json", b"{}")
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]
