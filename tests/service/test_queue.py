"""The queue state machine: one table row per transition, every error code, properties."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.conversation import CardError, ResultCard
from orchestrator.engine.runfolder import RunMeta
from orchestrator.service import queue as q
from orchestrator.service.queue import (
    Answer,
    Bind,
    Cancel,
    Dispatch,
    Edit,
    Effects,
    Enqueue,
    InvalidQueueBody,
    QueueError,
    QueueItem,
    QueueNotFound,
    QueueTransitionError,
    Release,
    Repair,
    Requeue,
    Settle,
    Withdraw,
    transition,
)

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
STAMP = "2024-05-01T12:00:00.000Z"
QUEUED = "2024-05-01T10:00:00.000Z"
R1, R2, R3 = "run-20240501-110000", "run-20240501-111500", "run-20240501-113000"
END = "2024-05-01T11:10:00.000Z"


def it(item_id: str, status: str = "waiting", **fields: Any) -> QueueItem:
    return QueueItem(id=item_id, task=fields.pop("task", f"task {item_id}"), status=status, queued_at=QUEUED, **fields)


def meta(run_id: str, status: str, *, task: str = "task a", summary: str | None = None, **fields: Any) -> RunMeta:
    result = None
    if summary is not None:
        card_status = status if status in ("success", "error", "needs_clarification") else "error"
        result = ResultCard(status=card_status, summary=summary, error=fields.pop("card_error", None))
    return RunMeta(
        run_id=run_id,
        task=task,
        status=status,
        effort="standard",
        log_level="full",
        guild_path="/guild",
        start_time="2024-05-01T11:00:00.000Z",
        end_time=fields.pop("end_time", END if status != "running" else None),
        result=result,
        **fields,
    )


def run(items: list[QueueItem], event: q.QueueEvent) -> tuple[list[QueueItem], Effects]:
    before = list(items)
    after, effects = transition(items, event, NOW)
    assert items == before, "transition mutated its input"
    return after, effects


# --- the boot table, row by row -------------------------------------------------------------------------------


@dataclass
class Row:
    name: str
    before: list[QueueItem]
    event: q.QueueEvent
    after: list[QueueItem]
    tick: bool


def _new(item_id: str, **fields: Any) -> QueueItem:
    return QueueItem(id=item_id, status="waiting", queued_at=STAMP, **fields)


PARKED = it("p", "needs_input", run_id=R1, continues_from=R1, question="which db?", effort="quick", log_level="full")
ERRORED = it("e", "error", run_id=R1, continues_from=R3, result_summary="boom", error="tests failed", settled_at=END)
BOUND = it("a", "active", run_id=R1, continues_from=R3, question="old q", answer="old a", effort="thorough")

ROWS = [
    Row(
        "POST /api/queue: waiting at tail",
        [it("x"), it("d", "done", settled_at=END)],
        Enqueue(task="new", effort="quick", item_id="n"),
        [it("x"), it("d", "done", settled_at=END), _new("n", task="new", effort="quick")],
        True,
    ),
    Row(
        "POST /api/runs: waiting at head, logLevel and lineage recorded",
        [it("x")],
        Enqueue(task="go", log_level="standard", continues_from=R1, at_head=True, item_id="n"),
        [_new("n", task="go", log_level="standard", continues_from=R1), it("x")],
        True,
    ),
    Row("tick: dispatch marker", [it("a"), it("b")], Dispatch("a"), [it("a", "active"), it("b")], False),
    Row("accepted: bind runId", [it("a", "active")], Bind("a", R1), [it("a", "active", run_id=R1)], False),
    Row("run_in_progress: back to waiting", [it("a", "active"), it("b")], Release("a"), [it("a"), it("b")], False),
    Row("failed POST /api/runs: withdrawn", [it("a"), it("b")], Withdraw("a"), [it("b")], False),
    Row("withdraw an unbound marker", [it("a", "active")], Withdraw("a"), [], False),
    Row(
        "PATCH: task and effort",
        [it("a"), it("b")],
        Edit("b", task="edited", effort="thorough"),
        [it("a"), it("b", task="edited", effort="thorough")],
        False,
    ),
    Row("DELETE: cancelled + settledAt", [it("a")], Cancel("a"), [it("a", "cancelled", settled_at=STAMP)], False),
    Row(
        "answer: front of file, answer set, runId dropped, lineage = parked run",
        [it("x"), it("d", "done", settled_at=END), PARKED],
        Answer("p", "postgres"),
        [
            it("p", continues_from=R1, question="which db?", answer="postgres", effort="quick", log_level="full"),
            it("x"),
            it("d", "done", settled_at=END),
        ],
        True,
    ),
    Row(
        "settle success: done with summary, runId, settledAt",
        [BOUND],
        Settle(R1, "success", summary="did it"),
        [msgspec.structs.replace(BOUND, status="done", result_summary="did it", settled_at=STAMP)],
        True,
    ),
    Row(
        "settle error: error text",
        [BOUND],
        Settle(R1, "error", summary="gave up", error="tests failed"),
        [
            msgspec.structs.replace(
                BOUND, status="error", result_summary="gave up", error="tests failed", settled_at=STAMP
            )
        ],
        True,
    ),
    Row(
        "settle needs_clarification: the typed question, lineage = this run, re-park clears answer",
        [BOUND],
        Settle(R1, "needs_clarification", summary="waiting for an answer to: which db?", question="which db?"),
        [it("a", "needs_input", run_id=R1, continues_from=R1, question="which db?", effort="thorough")],
        True,
    ),
    Row(
        "settle needs_clarification: the question, whatever the summary says",
        [it("a", "active", run_id=R1)],
        Settle(R1, "needs_clarification", summary="(anything)", question="Which database?"),
        [it("a", "needs_input", run_id=R1, continues_from=R1, question="Which database?")],
        True,
    ),
    Row(
        "settle cancelled (the operator stopped the run): cancelled, runId kept, who stopped it",
        [BOUND],
        Settle(R1, "cancelled", error="the operator stopped the run (from the web UI)"),
        [
            msgspec.structs.replace(
                BOUND, status="cancelled", error="the operator stopped the run (from the web UI)", settled_at=STAMP
            )
        ],
        True,
    ),
    Row(
        "settle: an item no longer active is not touched",
        [it("a", "done", run_id=R1, settled_at=END)],
        Settle(R1, "error", error="late"),
        [it("a", "done", run_id=R1, settled_at=END)],
        True,
    ),
    Row(
        "settle: runId mismatch is not touched",
        [it("a", "active", run_id=R2)],
        Settle(R1, "success", summary="x"),
        [it("a", "active", run_id=R2)],
        True,
    ),
    Row(
        "requeue: tail, moved not duplicated, lineage = errored run, outcome dropped",
        [ERRORED, it("x")],
        Requeue("e"),
        [it("x"), it("e", continues_from=R1)],
        True,
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_transition_row(row: Row) -> None:
    after, effects = run(row.before, row.event)
    assert after == row.after
    assert effects.tick is row.tick
    assert effects.changed is (after != row.before)


def test_settle_error_without_message_falls_back_to_the_summary() -> None:
    after, _ = run([it("a", "active", run_id=R1)], Settle(R1, "error", summary="ran out of budget"))
    assert after[0].error == "ran out of budget"
    after, _ = run([it("a", "active", run_id=R1)], Settle(R1, "error"))
    assert after[0].error


def test_settle_from_meta_prefers_the_card_error_then_the_meta_error() -> None:
    card = meta(R1, "error", summary="s", card_error=CardError(kind="timeout", message="card says"))
    assert Settle.from_meta(card).error == "card says"
    bare = meta(R1, "interrupted", error=CardError(kind="interrupted", message="meta says"))
    assert Settle.from_meta(bare).error == "meta says"
    assert Settle.from_meta(bare, at_end_time=True).at == END


def test_the_affected_item_is_returned() -> None:
    _, effects = run([], Enqueue(task="t", item_id="n"))
    assert effects.item == _new("n", task="t")
    _, effects = run([it("a")], Cancel("a"))
    assert effects.item is not None and effects.item.status == "cancelled"


def test_enqueue_generates_uuid4_ids() -> None:
    first, second = Enqueue(task="t"), Enqueue(task="t")
    assert first.item_id != second.item_id
    assert len(first.item_id) == 36 and first.item_id[14] == "4"


# --- PATCH moves -------------------------------------------------------------------------------------

MIXED = [it("w0"), it("d", "done", settled_at=END), it("w1"), it("c", "cancelled", settled_at=END), it("w2")]


@pytest.mark.parametrize(
    ("item_id", "position", "order"),
    [
        ("w2", 0, ["w2", "w0", "d", "w1", "c"]),
        ("w0", 1, ["d", "w1", "w0", "c", "w2"]),
        ("w0", 2, ["d", "w1", "c", "w2", "w0"]),
        ("w0", 99, ["d", "w1", "c", "w2", "w0"]),
        ("w2", -5, ["w2", "w0", "d", "w1", "c"]),
        ("w1", 1, ["w0", "d", "w1", "c", "w2"]),
    ],
)
def test_patch_position_is_an_index_among_waiting_items_clamped(item_id: str, position: int, order: list[str]) -> None:
    after, _ = run(MIXED, Edit(item_id, position=position))
    assert [i.id for i in after] == order
    waiting = [i.id for i in after if i.status == "waiting"]
    assert waiting.index(item_id) == min(max(position, 0), 2)


def test_patch_position_with_no_other_waiting_item_stays_put() -> None:
    items = [it("d", "done", settled_at=END), it("w")]
    after, effects = run(items, Edit("w", position=0))
    assert after == items and not effects.changed


@pytest.mark.parametrize(("value", "expected"), [(0, 0), (3, 3), (-1, -1), (99, 99), (2.0, 2)])
def test_parse_position_accepts_numbers(value: object, expected: int) -> None:
    assert q.parse_position(value) == expected


@pytest.mark.parametrize("value", ["x", "1", None, True, 1.5, [1], {"p": 1}])
def test_parse_position_rejects_non_numbers(value: object) -> None:
    with pytest.raises(InvalidQueueBody) as info:
        q.parse_position(value)
    assert info.value.code == "invalid_body"


# --- errors ------------------------------------------------------------------------------------------

ITEM_EVENTS: list[q.QueueEvent] = [
    Dispatch("zz"),
    Bind("zz", R1),
    Release("zz"),
    Withdraw("zz"),
    Edit("zz", task="t"),
    Cancel("zz"),
    Answer("zz", "a"),
    Requeue("zz"),
]


@pytest.mark.parametrize("event", ITEM_EVENTS, ids=lambda e: e.kind)
def test_unknown_id_is_not_found(event: q.QueueEvent) -> None:
    with pytest.raises(QueueNotFound) as info:
        transition([it("a")], event, NOW)
    assert info.value.code == "not_found" and "zz" in str(info.value)


def _sample(status: str) -> QueueItem:
    extra: dict[str, Any] = {"settled_at": END} if status in ("done", "error", "cancelled") else {}
    return it("zz", status, run_id=R1 if status != "waiting" else None, **extra)


FORBIDDEN = [
    (status, event)
    for status in sorted(q.STATUSES)
    for event in ITEM_EVENTS
    if (status, event.kind) not in q.TRANSITIONS
]


@pytest.mark.parametrize(("status", "event"), FORBIDDEN, ids=[f"{s}-{e.kind}" for s, e in FORBIDDEN])
def test_pairs_missing_from_the_table_are_status_forbidden(status: str, event: q.QueueEvent) -> None:
    with pytest.raises(QueueTransitionError) as info:
        transition([_sample(status)], event, NOW)
    assert info.value.code == "status_forbidden"
    assert (info.value.status, info.value.event) == (status, event.kind)
    assert status in str(info.value) and repr(event.kind) in str(info.value)


def test_patch_of_a_done_item_is_forbidden() -> None:
    with pytest.raises(QueueTransitionError, match="done"):
        transition([it("a", "done", settled_at=END)], Edit("a", position=0), NOW)


@pytest.mark.parametrize("event", [Bind("a", R2), Release("a"), Withdraw("a")], ids=lambda e: e.kind)
def test_a_bound_item_is_no_marker(event: q.QueueEvent) -> None:
    with pytest.raises(QueueTransitionError, match="already bound"):
        transition([it("a", "active", run_id=R1)], event, NOW)


def test_one_active_item_at_a_time() -> None:
    with pytest.raises(QueueTransitionError, match="already active"):
        transition([it("a", "active", run_id=R1), it("b")], Dispatch("b"), NOW)


def test_settle_with_a_non_terminal_status_is_refused() -> None:
    with pytest.raises(QueueTransitionError):
        transition([it("a", "active", run_id=R1)], Settle(R1, "running"), NOW)


@pytest.mark.parametrize(
    "event",
    [
        Enqueue(task=""),
        Enqueue(task="   \n"),
        Enqueue(task="t", effort="max"),
        Enqueue(task="t", log_level="verbose"),
        Enqueue(task="t", continues_from="run-1"),
        Enqueue(task="t", item_id="a"),
        Edit("a", task=""),
        Edit("a", effort="fast"),
    ],
    ids=["empty", "blank", "effort", "logLevel", "continuesFrom", "duplicate-id", "edit-empty", "edit-effort"],
)
def test_invalid_bodies(event: q.QueueEvent) -> None:
    with pytest.raises(InvalidQueueBody) as info:
        transition([it("a")], event, NOW)
    assert info.value.code == "invalid_body"


def test_an_empty_answer_is_an_invalid_body() -> None:
    with pytest.raises(InvalidQueueBody):
        transition([PARKED], Answer("p", "  "), NOW)


def test_task_is_kept_verbatim() -> None:
    after, _ = run([], Enqueue(task="  fix\n  the bug  ", item_id="n"))
    assert after[0].task == "  fix\n  the bug  "


# --- boot repair ---------------------------------------------------------------------------------------


def repair(items: list[QueueItem], *metas: RunMeta) -> list[QueueItem]:
    after, effects = run(items, Repair({m.run_id: m for m in metas}))
    assert effects.changed is (after != items)
    return after


def test_boot_terminal_meta_settles_as_live_with_the_meta_end_time() -> None:
    after = repair([it("a", "active", run_id=R1)], meta(R1, "success", summary="done it"))
    assert after == [it("a", "done", run_id=R1, result_summary="done it", settled_at=END)]


def test_boot_error_meta_settles_with_the_error_text() -> None:
    failed = meta(R1, "error", summary="gave up", card_error=CardError(kind="timeout", message="too slow"))
    assert repair([it("a", "active", run_id=R1)], failed)[0].error == "too slow"


def test_boot_parked_meta_settles_needs_input() -> None:
    parked = meta(R1, "needs_clarification", summary="waiting for an answer to: which?")
    after = repair([it("a", "active", run_id=R1)], parked)
    assert after == [it("a", "needs_input", run_id=R1, continues_from=R1, question="which?")]


def test_boot_interrupted_meta_goes_back_to_waiting_in_place() -> None:
    before = [it("x", "done", settled_at=END), it("a", "active", run_id=R1, answer="y"), it("b")]
    after = repair(before, meta(R1, "interrupted"))
    assert after == [before[0], it("a", continues_from=R1, answer="y"), before[2]]


def test_boot_running_meta_is_untouched() -> None:
    before = [it("a", "active", run_id=R1)]
    assert repair(before, meta(R1, "running")) == before


def test_boot_unreadable_meta_goes_back_to_waiting_keeping_lineage() -> None:
    before = [it("a", "active", run_id=R1, continues_from=R3)]
    assert repair(before) == [it("a", continues_from=R3)]


def test_boot_orphan_marker_binds_to_the_unique_running_run_with_its_task() -> None:
    before = [it("a", "active", task="same")]
    assert repair(before, meta(R1, "running", task="same"), meta(R2, "success")) == [
        it("a", "active", task="same", run_id=R1)
    ]


@pytest.mark.parametrize(
    "metas",
    [
        [meta(R1, "running", task="other")],
        [meta(R1, "running", task="same"), meta(R2, "running", task="same")],
        [],
    ],
    ids=["different-task", "two-running", "none-running"],
)
def test_boot_orphan_marker_otherwise_waits(metas: list[RunMeta]) -> None:
    assert repair([it("a", "active", task="same")], *metas) == [it("a", task="same")]


def test_boot_orphan_marker_never_takes_a_run_bound_to_another_item() -> None:
    before = [it("b", "active", task="same", run_id=R1), it("a", "active", task="same")]
    assert repair(before, meta(R1, "running", task="same")) == [before[0], it("a", task="same")]


def test_repair_is_a_no_op_when_steady() -> None:
    before = [it("a", "active", run_id=R1), it("b"), it("c", "done", settled_at=END)]
    after, effects = run(before, Repair({R1: meta(R1, "running")}))
    assert after == before and not effects.changed and not effects.tick


# --- scheduler helpers ---------------------------------------------------------------------------------


def test_next_dispatch_is_the_first_waiting_item() -> None:
    items = [it("d", "done", settled_at=END), it("p", "needs_input", run_id=R1), it("w1"), it("w2")]
    assert q.next_dispatch(items) == it("w1")
    assert q.next_dispatch(items[:2]) is None


def test_dispatch_writes_the_marker() -> None:
    after, _ = transition([it("a")], Dispatch("a"), NOW)
    assert q.active_item(after) == it("a", "active")


def test_question_from_summary_reads_the_parked_card_form() -> None:
    assert q.question_from_summary("waiting for an answer to: why?") == "why?"
    assert q.question_from_summary("why?") == "why?"
    assert q.question_from_summary("") is None


def test_settle_from_meta_carries_the_typed_question_else_recovers_it_from_the_summary() -> None:
    """A meta on disk (boot repair, a meta written by an older version) holds the question only in its
    summary; the run's outcome hands it over typed and that wins."""
    parked = meta(R1, "needs_clarification", summary="waiting for an answer to: which db?")
    assert Settle.from_meta(parked).question == "which db?"
    assert Settle.from_meta(parked, question="typed?").question == "typed?"
    assert Settle.from_meta(meta(R1, "needs_clarification", summary="Which database?")).question == "Which database?"
    assert Settle.from_meta(meta(R1, "success", summary="waiting for an answer to: x")).question is None
    after, _ = run([it("a", "active", run_id=R1)], Settle.from_meta(parked))
    assert after[0].status == "needs_input" and after[0].question == "which db?"


def test_timestamps() -> None:
    assert q.format_timestamp(NOW) == STAMP
    assert q.format_timestamp(datetime(2024, 5, 1, 14, 0, tzinfo=UTC).astimezone()) == "2024-05-01T14:00:00.000Z"
    assert q.parse_timestamp("2024-05-01T12:00:00+00:00") == q.parse_timestamp(STAMP) == NOW
    assert q.parse_timestamp("yesterday") is None


@pytest.mark.parametrize(
    "fields",
    [
        {"id": ""},
        {"task": ""},
        {"run_id": "run-1"},
        {"continues_from": "20240501"},
        {"queued_at": "soon"},
        {"settled_at": "later"},
    ],
)
def test_item_construction_checks_the_field_rules(fields: dict[str, Any]) -> None:
    base: dict[str, Any] = {"id": "a", "task": "t", "status": "waiting", "queued_at": QUEUED}
    with pytest.raises(ValueError):
        QueueItem(**(base | fields))


def test_core_modules_do_no_io() -> None:
    """Sans-IO: no trio/httpx/asyncio import, no open(), no clock read in queue.py and briefing.py."""
    root = Path(q.__file__).parent
    for name in ("queue.py", "briefing.py"):
        tree = ast.parse((root / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(m.split(".")[0] in {"trio", "httpx", "asyncio", "os", "time"} for m in modules), name
            if isinstance(node, ast.Attribute):
                assert node.attr not in {"now", "utcnow", "read_bytes", "read_text", "write_bytes"}, name
            if isinstance(node, ast.Name):
                assert node.id != "open", name


# --- properties ----------------------------------------------------------------------------------------

OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "enqueue",
                "push",
                "dispatch",
                "bind",
                "release",
                "settle",
                "edit",
                "cancel",
                "answer",
                "requeue",
                "repair",
            ]
        ),
        st.integers(min_value=0, max_value=20),
        st.sampled_from(["success", "error", "needs_clarification", "interrupted", "cancelled", "running", None]),
    ),
    max_size=40,
)


def _event(op: str, n: int, outcome: str | None, items: list[QueueItem], step: int) -> q.QueueEvent:
    """Turn a drawn operation into an event; targets are picked by index, so many are illegal on purpose."""
    target = items[n % len(items)].id if items else "missing"
    run_id = (datetime(2024, 5, 1, tzinfo=UTC) + timedelta(seconds=step)).strftime("run-%Y%m%d-%H%M%S")
    bound = [i.run_id for i in items if i.run_id]
    match op:
        case "enqueue" | "push":
            return Enqueue(task=f"t{n}", at_head=op == "push")
        case "dispatch":
            return Dispatch(target)
        case "bind":
            return Bind(target, run_id)
        case "release":
            return Release(target)
        case "settle":
            return Settle(bound[n % len(bound)] if bound else run_id, outcome or "success", summary=f"s{n}")
        case "edit":
            return Edit(target, position=n - 5)
        case "cancel":
            return Cancel(target)
        case "answer":
            return Answer(target, f"a{n}")
        case "requeue":
            return Requeue(target)
        case _:
            metas = {r: meta(r, outcome or "running", task=f"t{n}") for r in bound[: n % 3]}
            return Repair(metas)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_legal_operations_never_drop_or_duplicate(ops: list[tuple[str, int, str | None]]) -> None:
    items: list[QueueItem] = []
    for step, (op, n, outcome) in enumerate(ops):
        event = _event(op, n, outcome, items, step)
        snapshot = list(items)
        try:
            after, _ = transition(items, event, NOW + timedelta(seconds=step))
        except QueueError:
            assert items == snapshot
            continue
        assert items == snapshot, "the input list changed"
        ids = [i.id for i in after]
        assert len(ids) == len(set(ids)), "duplicated id"
        assert {i.id for i in items} <= set(ids), "an item was dropped"
        assert len(after) == len(items) + (1 if isinstance(event, Enqueue) else 0)
        assert sum(i.status == "active" for i in after) <= 1
        for i in after:
            assert (i.settled_at is not None) == (i.status in ("done", "error", "cancelled"))
        items = after


@settings(max_examples=100, deadline=None)
@given(OPS)
def test_withdraw_only_removes_its_own_never_run_item(ops: list[tuple[str, int, str | None]]) -> None:
    items: list[QueueItem] = []
    for step, (op, n, outcome) in enumerate(ops):
        try:
            items, _ = transition(items, _event(op, n, outcome, items, step), NOW)
        except QueueError:
            pass
    for item in items:
        try:
            after, effects = transition(items, Withdraw(item.id), NOW)
        except QueueTransitionError:
            assert item.status not in ("waiting", "active") or item.run_id is not None
            continue
        assert effects.item == item and after == [i for i in items if i.id != item.id]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["waiting", "done", "cancelled", "error"]), min_size=1, max_size=10),
    st.integers(min_value=0, max_value=9),
    st.integers(min_value=-3, max_value=15),
)
def test_move_matches_a_list_insert_among_waiting(statuses: list[str], pick: int, position: int) -> None:
    items = [_sample(s) if s != "waiting" else it(f"w{n}") for n, s in enumerate(statuses)]
    items = [msgspec.structs.replace(item, id=f"{item.status[0]}{n}") for n, item in enumerate(items)]
    waiting = [i.id for i in items if i.status == "waiting"]
    if not waiting:
        return
    target = waiting[pick % len(waiting)]
    after, _ = run(items, Edit(target, position=position))
    expected = [w for w in waiting if w != target]
    expected.insert(min(max(position, 0), len(expected)), target)
    assert [i.id for i in after if i.status == "waiting"] == expected
    assert [i.id for i in after if i.status != "waiting"] == [i.id for i in items if i.status != "waiting"]
