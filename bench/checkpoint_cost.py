"""Checkpoint cost benchmark. Run: ``.venv/bin/python bench/checkpoint_cost.py`` (see bench/README.md).

A simulated 500-turn run (an entry role that delegated to one child; the child does every turn: an
assistant message with a tool call of ~150 characters of arguments, a ~600-character tool result, the
counters) writes a checkpoint after every turn, durably (real fsync), two ways on the same disk:

- ``journal``: the real ``Checkpointer`` (snapshot + append-only journal of per-turn deltas);
- ``naive``: the whole ``RunState`` rewritten with ``atomic_write`` every turn (the baseline).

Both are written each turn, in alternating order, into sibling temp dirs under ``<repo>/.bench-tmp``.
Prints total bytes written over the final state's size, and the per-turn write time late in the run
over early in the run (medians over turns 5-15 and 490-500). Never asserts on timing; exits 0.
``--quick``: 60 turns, one round, a couple of seconds (what ``./dev test`` runs).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Protocol

import msgspec

from orchestrator.conversation import FunctionCall, Message, ToolCall
from orchestrator.engine import checkpoint as cpmod
from orchestrator.engine.checkpoint import Checkpointer, Snapshot, load_checkpoint
from orchestrator.engine.state import PendingTurn, RoleFrame, RunState
from orchestrator.fsutil import atomic_write

REPO = Path(__file__).resolve().parents[1]
TURNS = 500
EARLY = range(5, 16)  # turns 5..15 inclusive
LATE = range(490, 501)  # turns 490..500 inclusive
ARGS_CHARS = 150
RESULT_CHARS = 600
ROUNDS = 3
# --quick: enough turns for a compaction, one round; proves the bench runs and prints its ratio lines
QUICK_TURNS = 60
QUICK_LATE = range(50, 61)


class NaiveCheckpointer:
    """The baseline: the whole state, atomically rewritten (temp, fsync, rename, fsync dir) every turn."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / cpmod.SNAPSHOT
        self.seq = 0
        self.bytes_written = 0
        self.last_size = 0  # the state's size as a snapshot, as of the latest write
        self._encoder = msgspec.json.Encoder()

    def write(self, state: RunState) -> None:
        self.seq += 1
        data = self._encoder.encode(Snapshot(version=cpmod.VERSION, seq=self.seq, state=state))
        atomic_write(self.path, data, durable=True)
        self.bytes_written += len(data)
        self.last_size = len(data)


def start_state() -> RunState:
    """An entry role suspended in its ``agent`` call, and the child that does the work."""
    call = ToolCall(id="call_0", function=FunctionCall(name="agent", arguments='{"role":"coder","task":"fix it"}'))
    root = RoleFrame(
        instance_id="lead-0-1",
        role="lead",
        depth=0,
        task="fix the failing tests",
        effort="standard",
        history=[
            Message(role="system", content="You lead the work. " * 20),
            Message(role="system", content="Effort: standard."),
            Message(role="user", content="fix the failing tests"),
        ],
        preamble=3,
        pending=PendingTurn(
            assistant=Message(role="assistant", content="Delegating.", tool_calls=[call]),
            awaiting=0,
            child_id="coder-1-2",
        ),
    )
    child = RoleFrame(
        instance_id="coder-1-2",
        role="coder",
        depth=1,
        task="fix it",
        parent_id="lead-0-1",
        parent_role="lead",
        history=[Message(role="system", content="You write code. " * 20), Message(role="user", content="fix it")],
    )
    return RunState(
        run_id="run-20250101-000000", started_at="2025-01-01T00:00:00Z", registry_counter=2, frames=[root, child]
    )


def play_turn(state: RunState, turn: int) -> None:
    """One model turn and its tool result, as the engine records them."""
    frame = state.frames[-1]
    command = f"pytest -q tests/test_module_{turn}.py -k case_{turn} "
    arguments = msgspec.json.encode({"command": (command + "-x " * ARGS_CHARS)[: ARGS_CHARS - 16]}).decode()
    call = ToolCall(id=f"call_{turn}", function=FunctionCall(name="run_shell", arguments=arguments))
    frame.history.append(Message(role="assistant", content=f"Turn {turn}: running the tests.", tool_calls=[call]))
    output = (f"tests/test_module_{turn}.py::case_{turn} PASSED\n" * 40)[:RESULT_CHARS]
    frame.history.append(Message(role="tool", content=output, tool_call_id=call.id))
    frame.tool_calls += 1
    frame.llm_calls += 1
    frame.completion_tokens += 60
    frame.prompt_tokens_total += 200 * turn
    frame.cached_prompt_tokens_total += 180 * turn
    frame.last_prompt_tokens = 200 * turn
    frame.logged_upto = len(frame.history)


class Writer(Protocol):
    bytes_written: int

    def write(self, state: RunState) -> None: ...


class Lane:
    """One contender's run, advanced turn by turn, each write optionally timed."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        self.state = start_state()
        self.turn = 0
        self.times: list[float] = []
        writer.write(self.state)  # the first checkpoint: the child pushed, before its first turn

    def step(self, *, timed: bool) -> None:
        self.turn += 1
        play_turn(self.state, self.turn)
        start = time.perf_counter()
        self.writer.write(self.state)
        if timed:
            self.times.append(time.perf_counter() - start)

    def advance_to(self, turn: int) -> None:
        while self.turn < turn:
            self.step(timed=False)


def full_run(scratch: Path, turns: int) -> dict[str, float | int | bool]:
    """Every turn of the run with both writers, alternating: bytes, snapshots, the running peak."""
    journal = Checkpointer(scratch / "full-journal", durable=True)
    naive = NaiveCheckpointer(scratch / "full-naive")
    lanes = [Lane(journal), Lane(naive)]
    snapshots, peak, peak_turn = 0, 0.0, 0
    started = time.perf_counter()
    for turn in range(1, turns + 1):
        for lane in lanes if turn % 2 else lanes[::-1]:
            lane.step(timed=False)
        snapshots += journal.journal_bytes == 0
        ratio = journal.bytes_written / naive.last_size  # same seq, so the state's size as a snapshot
        if ratio > peak:
            peak, peak_turn = ratio, turn
    elapsed = time.perf_counter() - started
    journal.close()
    state = lanes[0].state
    recovered, seq = load_checkpoint(scratch / "full-journal")
    return {
        "elapsed": elapsed,
        "final": naive.last_size,
        "messages": len(state.frames[-1].history),
        "journal_bytes": journal.bytes_written,
        "naive_bytes": naive.bytes_written,
        "snapshots": snapshots,
        "peak": peak,
        "peak_turn": peak_turn,
        "matches": seq == journal.seq and msgspec.to_builtins(recovered) == msgspec.to_builtins(state),
    }


def window_round(scratch: Path, tag: str, late_window: range) -> dict[str, tuple[float, float]]:
    """Early and late windows of both writers, timed interleaved so machine-load drift hits all four.

    Two lanes per writer: one advanced (untimed) to just before the early window, one to just before
    the late window; then the 11 window turns of the four lanes alternate, in a rotating order.
    """
    lanes: dict[str, Lane] = {}
    for name, make in (
        ("journal", lambda d: Checkpointer(d, durable=True)),
        ("naive", NaiveCheckpointer),
    ):
        for window, turns in (("early", EARLY), ("late", late_window)):
            run_dir = scratch / f"{tag}-{name}-{window}"
            run_dir.mkdir()
            lane = Lane(make(run_dir))
            lane.advance_to(turns.start - 1)
            lanes[f"{name}-{window}"] = lane
    order = list(lanes.values())
    for i in range(len(EARLY)):
        for lane in order[i % 4 :] + order[: i % 4]:
            lane.step(timed=True)
    for lane in order:
        if isinstance(lane.writer, Checkpointer):
            lane.writer.close()
    medians = {key: statistics.median(lane.times) * 1000 for key, lane in lanes.items()}
    return {name: (medians[f"{name}-early"], medians[f"{name}-late"]) for name in ("journal", "naive")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 60-turn run and one round (seconds): proves it runs")
    args = parser.parse_args(argv)
    turns, late_window, rounds_n = (QUICK_TURNS, QUICK_LATE, 1) if args.quick else (TURNS, LATE, ROUNDS)
    scratch_root = REPO / ".bench-tmp"
    scratch_root.mkdir(exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="checkpoint-cost-", dir=scratch_root))
    try:
        (scratch / "full-journal").mkdir()
        (scratch / "full-naive").mkdir()
        full = full_run(scratch, turns)
        rounds = [window_round(scratch, f"round{i}", late_window) for i in range(rounds_n)]
        ratios = {name: statistics.median(r[name][1] / r[name][0] for r in rounds) for name in ("journal", "naive")}
        early = {name: statistics.median(r[name][0] for r in rounds) for name in ("journal", "naive")}
        late = {name: statistics.median(r[name][1] for r in rounds) for name in ("journal", "naive")}
        final = int(full["final"])
        journal_ratio = int(full["journal_bytes"]) / final
        naive_ratio = int(full["naive_bytes"]) / final

        print(
            f"checkpoint cost: {turns} turns{' (--quick)' if args.quick else ''}, 2 frames, "
            f"durable writes under {scratch_root}"
        )
        print(f"  final state: {final / 1024:.0f} KiB ({full['messages']} messages in the leaf)")
        print(
            f"  journal: {int(full['journal_bytes']) / 1024:.0f} KiB written, {full['snapshots']} snapshot(s) after "
            f"the first, recovered state matches: {'yes' if full['matches'] else 'NO'}"
        )
        print(f"  naive:   {int(full['naive_bytes']) / 1024:.0f} KiB written (full run {full['elapsed']:.1f} s)")
        print(
            f"bytes written / final state size: {journal_ratio:.2f}x "
            f"(goal <= 3x; a full rewrite per turn scores ~{naive_ratio:.0f}x: naive measured {naive_ratio:.2f}x)"
        )
        print(f"  the running ratio peaks at {full['peak']:.2f} (turn {full['peak_turn']}, right after a compaction)")
        print(
            f"  median write, turns {EARLY.start}-{EARLY.stop - 1} vs {late_window.start}-{late_window.stop - 1} "
            f"(interleaved, median of {rounds_n} rounds): journal {early['journal']:.2f} -> {late['journal']:.2f} ms, "
            f"naive {early['naive']:.2f} -> {late['naive']:.2f} ms"
        )
        print(
            f"journal: turn-{turns}/turn-10 write time: {ratios['journal']:.2f}x (goal <= 2x); "
            f"naive: {ratios['naive']:.2f}x"
        )
        if not full["matches"]:
            print("WARNING: the journal checkpoint did not recover the final state", file=sys.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        try:
            scratch_root.rmdir()  # only when no other bench run is using it
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
