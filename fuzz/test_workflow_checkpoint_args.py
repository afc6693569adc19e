"""The four checkpoint tools fed random argument dicts through the in-process server pipeline.

Each example opens a fresh session at a random activity of the shipped workflows, then makes a random
sequence of yield/present/respond/resume calls with random (often wrong) arguments while a fake clock
jumps forward. Properties: no call ever ends in ``InternalError``; the session file always passes its
seal and decodes as a ``SessionFile``; a refused call leaves the file byte-identical; a successful
respond clears the gate and a successful fresh yield sets it.
"""

from __future__ import annotations

import io
import itertools
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from orchestrator.workflow.server import WorkflowMCP, build_state
from orchestrator.workflow.serverconfig import load_workflow_settings
from orchestrator.workflow.session.sessionfile import SessionFile
from orchestrator.workflow.tools.runtime import JsonLog

WORKFLOWS = Path(__file__).resolve().parents[1] / "workflows"
# (workflow, activity) -> the checkpoint ids it declares
ACTIVITIES = {
    ("code-review", "scope-review"): ["confirm-scope"],
    ("code-review", "assess"): ["confirm-findings", "blocking-gate"],
    ("code-review", "report"): ["publish-report", "next-round"],
    ("bug-fix", "reproduce"): ["cannot-reproduce"],
    ("bug-fix", "diagnose"): ["confirm-fix-plan"],
    ("meta", "end-workflow"): ["completion-confirmed"],
}
DECLARED = "<declared>"  # replaced by one of the current activity's checkpoint ids
CHECKPOINT_IDS = [DECLARED] * 4 + ["confirm-scope", "publish-report", "confirm-scope#2", "adhoc", "adhoc-2", ""]
OPTIONS = {  # checkpoint id -> its option ids
    "confirm-scope": ["proceed", "go-deeper", "narrow"],
    "confirm-findings": ["accept", "amend"],
    "blocking-gate": ["request-changes", "approve-with-notes"],
    "publish-report": ["keep-local", "post"],
    "next-round": ["finish", "another-round"],
    "cannot-reproduce": ["more-detail", "diagnose-anyway", "stop"],
    "confirm-fix-plan": ["proceed", "revise", "stop"],
    "completion-confirmed": ["confirm", "return"],
}
DECLARED_OPTION = "<option>"  # replaced by an option id of the current activity's checkpoints
OPTION_IDS = [DECLARED_OPTION] * 6 + ["bogus", "a", "b", ""]

scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=True) | st.text(max_size=6)
json_values = scalars | st.lists(scalars, max_size=2) | st.dictionaries(st.text(max_size=4), scalars, max_size=2)
option_dicts = st.fixed_dictionaries(
    {"id": st.sampled_from(["a", "b", "c"]), "label": st.sampled_from(["A", "B"])},
    optional={"description": st.text(max_size=6)},
)
ARG_KEYS = ["checkpoint_id", "message", "options", "option_id", "auto_advance", "condition_not_met", "reply"]
yield_args = st.fixed_dictionaries(
    {"checkpoint_id": st.sampled_from(CHECKPOINT_IDS)},
    optional={"message": st.sampled_from(["Pick one", ""]), "options": st.lists(option_dicts, max_size=3)},
)


def _respond(mode: str, option_id: str, flag: bool, reply: str | None) -> dict[str, Any]:
    args: dict[str, Any] = {"option_id": option_id} if mode == "option_id" else {mode: flag}
    return args if reply is None else {**args, "reply": reply}


respond_args = st.builds(
    _respond,
    st.sampled_from(["option_id", "auto_advance", "condition_not_met"]),
    st.sampled_from(OPTION_IDS),
    st.sampled_from([True, True, True, False]),
    st.none() | st.text(max_size=8),
)
PLAUSIBLE = {
    "yield_checkpoint": yield_args,
    "present_checkpoint": st.just({}),
    "respond_checkpoint": respond_args,
    "resume_checkpoint": st.fixed_dictionaries({}, optional={"agent_id": st.sampled_from(["w1", ""])}),
}
junk_args = st.dictionaries(st.sampled_from([*ARG_KEYS, "unexpected"]) | st.text(max_size=4), json_values, max_size=3)


@st.composite
def tool_call(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A tool and mostly plausible arguments for it; one call in four gets a few keys set to arbitrary JSON."""
    tool = draw(st.sampled_from([*sorted(PLAUSIBLE), "respond_checkpoint", "yield_checkpoint"]))
    args = dict(draw(PLAUSIBLE[tool]))
    if draw(st.integers(0, 3)) == 0:
        args.update(draw(junk_args))
    return tool, args


@st.composite
def index_strategy(draw: st.DrawFn) -> Any:
    """Nearly always the example's session; sometimes another index, a malformed one or a non-string."""
    if draw(st.integers(0, 9)) > 0:
        return "<session>"
    return draw(st.sampled_from(["AAAAAA", "bad", ""]) | scalars)


calls_strategy = st.lists(
    st.tuples(
        tool_call(),
        index_strategy(),
        st.sampled_from([0.0, 0.5, 2.999, 3.0, 4.0, 31.0]),
    ),
    min_size=1,
    max_size=8,
)


class _Harness:
    """One in-process server (built once) whose clock the examples move forward."""

    def __init__(self) -> None:
        shm = Path("/dev/shm")  # tmpfs where available: the store fsyncs every write
        self.root = Path(tempfile.mkdtemp(prefix="cp-fuzz-", dir=shm if shm.is_dir() else None))
        for name in ("ws", "tmp"):
            (self.root / name).mkdir()
        env = {
            "HOME": str(self.root / "home"),
            "WORKFLOW_WORKSPACE": str(self.root / "ws"),
            "WORKFLOW_DIR": str(WORKFLOWS),
            "WORKFLOW_SERVER_KEY_DIR": str(self.root / "keys"),
            "WORKFLOW_SERVER_INSTALL_DIR": str(self.root / "install"),
            "TMPDIR": str(self.root / "tmp"),
            "WORKFLOW_CORPUS_RECHECK_SECONDS": "60",
        }
        self.now = 1_900_000_000.0
        self.state = build_state(load_workflow_settings(env, cwd=self.root), log=JsonLog(io.StringIO()), env=env)
        self.state.clock = lambda: self.now
        self.server = WorkflowMCP(self.state)
        self.planning = self.root / "ws" / ".engineering" / "artifacts" / "planning"
        self.counter = itertools.count()

    def call(self, tool: str, args: dict[str, Any]) -> tuple[bool, str]:
        result = self.server.dispatch(tool, args)
        text = "".join(getattr(item, "text", "") for item in result.content)
        assert not text.startswith("InternalError"), f"{tool}({args!r}) crashed: {text}"
        return bool(result.is_error), text

    def fresh_session(self, workflow_id: str, activity_id: str) -> tuple[str, Path]:
        folder = self.planning / f"fz-{next(self.counter)}"
        failed, text = self.call("start_session", {"workflow_id": workflow_id, "planning_folder": str(folder)})
        assert not failed, text
        index = msgspec.json.decode(text)["session_index"]
        failed, text = self.call("next_activity", {"session_index": index, "activity_id": activity_id})
        assert not failed, text
        return index, self.state.store.locate(index).folder  # meta sessions start transient

    def read(self, folder: Path) -> tuple[bytes, SessionFile]:
        top = self.state.store.read(folder)  # seal verified over the raw bytes, then decoded
        return (folder / "session.json").read_bytes(), top


@pytest.fixture(scope="module")
def harness() -> Iterator[_Harness]:
    built = _Harness()
    try:
        yield built
    finally:
        shutil.rmtree(built.root, ignore_errors=True)


@given(st.sampled_from(sorted(ACTIVITIES)), calls_strategy)
def test_checkpoint_tools_never_crash_or_damage_the_session(
    harness: _Harness, where: tuple[str, str], drawn: list[tuple[tuple[str, dict[str, Any]], Any, float]]
) -> None:
    h = harness
    index, folder = h.fresh_session(*where)
    declared = ACTIVITIES[where]
    calls: list[tuple[str, dict[str, Any], Any, float]] = [
        ("yield_checkpoint", {"checkpoint_id": declared[0]}, "<session>", 0.0)  # start at an open gate
    ]
    for n, ((tool, args), raw_index, step) in enumerate(drawn):
        if args.get("checkpoint_id") == DECLARED:
            args = {**args, "checkpoint_id": declared[n % len(declared)]}
        if args.get("option_id") == DECLARED_OPTION:
            options = [option for cp in declared for option in OPTIONS[cp]]
            args = {**args, "option_id": options[n % len(options)]}
        calls.append((tool, args, raw_index, step))
    try:
        _run_calls(h, index, folder, calls)
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # keep the store's folder scan small


def _run_calls(h: _Harness, index: str, folder: Path, calls: list[tuple[str, dict[str, Any], Any, float]]) -> None:
    for tool, raw_args, raw_index, step in calls:
        h.now += step
        args = dict(raw_args)
        args["session_index"] = index if raw_index == "<session>" else raw_index
        before, _ = h.read(folder)
        failed, text = h.call(tool, args)
        event(f"{tool}: {text.split(':', 1)[0] if failed else 'ok'}")
        after, state = h.read(folder)
        if failed:
            assert after == before, f"{tool} refused ({text}) but changed the session file"
            continue
        if tool == "present_checkpoint":
            assert after == before
        elif tool == "respond_checkpoint":
            assert state.active_checkpoint is None
        elif tool == "yield_checkpoint":
            status = msgspec.json.decode(text)["status"]
            assert (state.active_checkpoint is not None) == (status == "yielded")
