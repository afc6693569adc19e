"""Checkpoints (``engine/checkpoint.py``): round trips, crash consistency, hostile bytes, cost shape.

States are built by simulating a run the way the engine mutates it (append to the leaf, rewrite a
history with an epoch bump, push a child with the parent's pending turn, pop it with the card recorded,
counters), writing a checkpoint after every step and reading it back.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from orchestrator.engine import checkpoint as cpmod
from orchestrator.engine.checkpoint import (
    JOURNAL,
    SNAPSHOT,
    VERSION,
    Checkpointer,
    CheckpointError,
    Snapshot,
    delete_checkpoint,
    load_checkpoint,
)
from orchestrator.engine.reconcile import reconcile_runs
from orchestrator.engine.runfolder import RunMeta, read_meta, runs_root, write_meta
from orchestrator.engine.state import FinishedRoot, PendingTurn, Rejection, RoleFrame, RunState
from orchestrator.runlog.events import CardError, FunctionCall, Message, ResultCard, ToolCall

Builtins = Any

# --- the simulated run -----------------------------------------------------------------------------

TEXT = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=40),
    st.sampled_from(["", "two\nlines\n", 'quote " and \\ backslash', "é ✓ 漢字 🚀", "x" * 300]),
)

#: (MIN_JOURNAL_BYTES, COMPACT_FACTOR): 0/0 snapshots every write; the small ones compact often.
LIMITS = st.sampled_from(
    [(0, 0), (1, 1), (300, 1), (600, 2), (2048, 4), (cpmod.MIN_JOURNAL_BYTES, cpmod.COMPACT_FACTOR)]
)

OPS = st.one_of(
    st.tuples(st.just("append"), st.lists(TEXT, min_size=1, max_size=3)),
    st.tuples(st.just("rewrite"), st.integers(0, 3), st.sampled_from(["drop", "same-length", "grow"]), TEXT),
    st.tuples(st.just("push"), TEXT, st.integers(0, 2)),
    st.tuples(st.just("pop"), TEXT),
    st.tuples(st.just("resume-parent")),
    st.tuples(st.just("counters"), st.integers(0, 10**6), st.booleans(), st.none() | st.integers(1, 10**6)),
    st.tuples(st.just("inbox"), TEXT),
    st.tuples(st.just("restart")),
)


@contextmanager
def compact_limits(min_journal: int, factor: int) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cpmod, "MIN_JOURNAL_BYTES", min_journal)
        mp.setattr(cpmod, "COMPACT_FACTOR", factor)
        yield


def builtins(state: RunState) -> Builtins:
    return msgspec.to_builtins(state)


def _call(index: int, name: str, arguments: str) -> ToolCall:
    return ToolCall(id=f"call_{index}", function=FunctionCall(name=name, arguments=arguments))


def root_state() -> RunState:
    history = [
        Message(role="system", content="You lead."),
        Message(role="system", content="Effort: standard."),
        Message(role="user", content="build it"),
    ]
    frame = RoleFrame(
        instance_id="lead-0-1", role="lead", depth=0, task="build it", effort="standard", history=history, preamble=3
    )
    return RunState(run_id="run-20250101-000000", started_at="2025-01-01T00:00:00Z", registry_counter=1, frames=[frame])


@dataclass
class Sim:
    """A run's state plus the checkpointer writing it, and every state written, by ``seq``."""

    run_dir: Path
    state: RunState = field(default_factory=root_state)
    written: dict[int, Builtins] = field(default_factory=dict)
    finished: bool = False

    def __post_init__(self) -> None:
        self.cp = Checkpointer(self.run_dir, durable=False)

    def write(self) -> None:
        self.cp.write(self.state)
        self.written[self.cp.seq] = builtins(self.state)

    def check(self) -> None:
        state, seq = load_checkpoint(self.run_dir)
        assert seq == self.cp.seq
        assert builtins(state) == self.written[seq]

    @property
    def leaf(self) -> RoleFrame:
        return self.state.frames[-1]

    def push(self, task: str, before: int) -> None:
        """The leaf calls ``agent`` (after ``before`` other calls): pending turn, child frame."""
        leaf, state = self.leaf, self.state
        calls = [_call(i, "run_shell", json.dumps({"command": f"ls {i}"})) for i in range(before)]
        calls.append(_call(before, "agent", json.dumps({"role": "coder", "task": task})))
        assistant = Message(role="assistant", content="delegating", reasoning="think " + task, tool_calls=calls)
        results = [Message(role="tool", content=f"out {i}", tool_call_id=f"call_{i}") for i in range(before)]
        state.registry_counter += 1
        depth = leaf.depth + 1
        child = RoleFrame(
            instance_id=f"coder-{depth}-{state.registry_counter}",
            role="coder",
            depth=depth,
            task=task,
            parent_id=leaf.instance_id,
            parent_role=leaf.role,
            history=[Message(role="system", content="You code."), Message(role="user", content=task)],
        )
        leaf.pending = PendingTurn(assistant=assistant, results=results, awaiting=before, child_id=child.instance_id)
        state.frames.append(child)

    def pop(self, summary: str) -> None:
        child = self.state.frames.pop()
        card = ResultCard(status="success", summary=summary or "done", artifacts=["a.txt"])
        if not self.state.frames:
            self.state.final = FinishedRoot(role=child.role, role_id=child.instance_id, card=card)
            self.finished = True
        else:
            assert self.leaf.pending is not None
            self.leaf.pending.child_card = card

    def resume_parent(self) -> None:
        """The leaf's pending turn completes: the assistant message and all outputs join the history."""
        pending = self.leaf.pending
        if pending is None or pending.child_card is None:
            return
        card_json = msgspec.json.encode(pending.child_card).decode()
        agent_id = f"call_{pending.awaiting}"
        self.leaf.history += [pending.assistant, *pending.results]
        self.leaf.history.append(Message(role="tool", content=card_json, tool_call_id=agent_id))
        self.leaf.pending = None

    def rewrite(self, which: int, mode: str, text: str) -> None:
        frame = self.state.frames[which % len(self.state.frames)]
        head, body = frame.history[: frame.preamble], frame.history[frame.preamble :]
        if mode == "drop":
            body = [*body[len(body) // 2 :], Message(role="user", content="[compacted] " + text)]
        elif mode == "same-length" and body:
            body = [*body[:-1], Message(role="assistant", content="edited " + text)]
        else:
            body = [Message(role="user", content=text), *body]
        frame.history = head + body
        frame.history_epoch += 1
        frame.logged_upto = 0

    def counters(self, n: int, flag: bool, ceiling: int | None) -> None:
        leaf = self.leaf
        leaf.tool_calls += 1
        leaf.llm_calls += 1
        leaf.completion_tokens += n
        leaf.prompt_tokens_total += 2 * n
        leaf.cached_prompt_tokens_total += n // 2
        leaf.last_prompt_tokens = n
        leaf.pressure_fired = leaf.pressure_fired or flag
        leaf.pressure_notice_due = flag
        leaf.logged_upto = len(leaf.history)
        leaf.compaction_sizes.append(n)
        leaf.parked_rejection = Rejection(prompt_tokens=ceiling, message="too big") if flag else None
        self.state.learned_ceiling = ceiling

    def restart(self) -> None:
        """A new process: recover from disk and carry on with the decoded state."""
        self.cp.close()
        state, seq = load_checkpoint(self.run_dir)
        self.cp = Checkpointer(self.run_dir, durable=False)
        self.cp.resume_from(seq)
        self.state = state

    def apply(self, op: tuple[Any, ...]) -> None:
        kind = op[0]
        if kind == "append":
            if self.leaf.pending is None and self.leaf.inbox:
                self.leaf.history += self.leaf.inbox
                self.leaf.inbox = []
            for i, text in enumerate(op[1]):
                role = "assistant" if i % 2 == 0 else "tool"
                self.leaf.history.append(Message(role=role, content=text))
        elif kind == "rewrite":
            self.rewrite(op[1], op[2], op[3])
        elif kind == "push":
            if len(self.state.frames) < 4 and self.leaf.pending is None:
                self.push(op[1], op[2])
        elif kind == "pop":
            if self.leaf.pending is None:
                self.pop(op[1])
        elif kind == "resume-parent":
            self.resume_parent()
        elif kind == "counters":
            self.counters(op[1], op[2], op[3])
        elif kind == "inbox":
            self.state.frames[0].inbox.append(Message(role="user", content="[notice] " + op[1]))
        elif kind == "restart":
            self.restart()

    def run(self, depth: int, ops: list[tuple[Any, ...]], *, check: bool = True) -> None:
        """Write the root, push to ``depth`` frames, then apply ``ops``: a checkpoint after each step."""
        self.write()
        for i in range(depth - 1):
            self.push(f"sub {i}", i % 2)
            self.write()
            if check:
                self.check()
        for op in ops:
            if self.finished:
                break
            self.apply(op)
            self.write()
            if check:
                self.check()


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


# --- a real kill -9 in the middle of writes (the fault-injection pause) ----------------------------

_WRITER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import msgspec
    from orchestrator.engine import checkpoint as cpmod
    from orchestrator.engine.state import RoleFrame, RunState
    from orchestrator.runlog.events import Message

    cpmod.MIN_JOURNAL_BYTES, cpmod.COMPACT_FACTOR = 1500, 1
    cp = cpmod.Checkpointer(Path(sys.argv[1]), durable=False)
    frame = RoleFrame(instance_id="lead-0-1", role="lead", depth=0, task="t",
                      history=[Message(role="system", content="s"), Message(role="user", content="t")])
    state = RunState(run_id="run-20250101-000000", started_at="now", registry_counter=1, frames=[frame])
    for turn in range(10_000):
        frame.history.append(Message(role="assistant", content=f"turn {turn} " + "z" * 120))
        frame.tool_calls = turn
        if turn % 7 == 6:
            frame.history = frame.history[:2] + frame.history[-3:]
            frame.history_epoch += 1
        print(json.dumps({"announce": cp.seq + 1, "state": msgspec.to_builtins(state)}), flush=True)
        cp.write(state)
        print(json.dumps({"done": cp.seq}), flush=True)
    """
)


@pytest.mark.parametrize("kill_after", [2, 7, 9, 17, 23, 32])  # 7, 17, 32: snapshot writes
def test_kill_9_mid_write_recovers_the_last_complete_write(tmp_path: Path, kill_after: int) -> None:
    env = {**os.environ, "ORCHESTRATOR_FAULT_CHECKPOINT_PAUSE_MS": "40"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(tmp_path)], stdout=subprocess.PIPE, env=env, cwd=tmp_path
    )
    assert proc.stdout is not None
    announced: dict[int, Builtins] = {}
    done = 0
    try:
        for raw in proc.stdout:
            record = json.loads(raw)
            if "announce" in record:
                announced[record["announce"]] = record["state"]
                if record["announce"] == kill_after:
                    time.sleep(random.Random(kill_after).uniform(0.005, 0.035))  # inside the 40 ms pause
                    break
            else:
                done = record["done"]
    finally:
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate(timeout=30)
    for raw in rest.splitlines():
        record = json.loads(raw)
        done = record.get("done", done)
    state, seq = load_checkpoint(tmp_path)
    assert seq in (done, done + 1)
    assert builtins(state) == announced[seq]


def test_the_fault_pause_paths_write_the_same_checkpoints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCHESTRATOR_FAULT_CHECKPOINT_PAUSE_MS", "1")
    with compact_limits(300, 1):
        sim = Sim(tmp_path)
        assert sim.cp._pause == pytest.approx(0.001)
        sim.run(2, [("append", ["x" * 100, "y"]) for _ in range(10)])


# --- hostile state.json ----------------------------------------------------------------------------


def _write_snapshot_bytes(run_dir: Path, data: bytes) -> None:
    (run_dir / SNAPSHOT).write_bytes(data)


def _valid_snapshot() -> dict[str, Any]:
    return {"version": VERSION, "seq": 3, "state": builtins(root_state())}


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


def _mutated(path: list[str], value: Any) -> bytes:
    doc = _valid_snapshot()
    target = doc
    for key in path[:-1]:
        target = target[key] if not isinstance(target, list) else target[int(key)]
    if value is _DELETE:
        del target[path[-1]]
    elif isinstance(target, list):
        target[int(path[-1])] = value
    else:
        target[path[-1]] = value
    return json.dumps(doc).encode()


_DELETE = object()

WRONG_SNAPSHOTS: dict[str, bytes] = {
    "empty": b"",
    "whitespace": b"  \n",
    "null": b"null",
    "array": b"[]",
    "truncated": json.dumps(_valid_snapshot()).encode()[:-5],
    "trailing garbage": json.dumps(_valid_snapshot()).encode() + b"}",
    "utf-16": json.dumps(_valid_snapshot()).encode("utf-16"),
    "version 2": _mutated(["version"], 2),
    "version 0": _mutated(["version"], 0),
    "version as string": _mutated(["version"], "1"),
    "no version": _mutated(["version"], _DELETE),
    "no seq": _mutated(["seq"], _DELETE),
    "seq as string": _mutated(["seq"], "3"),
    "state as list": _mutated(["state"], []),
    "no state": _mutated(["state"], _DELETE),
    "no run id": _mutated(["state", "runId"], _DELETE),
    "frames as object": _mutated(["state", "frames"], {}),
    "frame without role": _mutated(["state", "frames", "0", "role"], _DELETE),
    "message with bad role": _mutated(["state", "frames", "0", "history", "0", "role"], "robot"),
    "depth as float": _mutated(["state", "frames", "0", "depth"], 1.5),
    "history as string": _mutated(["state", "frames", "0", "history"], "hi"),
    "final card bad status": _mutated(["state", "final"], {"role": "r", "roleId": "r-0-1", "card": {"status": "?"}}),
}


def test_the_valid_snapshot_used_below_really_is_valid(tmp_path: Path) -> None:
    _write_snapshot_bytes(tmp_path, json.dumps(_valid_snapshot()).encode())
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
        _write_snapshot_bytes(Path(tmp), json.dumps(_valid_snapshot()).encode())
        (Path(tmp) / JOURNAL).write_bytes(data)
        state, seq = load_checkpoint(Path(tmp))
        assert (builtins(state), seq) == (builtins(root_state()), 3)


# --- reconciliation of a run whose checkpoint is unusable ------------------------------------------

RUN_ID = "run-20250101-000000"


def _unresumable_run(workspace: Path, state_json: bytes, *, with_meta: bool) -> Path:
    run_dir = runs_root(workspace) / RUN_ID
    run_dir.mkdir(parents=True)
    if with_meta:
        meta = RunMeta(
            run_id=RUN_ID,
            task="build it",
            status="running",
            effort="standard",
            log_level="full",
            guild_path="/g",
            start_time="2025-01-01T00:00:00Z",
        )
        write_meta(run_dir, meta)
    (run_dir / SNAPSHOT).write_bytes(state_json)
    (run_dir / JOURNAL).write_bytes(b"junk\n")
    return run_dir


def _assert_marked_interrupted(workspace: Path, run_dir: Path, *, with_meta: bool) -> None:
    result = reconcile_runs(workspace, guild_path="/g")
    assert result.resumable is None
    assert set(result.interrupted) == {RUN_ID}
    meta = read_meta(run_dir)
    assert meta is not None
    assert meta.status == "interrupted"
    assert meta.error is not None and meta.error.kind == "interrupted"
    assert meta.error.message and "could not resume" in meta.error.message
    assert meta.end_time
    if with_meta:
        assert (meta.task, meta.start_time, meta.guild_path) == ("build it", "2025-01-01T00:00:00Z", "/g")
    assert not (run_dir / SNAPSHOT).exists() and not (run_dir / JOURNAL).exists()


@settings(max_examples=40, deadline=None)
@given(data=st.binary(max_size=300), with_meta=st.booleans())
def test_reconcile_marks_a_run_with_arbitrary_state_json_interrupted(data: bytes, with_meta: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = _unresumable_run(Path(tmp), data, with_meta=with_meta)
        _assert_marked_interrupted(Path(tmp), run_dir, with_meta=with_meta)


@pytest.mark.parametrize("name", sorted(WRONG_SNAPSHOTS))
def test_reconcile_marks_a_run_with_a_wrong_snapshot_interrupted(tmp_path: Path, name: str) -> None:
    run_dir = _unresumable_run(tmp_path, WRONG_SNAPSHOTS[name], with_meta=True)
    _assert_marked_interrupted(tmp_path, run_dir, with_meta=True)


# --- regressions for bugs found by these properties (all fixed) ---------------------------------

DEEP_JSON = b'{"a":' * 5000 + b"1" + b"}" * 5000


def test_deeply_nested_state_json_raises_checkpoint_error(tmp_path: Path) -> None:
    _write_snapshot_bytes(tmp_path, DEEP_JSON)
    with pytest.raises(CheckpointError):
        load_checkpoint(tmp_path)


def test_reconcile_survives_a_deeply_nested_state_json(tmp_path: Path) -> None:
    run_dir = _unresumable_run(tmp_path, DEEP_JSON, with_meta=True)
    _assert_marked_interrupted(tmp_path, run_dir, with_meta=True)


def test_a_deeply_nested_journal_line_is_ignored(tmp_path: Path) -> None:
    _write_snapshot_bytes(tmp_path, json.dumps(_valid_snapshot()).encode())
    body = b'{"seq":4,"x":' + DEEP_JSON + b"}"
    (tmp_path / JOURNAL).write_bytes(b"%08x " % zlib.crc32(body) + body + b"\n")
    _, seq = load_checkpoint(tmp_path)
    assert seq == 3


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
        call = _call(turn, "run_shell", json.dumps({"command": f"step {turn} " + "c" * 240}))
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
