"""The scheduler and the submission path of ``Service``: what one tick reads, what one submission checks.

The metas are read through a counting ``meta_reader`` handed to the ``Service`` (no patching); the run a
tick dispatches points at a closed model port and is cancelled with the nursery once the tick returns.
"""

from __future__ import annotations

import socket
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio
from tests.engine.harness import FAST
from tests.helpers import make_settings

from orchestrator.conversation import ResultCard
from orchestrator.engine.runfolder import RunMeta, read_meta, runs_root, write_meta
from orchestrator.engine.runner import Continuation
from orchestrator.observability.spans import SpanData, trace_id_for
from orchestrator.runlog import read_events
from orchestrator.service.core import Service
from orchestrator.service.queue import QueueItem
from orchestrator.service.queue_store import load_queue, save_queue

ROLES = {"lead": ["agent", "finish"], "coder": ["run_shell", "finish"]}
QUEUED = "2024-05-01T10:00:00.000Z"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _service(tmp_path: Path, reads: Counter[str] | None = None) -> Service:
    """A service whose runs fail fast (a closed model port, one attempt); ``reads`` counts meta reads."""
    settings = make_settings(tmp_path, f"http://127.0.0.1:{_closed_port()}/v1", roles=ROLES)
    workspace = tmp_path / "ws"
    workspace.mkdir()

    def counting(run_dir: Path) -> RunMeta | None:
        if reads is not None:
            reads[run_dir.name] += 1
        return read_meta(run_dir)

    return Service(settings, workspace, timeouts=FAST, meta_reader=counting)


def _finished_run(workspace: Path, run_id: str, status: str = "success", *, ended: str | None = None) -> None:
    run_dir = runs_root(workspace) / run_id
    run_dir.mkdir(parents=True)
    meta = RunMeta(
        run_id=run_id,
        task=f"task of {run_id}",
        status=status,
        effort="standard",
        log_level="full",
        guild_path="/guild",
        start_time="2024-05-01T09:00:00.000Z",
        end_time=ended,
        result=ResultCard(status="success", summary=f"{run_id} done") if status == "success" else None,
    )
    write_meta(run_dir, meta)


async def test_one_tick_reads_each_meta_once_through_repair_and_dispatch(tmp_path: Path) -> None:
    """The tick repairs an item whose run finished while nobody watched, then dispatches the next one
    (whose interim briefing lists finished runs and whose ``continuesFrom`` is checked): every
    ``meta.json`` is read once."""
    reads: Counter[str] = Counter()
    service = _service(tmp_path, reads)
    bound, older, prior = "run-20240501-110000", "run-20240501-100500", "run-20240501-100700"
    _finished_run(service.workspace, bound, ended="2024-05-01T11:05:00.000Z")
    _finished_run(service.workspace, older, ended="2024-05-01T10:06:00.000Z")
    _finished_run(service.workspace, prior, ended="2024-05-01T10:08:00.000Z")
    save_queue(
        service.workspace,
        [
            QueueItem(id="a", task="bound task", status="active", run_id=bound, queued_at=QUEUED),
            QueueItem(id="b", task="next task", status="waiting", continues_from=prior, queued_at=QUEUED),
        ],
    )
    async with trio.open_nursery() as nursery:
        service.attach(nursery)
        started = await service.tick()
        seen = dict(reads)
        nursery.cancel_scope.cancel()
    assert started is not None
    assert seen == {bound: 1, older: 1, prior: 1}
    items = {item.id: item for item in load_queue(service.workspace)}
    assert items["a"].status == "done"  # repaired from its meta
    assert (items["b"].status, items["b"].run_id) == ("active", started)
    assert read_meta(runs_root(service.workspace) / started).continues_from == prior  # type: ignore[union-attr]


async def test_a_tick_with_nothing_to_repair_or_dispatch_reads_no_meta(tmp_path: Path) -> None:
    reads: Counter[str] = Counter()
    service = _service(tmp_path, reads)
    _finished_run(service.workspace, "run-20240501-110000")
    save_queue(service.workspace, [QueueItem(id="a", task="t", status="cancelled", queued_at=QUEUED)])
    async with trio.open_nursery() as nursery:
        service.attach(nursery)
        assert await service.tick() is None
        nursery.cancel_scope.cancel()
    assert reads == Counter()


async def test_a_submission_s_checked_continuation_is_not_checked_again(tmp_path: Path) -> None:
    """``POST /api/runs`` checks ``continuesFrom`` once and hands the result down: neither the tick nor
    ``prepare_run`` reads the prior run again (here it is not even on disk), yet the run carries it."""
    reads: Counter[str] = Counter()
    service = _service(tmp_path, reads)
    prior = "run-20240501-100700"
    checked = Continuation(prior_id=prior, block="[Platform briefing — checked by the caller]")
    async with trio.open_nursery() as nursery:
        service.attach(nursery)
        run_id = await service.submit_run("follow up", effort=None, log_level=None, continuation=checked)
        nursery.cancel_scope.cancel()
    meta = read_meta(runs_root(service.workspace) / run_id)
    assert meta is not None and meta.continues_from == prior and meta.task == "follow up"
    assert prior not in reads


async def _first_message(service: Service, item: QueueItem) -> tuple[str, RunMeta]:
    """Dispatch ``item`` (the only waiting one); the entry role's task as the run's log records it, and
    the run's meta, once the run has settled."""
    save_queue(service.workspace, [item])
    async with trio.open_nursery() as nursery:
        service.attach(nursery)
        run_id = await service.tick()
        assert run_id is not None and service.active is not None
        with trio.fail_after(30):
            await service.active.done.wait()
        nursery.cancel_scope.cancel()
    run_dir = runs_root(service.workspace) / run_id
    (start, *_) = [e for e in read_events(run_dir / "log.jsonl") if e["type"] == "role_start"]
    meta = read_meta(run_dir)
    assert meta is not None
    return start["payload"]["task"], meta


async def test_a_dispatched_continuation_carries_the_block_then_the_briefing(tmp_path: Path) -> None:
    """The retry of a failed run: its task, the block quoting the failure, then the interim briefing
    citing the runs completed while it waited; ``meta.task`` stays the bare task."""
    service = _service(tmp_path)
    failed = "run-20240501-110000"
    _finished_run(service.workspace, failed, "error", ended="2024-05-01T11:00:00.000Z")
    retry = QueueItem(id="r", task="retry it", status="waiting", continues_from=failed, queued_at=QUEUED)
    message, meta = await _first_message(service, retry)
    assert message.startswith("retry it\n\n[Platform briefing — this run continues run run-20240501-110000]")
    block_end = message.index("[End of briefing]")
    assert message[block_end:].startswith("[End of briefing]\n\n[Platform briefing — this task waited in the queue]")
    assert f"- {failed}: task of {failed}" in message and message.endswith("[End of briefing]")
    assert (meta.task, meta.continues_from) == ("retry it", failed)


async def test_a_continuation_of_an_unfinished_or_missing_run_is_briefing_only(tmp_path: Path) -> None:
    for lineage, status in (("run-20240501-110000", "running"), ("run-20240501-999999", None)):
        service = _service(tmp_path / (status or "missing"))
        if status is not None:
            _finished_run(service.workspace, lineage, status)
        item = QueueItem(id="q", task="go", status="waiting", continues_from=lineage, queued_at=QUEUED)
        message, meta = await _first_message(service, item)
        assert message.startswith("go\n\n[Platform briefing — this task waited in the queue]"), lineage
        assert "continues run" not in message and meta.continues_from is None


async def test_an_answered_park_carries_the_question_and_the_answer(tmp_path: Path) -> None:
    service = _service(tmp_path)
    parked = "run-20240501-110000"
    _finished_run(service.workspace, parked, "needs_clarification", ended="2024-05-01T11:00:00.000Z")
    answered = QueueItem(
        id="a", task="go", status="waiting", continues_from=parked, question="db?", answer="postgres", queued_at=QUEUED
    )
    message, meta = await _first_message(service, answered)
    assert "continues run run-20240501-110000" in message
    assert "paused to ask: db?" in message and "The operator answered: postgres" in message
    assert meta.continues_from == parked


async def test_a_dispatched_run_is_traced_when_the_service_has_a_trace_sink(tmp_path: Path) -> None:
    """Each run the service starts gets a live trace listener on the service's sink (docs/observability.md)."""

    class Collect:
        capture_content = False

        def __init__(self) -> None:
            self.spans: list[SpanData] = []
            self.unfolded = 0

        def submit(self, spans: list[SpanData]) -> None:
            self.spans.extend(spans)

        def defer(self, fold: Callable[[Any], list[SpanData]], item: object, *, always: bool = False) -> bool:
            self.submit(fold(item))
            return True

    sink = Collect()
    settings = make_settings(tmp_path, f"http://127.0.0.1:{_closed_port()}/v1", roles=ROLES)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    service = Service(settings, workspace, timeouts=FAST, trace_sink=sink)
    save_queue(workspace, [QueueItem(id="a", task="traced", status="waiting", queued_at=QUEUED)])
    async with trio.open_nursery() as nursery:
        service.attach(nursery)
        run_id = await service.tick()
        assert run_id is not None and service.active is not None
        with trio.fail_after(30):
            await service.active.done.wait()
        nursery.cancel_scope.cancel()
    run = next(s for s in sink.spans if s.name == "run")
    assert run.trace_id == trace_id_for(run_id) and run.status == "error"  # the model port is closed
    assert {s.name for s in sink.spans} >= {"run", "invoke_agent lead", "chat sim"}
