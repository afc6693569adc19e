"""Checkpoints (``engine/checkpoint.py``): round trips, crash consistency, the fault-injection pause,
cost shape. (Hostile files are in ``test_checkpoint_hostile.py``; a real ``kill -9`` mid-write in
``tests/crash/test_checkpoint_kill.py``; reconciliation of an unusable checkpoint in
``test_reconcile.py``.)

States are built by ``checkpoint_states.Sim``, simulating a run the way the engine mutates it (append
to the leaf, rewrite a history with an epoch bump, push a child with the parent's pending turn, pop it
with the card recorded, counters), writing a checkpoint after every step and reading it back.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from tests.engine.checkpoint_states import LIMITS, OPS, Sim, builtins, compact_limits, make_call, root_state

from orchestrator.conversation import CardError, Message, ResultCard
from orchestrator.engine import checkpoint as cpmod
from orchestrator.engine.checkpoint import (
    JOURNAL,
    SNAPSHOT,
    VERSION,
    Snapshot,
    delete_checkpoint,
    load_checkpoint,
)
from orchestrator.engine.state import RunState

# --- round trip ------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(depth=st.integers(1, 4), ops=st.lists(OPS, max_size=40), limits=LIMITS)
def test_every_write_reads_back_exactly(depth: int, ops: list[tuple[Any, ...]], limits: tuple[int, int]) -> None:
    with compact_limits(*limits), tempfile.TemporaryDirectory() as tmp:
        sim = Sim(Path(tmp))
        sim.run(depth, ops)
        sim.cp.close()


def test_small_limits_really_compact_and_recovery_crosses_snapshots(tmp_path: Path) -> None:
    with compact_limits(600, 1):
        sim = Sim(tmp_path)
        sim.write()
        snapshots, previous = 1, sim.cp.snapshot_bytes
        for i in range(120):
            sim.apply(("append", [f"turn {i} " + "y" * 80, "result"]))
            if i % 17 == 0:
                sim.apply(("push", f"task {i}", 1) if len(sim.state.frames) < 3 else ("pop", "ok"))
            if i % 17 == 1:
                sim.apply(("resume-parent",))
            if i % 29 == 0:
                sim.apply(("rewrite", i, "drop", "summary"))
            sim.write()
            sim.check()
            if sim.cp.journal_bytes == 0:
                snapshots += 1
            previous = sim.cp.snapshot_bytes
        assert snapshots >= 5, f"expected several compactions, saw {snapshots} (last snapshot {previous} bytes)"


def test_an_unchanged_state_written_twice_reads_back(tmp_path: Path) -> None:
    sim = Sim(tmp_path)
    sim.run(3, [])
    sim.write()
    sim.write()
    sim.check()


def test_a_finished_root_is_recorded(tmp_path: Path) -> None:
    sim = Sim(tmp_path)
    sim.run(2, [("pop", "child ok"), ("resume-parent",), ("pop", "all done")])
    state, _ = load_checkpoint(tmp_path)
    assert state.frames == []
    assert state.final is not None and state.final.card.summary == "all done"


# --- crash consistency: damage to the journal ------------------------------------------------------


@dataclass
class Line:
    start: int  # offset of the line's first byte
    end: int  # offset just past its content (its "\n" is at ``end``)
    seq: int


def journal_lines(journal: bytes) -> list[Line]:
    lines, pos = [], 0
    for raw in journal.split(b"\n")[:-1]:
        lines.append(Line(pos, pos + len(raw), json.loads(raw[9:])["seq"]))
        pos += len(raw) + 1
    assert pos == len(journal), "a completed write always ends the journal with a newline"
    return lines


def snapshot_seq(run_dir: Path) -> int:
    return int(json.loads((run_dir / SNAPSHOT).read_bytes())["seq"])


DAMAGE = st.one_of(
    st.tuples(st.just("truncate"), st.integers(0, 10**9), st.just(0)),
    st.tuples(st.just("flip"), st.integers(0, 10**9), st.integers(1, 255)),
    st.tuples(st.just("garbage"), st.binary(max_size=200), st.just(0)),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(depth=st.integers(1, 4), ops=st.lists(OPS, max_size=30), limits=LIMITS, damage=DAMAGE)
def test_damaged_journal_recovers_the_last_intact_record(
    depth: int, ops: list[tuple[Any, ...]], limits: tuple[int, int], damage: tuple[str, Any, int]
) -> None:
    with compact_limits(*limits), tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        sim = Sim(run_dir)
        sim.run(depth, ops, check=False)
        sim.cp.close()
        journal = (run_dir / JOURNAL).read_bytes()
        lines, base = journal_lines(journal), snapshot_seq(run_dir)
        assert [line.seq for line in lines] == list(range(base + 1, base + 1 + len(lines)))

        kind, where, mask = damage
        if kind == "truncate":
            cut = where % (len(journal) + 1)
            damaged = journal[:cut]
            intact = sum(1 for line in lines if line.end <= cut)
        elif kind == "flip":
            assume(journal)
            pos = where % len(journal)
            damaged = journal[:pos] + bytes([journal[pos] ^ mask]) + journal[pos + 1 :]
            intact = next(i for i, line in enumerate(lines) if pos <= line.end)
        else:
            damaged = journal + where
            intact = len(lines)
        (run_dir / JOURNAL).write_bytes(damaged)

        state, seq = load_checkpoint(run_dir)
        assert seq == base + intact
        assert builtins(state) == sim.written[seq]

        # A process resumed from the damaged files writes on without tripping over the damage.
        resumed = Sim(run_dir, state=state, written=sim.written)
        resumed.cp.resume_from(seq)
        for op in [("counters", 7, True, 99), ("append", ["after the restart"]), ("append", ["and more"])]:
            if state.frames:
                resumed.apply(op)
            else:  # the entry role had finished: only run-level fields are left to change
                state.learned_ceiling = (state.learned_ceiling or 0) + 1
            resumed.write()
            resumed.check()


def test_a_missing_journal_recovers_the_snapshot(tmp_path: Path) -> None:
    sim = Sim(tmp_path)
    sim.run(2, [("append", ["a", "b"]), ("counters", 5, False, None)])
    base = snapshot_seq(tmp_path)
    (tmp_path / JOURNAL).unlink()
    state, seq = load_checkpoint(tmp_path)
    assert seq == base
    assert builtins(state) == sim.written[base]


def _crash_after_snapshot_rename(run_dir: Path, old_journal: bytes, into: Path) -> None:
    """The files as a crash between the snapshot's rename and the journal's truncation leaves them."""
    into.mkdir()
    (into / SNAPSHOT).write_bytes((run_dir / SNAPSHOT).read_bytes())
    (into / JOURNAL).write_bytes(old_journal)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(depth=st.integers(1, 3), ops=st.lists(OPS, min_size=5, max_size=30), limits=LIMITS.filter(lambda x: x[0] > 0))
def test_crash_between_snapshot_rename_and_journal_truncation(
    depth: int, ops: list[tuple[Any, ...]], limits: tuple[int, int]
) -> None:
    with compact_limits(*limits), tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        run_dir.mkdir()
        sim = Sim(run_dir)
        sim.write()
        for i, op in enumerate(ops):
            if sim.finished:
                break
            sim.apply(op)
            old_journal = (run_dir / JOURNAL).read_bytes()
            sim.write()
            if sim.cp.journal_bytes or not old_journal:
                continue  # not a compaction (or nothing stale to leave behind)
            crashed = Path(tmp) / f"crash-{i}"
            _crash_after_snapshot_rename(run_dir, old_journal, crashed)
            assert all(line.seq < sim.cp.seq for line in journal_lines(old_journal))
            state, seq = load_checkpoint(crashed)
            assert seq == sim.cp.seq
            assert builtins(state) == sim.written[seq]
        sim.cp.close()


def test_stale_records_after_a_snapshot_are_never_applied(tmp_path: Path) -> None:
    """Deterministic version of the above: the stale records would change the state if applied."""
    with compact_limits(1, 1):
        sim = Sim(tmp_path)
        sim.write()
        sim.apply(("append", ["one"]))
        sim.write()
        sim.apply(("counters", 11, False, 123))
        sim.write()
        stale = (tmp_path / JOURNAL).read_bytes()
        assert len(journal_lines(stale)) == 2
        sim.apply(("rewrite", 0, "drop", "compacted"))
        sim.write()
        assert sim.cp.journal_bytes == 0, "this write should have been a snapshot"
        (tmp_path / JOURNAL).write_bytes(stale)
        state, seq = load_checkpoint(tmp_path)
        assert seq == sim.cp.seq
        assert builtins(state) == sim.written[seq]


# --- the fault-injection pause, in process -----------------------------------------------------------


def test_the_fault_pause_paths_write_the_same_checkpoints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCHESTRATOR_FAULT_CHECKPOINT_PAUSE_MS", "1")
    with compact_limits(300, 1):
        sim = Sim(tmp_path)
        assert sim.cp._pause == pytest.approx(0.001)
        sim.run(2, [("append", ["x" * 100, "y"]) for _ in range(10)])


# --- regressions for bugs found by the properties (all fixed) ---------------------------------


def test_a_byte_flip_in_the_checksum_field_is_detected(tmp_path: Path) -> None:
    sim = Sim(tmp_path)
    sim.run(1, [("append", ["one"]), ("append", ["two"])])
    journal = (tmp_path / JOURNAL).read_bytes()
    last = journal_lines(journal)[-1]
    field_ = journal[last.start : last.start + 8]
    if field_.isdigit():  # no hex letter to flip the case of: flip a leading "0" to " " instead
        assert field_.startswith(b"0"), "a rare checksum: pick other contents for this test"
        damaged_field = b" " + field_[1:]
    else:
        damaged_field = field_.upper()
    (tmp_path / JOURNAL).write_bytes(journal[: last.start] + damaged_field + journal[last.start + 8 :])
    _, seq = load_checkpoint(tmp_path)
    assert seq == last.seq - 1


# --- stray temp files ------------------------------------------------------------------------------


def test_a_stray_snapshot_temp_file_is_ignored_and_then_removed(tmp_path: Path) -> None:
    sim = Sim(tmp_path)
    sim.run(2, [("append", ["a"]), ("counters", 3, False, None)])
    expected = sim.written[sim.cp.seq]
    newer = Snapshot(version=VERSION, seq=sim.cp.seq + 1, state=root_state())
    complete_tmp = tmp_path / f"{SNAPSHOT}.4242.tmp"  # killed after writing, before the rename
    complete_tmp.write_bytes(msgspec.json.encode(newer))
    torn_tmp = tmp_path / f"{SNAPSHOT}.{os.getpid()}.tmp"  # killed half-way through the write
    torn_tmp.write_bytes(msgspec.json.encode(newer)[:40])
    (tmp_path / "meta.json").write_bytes(b"{}")
    (tmp_path / "log.jsonl").write_bytes(b"")

    state, seq = load_checkpoint(tmp_path)
    assert (builtins(state), seq) == (expected, sim.cp.seq)

    sim.apply(("append", ["b"]))
    sim.write()  # later writes go on regardless of the leftovers
    sim.check()
    sim.cp.close()
    delete_checkpoint(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.jsonl", "meta.json"]
    delete_checkpoint(tmp_path)  # idempotent


# --- cost shape ------------------------------------------------------------------------------------


def _final_snapshot_size(state: RunState, seq: int) -> int:
    return len(msgspec.json.encode(Snapshot(version=VERSION, seq=seq, state=state)))


def test_bytes_written_stay_within_three_times_the_final_state(tmp_path: Path) -> None:
    assert (cpmod.MIN_JOURNAL_BYTES, cpmod.COMPACT_FACTOR) == (256 * 1024, 4), "defaults changed: revisit"
    sim = Sim(tmp_path)
    sim.cp.write(sim.state)
    record_bytes: list[int] = []
    for turn in range(300):
        call = make_call(turn, "run_shell", json.dumps({"command": f"step {turn} " + "c" * 240}))
        sim.leaf.history.append(Message(role="assistant", content=f"turn {turn}", tool_calls=[call]))
        sim.leaf.history.append(Message(role="tool", content="r" * 300, tool_call_id=call.id))
        sim.leaf.tool_calls += 1
        before = sim.cp.bytes_written
        sim.cp.write(sim.state)
        if sim.cp.journal_bytes:  # a journal record, not a snapshot
            record_bytes.append(sim.cp.bytes_written - before)
    sim.cp.close()
    final = _final_snapshot_size(sim.state, sim.cp.seq)
    ratio = sim.cp.bytes_written / final
    assert ratio <= 3, f"wrote {sim.cp.bytes_written} bytes for a {final}-byte state: {ratio:.2f}x"
    # A record costs what the turn added, not what the run has accumulated.
    assert max(record_bytes) <= 2 * min(record_bytes)
    state, _ = load_checkpoint(tmp_path)
    assert builtins(state) == builtins(sim.state)


def test_bytes_written_stay_bounded_when_compaction_kicks_in(tmp_path: Path) -> None:
    """Same run, limits small enough that snapshots happen all along: the bound still holds."""
    with compact_limits(4096, cpmod.COMPACT_FACTOR):
        sim = Sim(tmp_path)
        sim.cp.write(sim.state)
        snapshots = 0
        for _ in range(300):
            sim.leaf.history.append(Message(role="assistant", content="a" * 300))
            sim.leaf.history.append(Message(role="tool", content="t" * 300))
            sim.cp.write(sim.state)
            snapshots += sim.cp.journal_bytes == 0
        sim.cp.close()
        assert snapshots >= 3
        assert sim.cp.bytes_written / _final_snapshot_size(sim.state, sim.cp.seq) <= 3


def test_bytes_written_stay_bounded_under_a_suspended_parent(tmp_path: Path) -> None:
    sim = Sim(tmp_path)
    sim.push("child task", 0)
    assert sim.state.frames[0].pending is not None
    sim.state.frames[0].pending.assistant.reasoning = "r" * 4000
    sim.cp.write(sim.state)
    for _ in range(300):
        sim.leaf.history.append(Message(role="assistant", content="a" * 300))
        sim.leaf.history.append(Message(role="tool", content="t" * 300))
        sim.leaf.tool_calls += 1
        sim.cp.write(sim.state)
    sim.cp.close()
    assert sim.cp.bytes_written / _final_snapshot_size(sim.state, sim.cp.seq) <= 3


def test_card_error_round_trips_with_details(tmp_path: Path) -> None:
    sim = Sim(tmp_path)
    sim.run(2, [])
    error = CardError(kind="tool_failed", message="boom", details={"nested": [1, {"x": None}], "s": "é"})
    sim.state.frames[0].pending = msgspec.structs.replace(
        sim.state.frames[0].pending,  # type: ignore[arg-type]
        child_card=ResultCard(status="error", summary="failed", error=error),
    )
    sim.write()
    sim.check()
