"""Every workflow-server tool fed random argument dicts through the in-process pipeline (``WorkflowMCP.dispatch``).

Each example opens one to three sessions (durable, named, from a checkout, transient ``meta``) and drives
each into a state — fresh, at an activity, under an open checkpoint, completed, with a child — then makes a
random sequence of calls to any tool in ``TOOL_TABLE`` while a fake clock jumps forward. Arguments are
shaped by the tool's own input schema (real session indexes, activity/step/checkpoint/option/resource ids
from the shipped workflows, and near misses of each), and three calls in ten are then mangled (keys
dropped or nulled, values swapped for wrong types, unknown keys, huge or unicode strings, deep nesting,
huge or non-finite numbers, the whole dict replaced).

Properties, checked after every call:

1. no ``InternalError``: a refusal is ``<Code>: <message>``; a missing required key is refused as
   ``InvalidParams`` naming that key; any ``InvalidParams`` names a parameter;
2. every session folder under the test's roots passes its seal and decodes (``SessionStore.read``); a
   refused call, or a read-only tool, leaves every ``session.json`` byte-identical;
3. after each example ``health_check`` still answers ``healthy``.

The four server bugs this fuzz found (non-finite numbers in free-form objects, integers past float range in
``context_tokens``, an integral-float ``child_index``, NUL bytes and over-long names in path arguments) are
fixed in ``tools/params.py``; ``test_once_internal_errors_are_clean_refusals`` keeps their minimal cases.
"""

from __future__ import annotations

import io
import math
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from orchestrator.workflow.corpus.model import Corpus, Workflow
from orchestrator.workflow.errors import SessionStoreError
from orchestrator.workflow.server import TOOL_TABLE, WorkflowMCP, build_server, build_state
from orchestrator.workflow.serverconfig import load_workflow_settings
from orchestrator.workflow.tools.context import ToolSpec
from orchestrator.workflow.tools.runtime import JsonLog

WORKFLOWS = Path(__file__).resolve().parents[1] / "workflows"
SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in TOOL_TABLE}
TOOL_NAMES = sorted(SPECS)
READ_ONLY = frozenset(
    {"discover", "list_workflows", "health_check", "get_workflow_status", "inspect_session", "present_checkpoint"}
)
RESPOND_MODES = ("option_id", "option_id", "auto_advance", "condition_not_met")
ERROR_TEXT = re.compile(r"([A-Za-z][A-Za-z_]*): \S", re.DOTALL)
# The long profile runs for many minutes; the suite-wide 180 s timeout is for the quick one.
TIMEOUT = pytest.mark.timeout(0 if settings.default.max_examples > 1000 else 180)


class InternalErrorFound(AssertionError):
    """A call answered ``InternalError: …``."""


# ------------------------------------------------------------------------------------------ value pools

FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)
HUGE_STRINGS = ["x" * 100_000, "é" * 20_000, "🙂" * 5_000, "\u202e\u200b" * 3_000, "a\n" * 10_000]
# fmt: off
ODD_STRINGS = ["", " ", "\x00", "a\x00b", "../..", "/", "\\", "#", "---\n", "{{x}}", "%s", "null", "true", "0", "-1",
               "ＡＢＣＤＥＦ", "نص", "\t\r\n", "\U0001f600", "'\"", "<script>"]
# fmt: on


def _nest(depth: int, leaf: Any, as_dict: bool) -> Any:
    for _ in range(depth):
        leaf = {"k": leaf} if as_dict else [leaf]
    return leaf


# The MCP wire (pydantic's JSON parser) refuses nesting deeper than ~195, so 180 is reachable over stdio.
DEEP = [_nest(180, 1, False), _nest(180, "x", True), _nest(60, [1, {"a": None}], True)]
EXTREME_NUMBERS = [0, -1, 0.0, 1.0, 2.0, 2**63, -(2**63), 10**400, 1e308, -0.0, math.inf, -math.inf, math.nan]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.sampled_from(EXTREME_NUMBERS),
    st.text(max_size=12),
    st.sampled_from(ODD_STRINGS),
)
junk_values = st.one_of(
    scalars,
    st.sampled_from(HUGE_STRINGS),
    st.sampled_from(DEEP),
    st.recursive(
        scalars,
        lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3),
        max_leaves=8,
    ),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | FINITE | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids, max_size=3),
    max_leaves=6,
)
short_text = st.text(max_size=10) | st.sampled_from(["done", "ok", "", "produced the report"])


class CorpusIds:
    """Ids the shipped workflows declare, for schema-shaped arguments."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.workflows = sorted(corpus.workflows)
        self.resources: list[str] = []
        for namespace, table in sorted(corpus.resources.items()):
            for stem, resource in sorted(table.items()):
                self.resources += [stem, f"{namespace}/{stem}"]
                heading = next((ln[3:] for ln in resource.body.splitlines() if ln.startswith("## ")), None)
                if heading:
                    slug = re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")
                    self.resources += [f"{stem}#{slug}", f"{namespace}/{stem}#{slug}"]
        self.resources += ["nope", "meta/nope", "nope/nope", "#", "x#", "bug-fix/debugging-playbook#no-such"]

    def workflow(self, workflow_id: str | None) -> Workflow | None:
        return self.corpus.workflows.get(workflow_id or "")

    def activities(self, workflow_id: str | None) -> list[str]:
        wf = self.workflow(workflow_id)
        return [a.id for a in wf.activities] if wf else []

    def all_activities(self) -> list[str]:
        return sorted({a for wf in self.workflows for a in self.activities(wf)})

    def steps(self, workflow_id: str | None, activity_id: str | None) -> list[str]:
        wf = self.workflow(workflow_id)
        activity = wf.get_activity(activity_id) if wf and activity_id else None
        return [f.step.id for f in activity.flattened_steps()] if activity else []

    def checkpoints(self, workflow_id: str | None, activity_id: str | None) -> list[tuple[str, list[str]]]:
        wf = self.workflow(workflow_id)
        activity = wf.get_activity(activity_id) if wf and activity_id else None
        if activity is None:
            return []
        return [(cp.id, [o.id for o in cp.options or ()]) for cp in activity.checkpoints()]

    def with_checkpoints(self, workflow_id: str) -> list[str]:
        return [a for a in self.activities(workflow_id) if self.checkpoints(workflow_id, a)]


# ------------------------------------------------------------------------------------------ the harness


class _Harness:
    """One in-process server over a temp copy of ``workflows/``; the examples move its clock forward."""

    def __init__(self) -> None:
        shm = Path("/dev/shm")  # tmpfs where available: the store fsyncs every write
        self.root = Path(tempfile.mkdtemp(prefix="tool-fuzz-", dir=shm if shm.is_dir() else None))
        shutil.copytree(WORKFLOWS, self.root / "workflows")
        self.ws, self.tmp = self.root / "ws", self.root / "tmp"
        self.checkout = self.ws / "proj"  # a git checkout under the workspace (a project)
        (self.checkout / ".git").mkdir(parents=True)
        (self.checkout / ".git" / "config").write_text('[remote "origin"]\n\turl = https://github.com/acme/proj.git\n')
        (self.checkout / "src").mkdir()
        (self.ws / "plain").mkdir()  # a folder outside any checkout
        self.tmp.mkdir()
        env = {
            "HOME": str(self.root / "home"),
            "WORKFLOW_WORKSPACE": str(self.ws),
            "WORKFLOW_DIR": str(self.root / "workflows"),
            "WORKFLOW_SERVER_KEY_DIR": str(self.root / "keys"),
            "WORKFLOW_SERVER_INSTALL_DIR": str(self.root / "install"),
            "TMPDIR": str(self.tmp),
            "WORKFLOW_CORPUS_RECHECK_SECONDS": "3600",
        }
        self.now = 1_900_000_000.0
        self.state = build_state(load_workflow_settings(env, cwd=self.root), log=JsonLog(io.StringIO()), env=env)
        self.state.clock = lambda: self.now
        self.server: WorkflowMCP = build_server(self.state)
        self.planning = self.ws / ".engineering" / "artifacts" / "planning"
        self.ids = CorpusIds(self.state.corpus())
        self.live: list[str] = []  # indexes opened in this example
        self.tokens: list[str] = []  # trace tokens handed out by next_activity
        self.snapshot: dict[Path, bytes] = {}
        self.stale = self._graveyard()  # indexes whose folders are gone (fixed: replayed draws must match)

    # ---------------------------------------------------------------------------- calls and checks

    def call(self, tool: str, args: dict[str, Any] | None) -> tuple[bool, str, Any]:
        """Dispatch one call and check properties 1 and 2. Returns (is_error, text, decoded JSON or None)."""
        result = self.server.dispatch(tool, args)
        text = "".join(getattr(item, "text", "") for item in result.content)
        failed = bool(result.is_error)
        where = f"{tool}({_show(args)})"
        after = self._scan()
        for folder in after:
            try:
                self.state.store.read(folder)
            except SessionStoreError as exc:
                raise AssertionError(f"{where} left {folder} failing its check: {exc}") from None
        if failed or tool in READ_ONLY:
            changed = sorted(
                str(f) for f in after.keys() | self.snapshot.keys() if after.get(f) != self.snapshot.get(f)
            )
            assert not changed, f"{where} {'refused' if failed else 'is read-only'} but changed {changed}: {text[:300]}"
        self.snapshot = after
        if text.startswith("InternalError"):
            raise InternalErrorFound(f"{where} crashed: {text[:2000]}")
        if failed:
            _check_refusal(tool, args or {}, text, where)
        if currently_in_test_context():
            event(f"{tool}: {text.split(':', 1)[0] if failed else 'ok'}")
        decoded = None
        if not failed and text.startswith("{"):
            decoded = msgspec.json.decode(text)
            for found in (decoded.get("session_index"), (decoded.get("client") or {}).get("session_index")):
                if isinstance(found, str) and found not in self.live:
                    self.live.append(found)
        token = (result.meta or {}).get("trace_token")
        if isinstance(token, str):
            self.tokens = [*self.tokens[-4:], token]
        return failed, text, decoded

    def _scan(self) -> dict[Path, bytes]:
        found: dict[Path, bytes] = {}
        for base in (self.ws, self.tmp):
            for dirpath, dirnames, filenames in os.walk(base):
                dirnames[:] = [d for d in dirnames if d != ".git"]
                if "session.json" in filenames:
                    found[Path(dirpath)] = (Path(dirpath) / "session.json").read_bytes()
        return found

    def context(self, index: Any) -> tuple[str | None, str | None, str | None]:
        """(workflow_id, current_activity, active checkpoint id) of a session, read without the server."""
        if not isinstance(index, str) or index not in self.live:
            return None, None, None
        try:
            session = self.state.store.locate(index).state
        except SessionStoreError:
            return None, None, None
        active = session.active_checkpoint.checkpoint_id if session.active_checkpoint else None
        return session.workflow_id, session.current_activity or None, active

    def _graveyard(self) -> list[str]:
        indexes = [self.call("start_session", {"workflow_id": wf})[2]["session_index"] for wf in ("bug-fix", "meta")]
        self.reset()
        return indexes

    def reset(self) -> None:
        """Drop this example's sessions (keeps the folder scans small) and move to a new day."""
        self.live, self.tokens = [], []
        for folder in (self.ws / ".engineering", self.checkout / ".engineering"):
            shutil.rmtree(folder, ignore_errors=True)
        for child in self.tmp.iterdir():
            shutil.rmtree(child, ignore_errors=True)
        self.snapshot = self._scan()
        self.now += 86_400.0


def _show(args: Any) -> str:
    text = repr(args)
    return text if len(text) < 600 else text[:600] + "…"


def _check_refusal(tool: str, args: dict[str, Any], text: str, where: str) -> None:
    match = ERROR_TEXT.match(text)
    assert match, f"{where}: refusal is not '<Code>: <message>': {text[:300]!r}"
    code = match.group(1)
    spec = SPECS.get(tool)
    if spec is None:
        assert code == "UnknownTool" and tool in text, f"{where}: {text[:300]}"
        return
    missing = [key for key in spec.schema.get("required", ()) if args.get(key) is None]
    if missing:
        expected = f"InvalidParams: Missing required parameter '{missing[0]}'"
        assert text.startswith(expected), f"{where}: expected {expected!r}, got {text[:300]!r}"
    if code == "InvalidParams":
        names = {str(k) for k in args} | set(spec.schema.get("properties", {}))
        assert any(name and name in text for name in names), f"{where}: refusal names no parameter: {text[:300]}"


# ------------------------------------------------------------------------------------------ strategies


def _near_misses(index: str) -> list[str]:
    flipped = ("B" if index[0] == "A" else "A") + index[1:]
    return [flipped, index.lower(), index[:5], index + "A", f" {index}", index.replace(index[-1], "1")]


@st.composite
def index_arg(draw: st.DrawFn, h: _Harness, tool: str) -> Any:
    """Nearly always a live session index (for a checkpoint tool, often one with an open checkpoint); else a
    stale one, a near miss, or junk."""
    gated = [i for i in h.live if h.context(i)[2]] if "checkpoint" in tool else []
    if gated and draw(st.integers(0, 3)) < 3:
        return draw(st.sampled_from(gated))
    roll = draw(st.integers(0, 19))
    if h.live and roll < 16:
        return draw(st.sampled_from(h.live))
    if roll < 17:
        return draw(st.sampled_from(h.stale))
    if h.live and roll < 19:
        return draw(st.sampled_from(_near_misses(draw(st.sampled_from(h.live)))))
    return draw(st.sampled_from(["AAAAAA", "222222", "", "abcdef", "ABCDE!"]) | scalars)


def _pool(h: _Harness, key: str, ctx: tuple[str | None, str | None, str | None]) -> st.SearchStrategy[Any] | None:
    """Plausible values for a parameter (or array item ``key[]``) by name; ``None``: use the schema type."""
    ids, (wf, current, active) = h.ids, ctx
    own = ids.activities(wf) or ids.all_activities()
    steps = ids.steps(wf, current) or ["make-it-fail", "collect-changes"]
    cps = ids.checkpoints(wf, current)
    cp_ids = [c for c, _ in cps] + ([active] if active else [])
    options = [o for _, opts in cps for o in opts] or ["proceed"]
    wf_ids = [*ids.workflows, "nope", "Bug-Fix", "bug-fix ", ""]
    declared = [d.name for d in (ids.workflow(wf).variables if ids.workflow(wf) else ())]
    if key == "context_tokens":
        return st.integers(1, 300_000) | st.sampled_from([1, 50, 10**6, 2**63, 10**300])
    if key == "child_index":
        return st.integers(0, 3) | st.just(10**30)
    if key == "variables_changed":
        return st.dictionaries(st.sampled_from([*declared, "fz_var", ""]), json_values, max_size=3)
    if key == "usage":
        counters = st.integers(0, 10**9) | FINITE | st.text(max_size=3)
        return st.dictionaries(st.sampled_from(["input_tokens", "output_tokens", "cost", ""]), counters, max_size=3)
    # fmt: off
    pools: dict[str, list[Any]] = {
        "workflow_id": wf_ids,
        "target_workflow_id": wf_ids,
        "activity_id": [*([current] * 3 if current else []), *own, "__terminal__", "complete", "nope", "x" * 300],
        "returning_activity_id": [current or "", *own[:2], "nope"],
        "activity": [*own, "nope"],
        "step_id": [*steps, "nope", "", "make-it-fail"],
        "checkpoint_id": [*cp_ids * 3, "adhoc-choice", "confirm-scope#2", "cannot-reproduce", "nope"],
        "option_id": [*options, "bogus", ""],
        "resource_id": ids.resources,
        "agent_id": ["orchestrator", "worker", "w1", "w2", ""],
        "context_mode": ["persistent", "fresh", "Fresh"],
        "bundle": ["reference", "full", "none"],
        "basis": ["delta", "cumulative", "total"],
        "view": [*SPECS["inspect_session"].schema["properties"]["view"]["enum"], "raw"],
        "variable": [*declared, "user_request", "planning_folder_path", "nope"],
        "repo": ["acme/proj", "acme/widgets", "https://github.com/acme/proj.git", "git@github.com:acme/proj.git",
                 "not a repo", "a/b/c", "../x", ""],
        "planning_slug": ["fz-slug", "", ".", "..", "a/b", " x", "slug-" + "y" * 60],
        "user_request": ["fix the login bug", "review my pull request", "resume where we left off",
                         "continue the previous session", "", "bug"],
        "exit": ["default", *own[:3], f"checkpoint:{cp_ids[0] if cp_ids else 'x'}:{options[0]}", ""],
        "transition_condition": ["default", "reproduced == true", ""],
        "planning_folder": [*sorted(str(f) for f in h.snapshot), *(str(h.planning / n) for n in ("fz-new", "fz-0", "")),
                            str(h.planning / "a" / "b"), "relative/path", str(h.root / "elsewhere" / "fz-x"),
                            str(h.checkout / ".engineering" / "artifacts" / "planning" / "fz-proj"),
                            str(h.planning / "..")],
        "working_directory": [str(h.checkout), str(h.checkout / "src"), str(h.ws / "plain"), str(h.root / "missing"),
                              "proj", str(h.ws)],
        "trace_tokens[]": [*h.tokens, "", "x.y", "not-a-token"],
        "id": ["a", "b", "report", ""],  # option and artifact ids
        "label": ["A", "B", ""],
        "name": ["report.md", "a/b.md", ""],
        "path": ["report.md", "../escape.md", "/abs/x.md", ""],
    }
    # fmt: on
    return st.sampled_from(pools[key]) if key in pools else None


def _value(h: _Harness, ctx: tuple[str | None, str | None, str | None], key: str, schema: dict[str, Any]) -> Any:
    """A strategy for one parameter: its pool, else values of its schema type honouring the bounds."""
    pool = _pool(h, key, ctx)
    kind = schema.get("type")
    if pool is not None:
        return pool
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1)
        return st.integers(low, low + 10**6)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(_value(h, ctx, f"{key}[]", schema.get("items", {})), max_size=3)
    if kind == "object" and schema.get("properties"):
        props, required = schema["properties"], set(schema.get("required", ()))
        return st.fixed_dictionaries(
            {k: _value(h, ctx, k, v) for k, v in props.items() if k in required},
            optional={k: _value(h, ctx, k, v) for k, v in props.items() if k not in required},
        )
    if kind == "object":
        return st.dictionaries(st.text(max_size=6), json_values, max_size=3)
    return short_text if kind == "string" else json_values


@st.composite
def shaped_args(draw: st.DrawFn, h: _Harness, spec: ToolSpec, index: Any) -> dict[str, Any]:
    """Schema-shaped arguments: every required key, each optional key with probability ~0.4."""
    ctx = h.context(index)
    required = set(spec.schema.get("required", ()))
    args: dict[str, Any] = {}
    for key, sub in spec.schema.get("properties", {}).items():
        if key == "session_index":
            args[key] = index
        elif key in required or draw(st.integers(0, 4)) < 2:
            args[key] = draw(_value(h, ctx, key, sub))
    if spec.name == "respond_checkpoint" and draw(st.integers(0, 4)) < 4:  # mostly exactly one answer mode
        mode = draw(st.sampled_from(RESPOND_MODES))
        value = draw(_value(h, ctx, mode, spec.schema["properties"][mode]) if mode == "option_id" else st.just(True))
        args = {k: v for k, v in args.items() if k not in RESPOND_MODES} | {mode: value}
    return args


@st.composite
def mangled(draw: st.DrawFn, spec: ToolSpec | None, args: dict[str, Any]) -> dict[str, Any] | None:
    """One to three mutations: drop/null a key, wrong-typed value, unknown key, or a whole junk dict."""
    props = list((spec.schema.get("properties") if spec else None) or {})
    out = dict(args)
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["drop", "null", "retype", "retype", "unknown", "replace", "none"]))
        keys = sorted(out)
        if how == "drop" and keys:
            out.pop(draw(st.sampled_from(keys)))
        elif how == "null" and (keys or props):
            out[draw(st.sampled_from(keys or props))] = None
        elif how == "retype" and (keys or props):
            out[draw(st.sampled_from(keys + props))] = draw(junk_values)
        elif how == "unknown":
            out[draw(st.sampled_from(["unexpected", "sessionIndex", "__proto__", ""]) | st.text(max_size=6))] = draw(
                junk_values
            )
        elif how == "replace":
            names = (st.sampled_from(props) if props else st.nothing()) | st.text(max_size=5)
            out = draw(st.dictionaries(names, junk_values, max_size=4))
        elif how == "none" and draw(st.integers(0, 3)) == 0:
            return None
    return out


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return 0.0
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value


def _confine(h: _Harness, args: dict[str, Any] | None) -> dict[str, Any] | None:
    """Keep absolute path arguments inside the test root (the server may create folders there)."""
    if not args:
        return args
    out = dict(args)
    for key in ("planning_folder", "working_directory"):
        value = out.get(key)
        if isinstance(value, str) and value.startswith("/") and not os.path.normpath(value).startswith(f"{h.root}/"):
            out[key] = str(h.root.joinpath(*[p if p != ".." else "up" for p in value.split("/") if p]))
    return out


# ------------------------------------------------------------------------------------------ examples

SESSION_KINDS = ["bug-fix", "code-review", "named", "checkout", "meta", "meta-checkout"]
TARGET_STATES = ["fresh", "initial", "activity", "checkpoint", "checkpoint", "completed", "child"]


def _open_session(h: _Harness, kind: str, position: int = 0) -> str | None:
    args: dict[str, Any] = {"workflow_id": kind if kind in ("bug-fix", "code-review") else "bug-fix"}
    if kind == "named":
        args["planning_folder"] = str(h.planning / f"fz-{position}")
    elif kind == "checkout":
        args["working_directory"] = str(h.checkout / "src")
    elif kind == "meta":
        args = {"user_request": "fix the crash"}
    elif kind == "meta-checkout":
        args = {"working_directory": str(h.checkout), "target_workflow_id": "code-review", "fresh": True}
    failed, text, decoded = h.call("start_session", args)
    assert not failed, f"start_session({args}) failed: {text}"
    assert decoded is not None
    client = decoded.get("client") or {}
    return client.get("session_index") or decoded.get("session_index")


def _drive(h: _Harness, index: str, target: str, pick: int) -> None:
    """Move a fresh session towards ``target`` with plausible calls (their outcomes are checked, not required)."""
    wf, _, _ = h.context(index)
    activities = h.ids.activities(wf)
    if target == "fresh" or not activities:
        return
    if target == "child":
        h.call("dispatch_child", {"session_index": index, "workflow_id": ["bug-fix", "code-review"][pick % 2]})
        return
    gated = h.ids.with_checkpoints(wf or "")
    if target == "checkpoint" and gated:
        where = gated[pick % len(gated)]
    elif target == "activity":
        where = activities[pick % len(activities)]
    else:
        where = activities[0]
    h.call("next_activity", {"session_index": index, "activity_id": where})
    if target == "checkpoint" and gated:
        h.call("yield_checkpoint", {"session_index": index, "checkpoint_id": h.ids.checkpoints(wf, where)[0][0]})
    elif target == "completed":
        h.call("next_activity", {"session_index": index, "activity_id": "__terminal__"})


@st.composite
def one_call(draw: st.DrawFn, h: _Harness) -> tuple[str, dict[str, Any] | None]:
    tool = draw(st.sampled_from([*TOOL_NAMES, "no_such_tool"]))
    spec = SPECS.get(tool)
    index = draw(index_arg(h, tool))
    args = draw(shaped_args(h, spec, index)) if spec else {"session_index": index}
    if draw(st.integers(0, 9)) >= 7:  # 0 (the value Hypothesis favours) keeps the arguments well-formed
        args = draw(mangled(spec, args))
    return tool, _confine(h, args)


@pytest.fixture(scope="module")
def harness() -> Iterator[_Harness]:
    built = _Harness()
    try:
        yield built
    finally:
        shutil.rmtree(built.root, ignore_errors=True)


@TIMEOUT
@given(
    st.lists(
        st.tuples(st.sampled_from(SESSION_KINDS), st.sampled_from(TARGET_STATES), st.integers(0, 9)),
        min_size=1,
        max_size=3,
    ),
    st.data(),
)
def test_every_tool_survives_random_arguments(
    harness: _Harness, sessions: list[tuple[str, str, int]], data: st.DataObject
) -> None:
    h = harness
    try:
        for position, (kind, target, pick) in enumerate(sessions):
            index = _open_session(h, kind, position)
            if index is not None:
                _drive(h, index, target, pick)
                event(f"state: {target}")
        for _ in range(data.draw(st.integers(1, 16), label="calls")):
            h.now += data.draw(st.sampled_from([3.0, 0.0, 0.5, 31.0, 600.0]), label="clock step")
            tool, args = data.draw(one_call(h), label="call")
            h.call(tool, args)
        failed, text, decoded = h.call("health_check", {})
        assert not failed and decoded is not None and decoded["status"] == "healthy", text
    finally:
        h.reset()


# ------------------------------------------------------------------------------- fixed bugs (regressions)


def _prepared(h: _Harness, tool: str) -> str:
    """A transient meta session (for dispatch_child), else bug-fix at ``reproduce`` with one child."""
    index = _open_session(h, "meta" if tool == "dispatch_child" else "bug-fix")
    assert index is not None
    if tool != "dispatch_child":
        h.call("next_activity", {"session_index": index, "activity_id": "reproduce"})
        h.call("dispatch_child", {"session_index": index, "workflow_id": "code-review"})
    return index


# (tool, arguments, the parameter a refusal must name; None: the call now succeeds)
# fmt: off
ONCE_INTERNAL_ERRORS = [
    pytest.param("next_activity", {"activity_id": "reproduce", "variables_changed": {"x": math.inf}},
                 "variables_changed.x", id="variables_changed-inf"),
    pytest.param("record_usage", {"activity": "reproduce", "usage": {"input_tokens": math.nan}, "basis": "delta"},
                 "usage.input_tokens", id="usage-nan"),
    pytest.param("get_activity", {"context_tokens": 10**400}, "context_tokens", id="get_activity-context_tokens"),
    pytest.param("next_activity", {"activity_id": "reproduce", "agent_id": "w1", "context_tokens": 10**400},
                 "context_tokens", id="next_activity-context_tokens"),
    pytest.param("inspect_session", {"child_index": 0.0}, None, id="inspect_session-child_index"),
    pytest.param("start_session", {"planning_folder": "/a\x00/b"}, "planning_folder", id="planning_folder-nul"),
    pytest.param("start_session", {"working_directory": "<root>/\x00"}, "working_directory",
                 id="working_directory-nul"),
    pytest.param("start_session", {"workflow_id": "bug-fix", "planning_folder": "<planning>/" + "y" * 300},
                 "planning_folder", id="planning_folder-too-long"),
    pytest.param("dispatch_child", {"workflow_id": "bug-fix", "planning_slug": "y" * 300}, "planning_slug",
                 id="planning_slug-too-long"),
]
# fmt: on


@pytest.mark.parametrize(("tool", "raw", "names"), ONCE_INTERNAL_ERRORS)
def test_once_internal_errors_are_clean_refusals(
    harness: _Harness, tool: str, raw: dict[str, Any], names: str | None
) -> None:
    """Each of these once answered ``InternalError`` (one after saving a move); now each is refused as
    ``InvalidParams`` naming the parameter with nothing written, or (an integral float index) served."""
    h = harness
    try:
        index = _prepared(h, tool)
        args = {
            k: v.replace("<root>", str(h.root)).replace("<planning>", str(h.planning)) if isinstance(v, str) else v
            for k, v in raw.items()
        }
        if tool != "start_session":
            args["session_index"] = index
        failed, text, _ = h.call(tool, args)  # checks the files (a refusal changes none), never InternalError
        if names is None:
            assert not failed, text
        else:
            assert failed and text.startswith("InvalidParams: ") and f"'{names}'" in text, text
    finally:
        h.reset()
