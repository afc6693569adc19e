"""The sidecar's side (``observability.sidecarproc``): a run's log read up to where the other process
said it had grown, ending on whole lines (a resumed log's torn line shifts the count by the byte that seals
it); a log already gone cuts the run's trace; a process that is not started by a ``SidecarSink`` exits 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from orchestrator.observability.sidecarproc import _RunLog


class Lines:
    """What ``_RunLog`` needs of a listener: the lines it is handed, and a cut."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.cut = False

    def line(self, line: bytes) -> None:
        self.lines.append(line)

    def cut_here(self) -> None:
        self.cut = True


def test_a_grow_hands_over_each_whole_line_that_begins_before_it(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(b'{"a":1}\n{"b":2}\n{"c":3}\n')
    lines = Lines()
    run = _RunLog(lines, log, 0)  # type: ignore[arg-type]
    run.grow(8)
    assert lines.lines == [b'{"a":1}']
    run.grow(8)  # nothing new
    run.grow(10)  # inside the second line: it is handed over whole
    assert lines.lines == [b'{"a":1}', b'{"b":2}'] and run.position == 16
    run.grow(24)
    assert lines.lines[-1] == b'{"c":3}'
    run.close()


def test_the_byte_that_seals_a_torn_line_does_not_lose_a_line(tmp_path: Path) -> None:
    """A kill left a torn line; the resumed log writer ends it with a newline the listener never heard of,
    so the positions it ships are one byte short: each grow still ends on a whole line."""
    torn = b'{"a":1}\n{"ty'
    log = tmp_path / "log.jsonl"
    log.write_bytes(torn + b"\n" + b'{"b":2}\n{"c":3}\n')
    lines = Lines()
    run = _RunLog(lines, log, len(torn))  # type: ignore[arg-type]
    run.grow(len(torn) + 8)  # one byte short of the end of {"b":2}
    assert lines.lines == [b'{"b":2}']
    run.grow(len(torn) + 16)
    assert lines.lines == [b'{"b":2}', b'{"c":3}']
    run.close()


def test_a_log_already_gone_cuts_the_runs_trace(tmp_path: Path) -> None:
    lines = Lines()
    _RunLog(lines, tmp_path / "gone" / "log.jsonl", 0).grow(100)  # type: ignore[arg-type]
    assert lines.cut and lines.lines == []


def test_a_sidecar_not_started_by_a_sink_exits_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator.observability.sidecarproc"], input=b"", capture_output=True, timeout=60
    )
    assert done.returncode == 2 and b"Traceback" not in done.stderr
