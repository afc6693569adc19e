"""Checkpoint states shared by the checkpoint, reconciliation and crash tests: a run's root state, the
valid snapshot built from it, a table of snapshots that must not load, and ``Sim`` — a run simulated
the way the engine mutates its state, writing a checkpoint after every step."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import strategies as st

from orchestrator.conversation import FunctionCall, Message, ResultCard, ToolCall
from orchestrator.engine import checkpoint as cpmod
from orchestrator.engine.checkpoint import VERSION, Checkpointer, load_checkpoint
from orchestrator.engine.state import FinishedRoot, PendingTurn, Rejection, RoleFrame, RunState

Builtins = Any


def builtins(state: RunState) -> Builtins:
    return msgspec.to_builtins(state)


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


def valid_snapshot() -> dict[str, Any]:
    return {"version": VERSION, "seq": 3, "state": builtins(root_state())}


def _mutated(path: list[str], value: Any) -> bytes:
    doc = valid_snapshot()
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
    "truncated": json.dumps(valid_snapshot()).encode()[:-5],
    "trailing garbage": json.dumps(valid_snapshot()).encode() + b"}",
    "utf-16": json.dumps(valid_snapshot()).encode("utf-16"),
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

#: nested deeper than any JSON parser's recursion limit
DEEP_JSON = b'{"a":' * 5000 + b"1" + b"}" * 5000


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


def make_call(index: int, name: str, arguments: str) -> ToolCall:
    return ToolCall(id=f"call_{index}", function=FunctionCall(name=name, arguments=arguments))


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
        calls = [make_call(i, "run_shell", json.dumps({"command": f"ls {i}"})) for i in range(before)]
        calls.append(make_call(before, "agent", json.dumps({"role": "coder", "task": task})))
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
