"""``RunIndex``: catching up chunk by chunk gives exactly the one-pass result (offsets, recentLog rows,
flow model), a partial last line waits for its newline, and appends fold incrementally."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.service import runindex
from orchestrator.service.logwindow import RECENT_ROWS
from orchestrator.service.runindex import RunIndex


def _events(n: int) -> list[bytes]:
    lines = [
        {"timestamp": "2026-01-01T00:00:00.000Z", "type": "role_start",
         "payload": {"role": "coder", "roleId": "coder-0-1", "depth": 0, "task": "t"}},
    ]  # fmt: skip
    for i in range(n):
        name = "read_file" if i % 2 else "run_shell"
        ts = f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}.000Z"
        lines.append(
            {"timestamp": ts, "type": "tool_call", "payload": {"role": "coder", "tool": name, "arguments": "{}"}}
        )
        lines.append(
            {
                "timestamp": ts,
                "type": "tool_result",
                "payload": {"role": "coder", "tool": name, "result": {"kind": "success"}},
            }
        )
    return [json.dumps(line).encode() + b"\n" for line in lines]


def _snapshot(index: RunIndex) -> tuple:
    model = index.model("running", "2026-01-01T01:00:00.000Z")
    return (len(index), list(index._starts), list(index.aggregate.recent), index.aggregate.count, model)


def test_chunked_catch_up_equals_one_pass_and_partial_lines_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _events(400)  # more events than RECENT_ROWS, spread over many chunks
    whole = tmp_path / "whole"
    whole.mkdir()
    (whole / "log.jsonl").write_bytes(b"".join(lines))
    one_pass = RunIndex(whole)
    assert one_pass.update() == len(lines)

    monkeypatch.setattr(runindex, "CHUNK", 1000)  # a few lines per chunk, and lines cut across chunks
    chunked_dir = tmp_path / "chunked"
    chunked_dir.mkdir()
    log = chunked_dir / "log.jsonl"
    log.write_bytes(b"".join(lines[:-1]) + lines[-1][:10])  # the last line is still being written
    chunked = RunIndex(chunked_dir)
    assert chunked.update() == len(lines) - 1
    with log.open("ab") as handle:
        handle.write(lines[-1][10:])
    assert chunked.update() == 1 and chunked.update() == 0
    assert _snapshot(chunked) == _snapshot(one_pass)
    assert len(chunked.aggregate.recent) == RECENT_ROWS
    assert chunked[len(lines) - 1]["type"] == "tool_result"
