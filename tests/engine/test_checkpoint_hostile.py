"""Hostile checkpoint files (``engine/checkpoint.py``): arbitrary bytes, JSON of the wrong shape, a
table of wrong snapshots and deeply nested input all raise ``CheckpointError`` (never anything else);
garbage in the journal after a valid snapshot is ignored."""

from __future__ import annotations

import json
import tempfile
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.engine.checkpoint_states import DEEP_JSON, WRONG_SNAPSHOTS, builtins, root_state, valid_snapshot

from orchestrator.engine.checkpoint import JOURNAL, SNAPSHOT, CheckpointError, load_checkpoint

# --- hostile state.json ----------------------------------------------------------------------------


def _write_snapshot_bytes(run_dir: Path, data: bytes) -> None:
    (run_dir / SNAPSHOT).write_bytes(data)


KEYS = st.sampled_from(["version", "seq", "state", "runId", "frames", "x"]) | st.text(max_size=5)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=500))
def test_arbitrary_bytes_in_state_json_raise_only_checkpoint_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _write_snapshot_bytes(Path(tmp), data)
        with pytest.raises(CheckpointError):
            load_checkpoint(Path(tmp))


@settings(max_examples=300, deadline=None)
@given(value=JSON)
def test_json_of_the_wrong_shape_raises_checkpoint_error(value: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _write_snapshot_bytes(Path(tmp), json.dumps(value).encode())
        with pytest.raises(CheckpointError):
            load_checkpoint(Path(tmp))


def test_the_valid_snapshot_used_below_really_is_valid(tmp_path: Path) -> None:
    _write_snapshot_bytes(tmp_path, json.dumps(valid_snapshot()).encode())
    state, seq = load_checkpoint(tmp_path)
    assert (builtins(state), seq) == (builtins(root_state()), 3)


@pytest.mark.parametrize("name", sorted(WRONG_SNAPSHOTS))
def test_a_wrong_snapshot_raises_checkpoint_error(tmp_path: Path, name: str) -> None:
    _write_snapshot_bytes(tmp_path, WRONG_SNAPSHOTS[name])
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(tmp_path)
    if name.startswith("version ") and name != "version as string":
        assert "version" in str(info.value)


def test_no_snapshot_and_an_unreadable_one(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="no checkpoint"):
        load_checkpoint(tmp_path)
    (tmp_path / SNAPSHOT).mkdir()
    with pytest.raises(CheckpointError, match="unreadable"):
        load_checkpoint(tmp_path)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=500))
def test_arbitrary_journal_bytes_after_a_valid_snapshot_are_ignored(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _write_snapshot_bytes(Path(tmp), json.dumps(valid_snapshot()).encode())
        (Path(tmp) / JOURNAL).write_bytes(data)
        state, seq = load_checkpoint(Path(tmp))
        assert (builtins(state), seq) == (builtins(root_state()), 3)


# --- regressions for bugs found by these properties (all fixed) ---------------------------------


def test_deeply_nested_state_json_raises_checkpoint_error(tmp_path: Path) -> None:
    _write_snapshot_bytes(tmp_path, DEEP_JSON)
    with pytest.raises(CheckpointError):
        load_checkpoint(tmp_path)


def test_a_deeply_nested_journal_line_is_ignored(tmp_path: Path) -> None:
    _write_snapshot_bytes(tmp_path, json.dumps(valid_snapshot()).encode())
    body = b'{"seq":4,"x":' + DEEP_JSON + b"}"
    (tmp_path / JOURNAL).write_bytes(b"%08x " % zlib.crc32(body) + body + b"\n")
    _, seq = load_checkpoint(tmp_path)
    assert seq == 3
