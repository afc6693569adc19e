"""The service: one run at a time, dispatched from the durable queue; the state every endpoint reads.

``Service`` owns the queue store, the active run (at most one), pending human questions, the live
stream hub and the shutdown gate. Runs execute as tasks in the service nursery inside their own cancel
scope; settlement maps the run's meta onto its queue item and ticks the scheduler again. ``stop_run``
cancels the active run's root scope (the run ends ``cancelled``, its item too, and the next one starts).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import trio

from orchestrator.config import Settings
from orchestrator.config.probe import refresh_model
from orchestrator.config.trust import TrustReport
from orchestrator.conversation import ResultCard
from orchestrator.engine.controls import RunControls
from orchestrator.engine.reconcile import ResumeNotice, reconcile_runs
from orchestrator.engine.runfolder import RunIdCollision, RunMeta, read_meta, runs_root
from orchestrator.engine.runner import (
    Continuation,
    InvalidContinuation,
    PreparedRun,
    RunOutcome,
    RunRequest,
    RunServices,
    continuation_briefing,
    execute_prepared,
    prepare_run,
    resume_run,
    run_redactor,
)
from orchestrator.engine.state import RunState
from orchestrator.llm import LlmTimeouts
from orchestrator.observability.live import TraceSink, run_listener
from orchestrator.projectsettings import read_project_settings, resolve_effort, resolve_log_level
from orchestrator.service import queue as q
from orchestrator.service.active import ActiveRun
from orchestrator.service.briefing import cancelled_since, completed_since, interim_briefing
from orchestrator.service.hub import StreamHub
from orchestrator.service.human import PendingQuestions
from orchestrator.service.queue_seal import QueueSeal
from orchestrator.service.queue_store import QueueStore
from orchestrator.service.summary import first_line, interrupt_history, summarize_run, write_summary
from orchestrator.vocabulary import StopOrigin

__all__ = ["MetaReader", "RunInProgress", "RunNotActive", "Service"]

log = logging.getLogger("orchestrator.service")

#: One-second run ids: a collision is retried after this long, at most ``COLLISION_RETRIES`` times.
COLLISION_SLEEP = 1.1
COLLISION_RETRIES = 3
#: How long ``stop_run`` waits for the stopped run to settle before answering anyway.
STOP_WAIT_SECONDS = 10.0


#: Reads one run folder's ``meta.json`` (``None``: missing or unreadable); ``read_meta`` by default.
MetaReader = Callable[[Path], RunMeta | None]


class RunInProgress(Exception):
    """A run is active (``POST /api/runs`` answers 409 ``run_in_progress``)."""


class RunNotActive(Exception):
    """``stop_run`` named a run that is not the active one; ``status`` is its meta's (``unknown``: none)."""

    def __init__(self, run_id: str, status: str) -> None:
        super().__init__(f"run {run_id} is {status}, not the active run: only the active run can be stopped")
        self.run_id = run_id
        self.status = status


class _TickMetas:
    """The run folders' metas as one scheduler tick sees them: each ``meta.json`` read at most once per
    tick, and only when the tick needs metas at all (a repair or a dispatch)."""

    def __init__(self, root: Path, read: MetaReader) -> None:
        self._root = root
        self._read = read
        self._by_name: dict[str, RunMeta] | None = None

    def by_folder(self) -> dict[str, RunMeta]:
        """Every readable meta keyed by its folder's name, in folder-name order."""
        if self._by_name is None:
            dirs = sorted(p for p in self._root.iterdir() if p.is_dir()) if self._root.is_dir() else []
            self._by_name = {d.name: meta for d in dirs if (meta := self._read(d)) is not None}
        return self._by_name

    def read(self, run_dir: Path) -> RunMeta | None:
        """``read_meta`` answered from the snapshot (a folder outside the runs root is read directly)."""
        return self.by_folder().get(run_dir.name) if run_dir.parent == self._root else self._read(run_dir)

    def for_repair(self, items: list[q.QueueItem]) -> dict[str, RunMeta]:
        """The metas ``Repair`` needs: every ``active`` item's run, and every ``running`` run."""
        metas = self.by_folder()
        found = {i.run_id: metas[i.run_id] for i in items if i.run_id and i.status == "active" and i.run_id in metas}
        for name, meta in metas.items():
            if name not in found and meta.status == "running":
                found[meta.run_id] = meta
        return found


class Service:
    """Everything the HTTP layer needs; no module globals. ``attach(nursery)`` before serving."""

    def __init__(
        self,
        settings: Settings,
        workspace: Path,
        *,
        timeouts: LlmTimeouts | None = None,
        title: str = "Adaptive Orchestrator",
        build: dict[str, str | None] | None = None,
        meta_reader: MetaReader = read_meta,
        seal: QueueSeal | None = None,
        trust: TrustReport | None = None,
        trace_sink: TraceSink | None = None,
    ) -> None:
        """``meta_reader`` reads a run folder's ``meta.json`` for the scheduler (tests pass a counting one).
        ``seal``: binds queue items to this service (``serve`` always passes one; without it every item in
        the file counts as accepted). ``trust``: the workspace-trust verdict the page and API show.
        ``trace_sink``: where each run's spans go (docs/observability.md), when the export is on."""
        self.settings = settings
        #: redacts what arrives through the API (tasks, answers, messages) before it is stored or used
        self.redactor = run_redactor(settings, workspace)
        self.trust = trust
        self.workspace = workspace
        self.timeouts = timeouts or LlmTimeouts()
        self.title = title
        self.build = build
        self.queue = QueueStore(workspace, seal=seal)
        self.questions = PendingQuestions()
        self.hub = StreamHub()
        self.active: ActiveRun | None = None
        self._read_meta = meta_reader
        self.gate_open = True
        #: Set when the wind-down is over and serving stops: live-stream sockets close with 1001.
        self.stopping = trio.Event()
        self._tick_lock = trio.Lock()
        self._probe_lock = trio.Lock()
        self._nursery: trio.Nursery | None = None
        self.trace_sink = trace_sink
        #: The run this start resumed from its checkpoint (``serve`` announces it; ``/api/config`` shows it).
        self.resumed: ResumeNotice | None = None

    def attach(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery

    # --- startup ---------------------------------------------------------------------------------

    def model_needs_probe(self) -> bool:
        """The last model probe failed (server down or loading) or found a template that drops tools."""
        status = self.settings.model_status
        return status is not None and (not status.reachable or status.tools_problem is not None)

    async def refresh_model(self) -> None:
        """Probe the model API again if the last probe left something to fix; never raises."""
        async with self._probe_lock:
            if self.model_needs_probe():
                self.settings = await refresh_model(self.settings)
                log.info("model probe: %s", self.settings.model_status)

    async def _watch_model(self) -> None:
        """Re-probe with backoff (1 s doubling to 30 s) until the model server is up and usable."""
        delay = 1.0
        while self.model_needs_probe():
            await trio.sleep(delay)
            delay = min(30.0, delay * 2)
            await self.refresh_model()

    async def start(self) -> None:
        """Reconcile the runs directory (resume at most one run), repair the queue, tick once."""
        if self.model_needs_probe() and self._nursery is not None:
            self._nursery.start_soon(self._watch_model)
        await self.queue.apply(lambda items: (items, None))  # an item it did not accept is marked unconfirmed
        found = reconcile_runs(self.workspace, guild_path=str(self.settings.guild_dir))
        for run_id, reason in found.interrupted.items():
            log.info("marked %s interrupted: %s", run_id, reason)
        if found.resumable is not None:
            resumable = found.resumable
            self.resumed = resumable.notice()
            active = ActiveRun(run_id=resumable.run_dir.name, run_dir=resumable.run_dir, item_id=None, task="")
            self._activate(active)
            assert self._nursery is not None
            self._nursery.start_soon(self._resume_task, active, resumable.state, resumable.seq)
        await self.tick()

    # --- the scheduler -------------------------------------------------------------------------------

    async def tick(self) -> str | None:
        """One scheduler cycle. Returns the id of a run it started, if any."""
        async with self._tick_lock:
            return await self._tick_locked()

    async def _tick_locked(self, checked: Continuation | None = None) -> str | None:
        """``tick`` with ``_tick_lock`` held by the caller. ``checked``: the dispatched item's
        ``continuesFrom`` as its submitter already checked it (not checked again)."""
        metas = _TickMetas(runs_root(self.workspace), self._read_meta)
        items = self.queue.load()
        if any(i.status == "active" for i in items):
            await self.queue.apply(lambda items: q.transition(items, q.Repair(metas.for_repair(items)), _now()))
        if not self.gate_open or self.active is not None:
            return None
        items = self.queue.load()
        item = q.next_dispatch(items)
        if item is None:
            return None
        await self.queue.apply(lambda items: q.transition(items, q.Dispatch(item.id), _now()))
        for attempt in range(COLLISION_RETRIES + 1):
            try:
                run_id = self._start(item, metas, checked)
            except RunIdCollision:
                if attempt == COLLISION_RETRIES:
                    await self.queue.apply(lambda items: q.transition(items, q.Release(item.id), _now()))
                    raise
                await trio.sleep(COLLISION_SLEEP)
                current = next((i for i in self.queue.load() if i.id == item.id), None)
                if current is None or current.status != "active" or current.run_id:
                    return None
                continue
            bind = q.Bind(item.id, run_id)
            await self.queue.apply(lambda items, bind=bind: q.transition(items, bind, _now()))
            return run_id
        return None

    def _continuation(self, item: q.QueueItem, metas: _TickMetas, checked: Continuation | None) -> Continuation | None:
        """The item's ``continuesFrom`` checked once (``checked`` when the submitter did); a prior run that
        is gone or not finished drops the lineage (the item still runs)."""
        if not item.continues_from:
            return None
        if checked is not None and checked.prior_id == item.continues_from:
            return checked
        try:
            return continuation_briefing(self.workspace, item.continues_from, read=metas.read)
        except InvalidContinuation:
            return None

    def _request(
        self, item: q.QueueItem, metas: _TickMetas, continuation: Continuation | None
    ) -> tuple[RunRequest, str]:
        """The submission for an item: resolved effort/level, continuation lineage, interim briefing."""
        project = read_project_settings(self.workspace)
        logging_default = self.settings.deployment.logging.level if self.settings.deployment.logging else None
        request = RunRequest(
            task=item.task,
            effort=resolve_effort(item.effort, project),
            log_level=resolve_log_level(item.log_level, project, logging_default),  # type: ignore[arg-type]
            continues_from=continuation.prior_id if continuation is not None else None,
        )
        cancelled = cancelled_since(self.queue.load(), item.queued_at)
        briefing = interim_briefing(
            item.queued_at,
            completed_since(metas.by_folder().values(), item.queued_at),
            cancelled,
            question=item.question,
            answer=item.answer,
        )
        return request, briefing

    def _start(self, item: q.QueueItem, metas: _TickMetas, checked: Continuation | None) -> str:
        """Prepare the run (its id exists at once) and start it in the service nursery."""
        continuation = self._continuation(item, metas, checked)
        request, briefing = self._request(item, metas, continuation)
        prepared = prepare_run(self.settings, self.workspace, request, briefing=briefing, continuation=continuation)
        active = ActiveRun(run_id=prepared.run_id, run_dir=prepared.run_dir, item_id=item.id, task=item.task)
        self._activate(active)
        write_summary(prepared.run_dir, first_line(item.task))
        assert self._nursery is not None
        self._nursery.start_soon(self._run_task, active, prepared)
        return prepared.run_id

    def _activate(self, active: ActiveRun) -> None:
        self.active = active
        self.hub.active_run = active.run_id

    def _services(self, active: ActiveRun, *, queue_tracked: bool) -> RunServices:
        trace = None if self.trace_sink is None else run_listener(self.trace_sink, active.run_dir, self.settings)
        return RunServices(
            timeouts=self.timeouts,
            on_delta=self.hub.publish if trace is None else trace.tee(self.hub.publish),
            log_line_listeners=[] if trace is None else [trace],
            interrupts=active.interrupts,
            human=self.questions,
            queue_tracked=queue_tracked,
            stop=active.stop,
        )

    async def _run_task(self, active: ActiveRun, prepared: PreparedRun) -> None:
        services = self._services(active, queue_tracked=True)

        async def execute(task_status: trio.TaskStatus[RunControls]) -> RunOutcome:
            await self.refresh_model()  # the last probe failed: look again before the run needs it
            return await execute_prepared(self.settings, self.workspace, prepared, services, task_status=task_status)

        await self._settle(active, await self._execute_in_scope(active, execute, "run %s crashed"))

    async def _resume_task(self, active: ActiveRun, state: RunState, seq: int) -> None:
        services = self._services(active, queue_tracked=False)

        async def execute(task_status: trio.TaskStatus[RunControls]) -> RunOutcome:
            return await resume_run(
                self.settings, self.workspace, active.run_dir, state, seq, services, task_status=task_status
            )

        await self._settle(active, await self._execute_in_scope(active, execute, "resumed run %s crashed"))

    async def _execute_in_scope(
        self,
        active: ActiveRun,
        execute: Callable[[trio.TaskStatus[RunControls]], Awaitable[RunOutcome]],
        crashed: str,
    ) -> RunOutcome | None:
        """Run ``execute`` inside ``active.scope``, keeping the ``RunControls`` it hands over on ``active``.
        Returns its outcome; ``None`` when it crashed (logged) or was abandoned (the scope cancelled)."""
        outcome: RunOutcome | None = None

        async def run(task_status: trio.TaskStatus[RunControls] = trio.TASK_STATUS_IGNORED) -> None:
            nonlocal outcome
            outcome = await execute(task_status)

        with active.scope:
            try:
                async with trio.open_nursery() as run_nursery:  # bounds the run's one task
                    active.controls = await run_nursery.start(run)
            except Exception:
                log.exception(crashed, active.run_id)
        return outcome

    async def _settle(self, active: ActiveRun, outcome: RunOutcome | None) -> None:
        """The run ended (or was abandoned at shutdown): map it onto its queue item, free the slot."""
        if active.scope.cancelled_caught:
            self._deactivate(active)
            return  # abandoned: meta stays running, the checkpoint resumes it next start
        if outcome is not None:
            settle = q.Settle.from_meta(outcome.meta, question=outcome.question)
        else:  # crashed: whatever the meta on disk says (still ``running`` unless the end was written)
            meta = read_meta(active.run_dir)
            settle = q.Settle.from_meta(meta) if meta is not None else None
        if settle is not None and settle.status != "running":
            await self.queue.apply(lambda items: q.transition(items, settle, _now()))
        self._deactivate(active)
        if self._nursery is not None and outcome is not None and outcome.meta.status != "cancelled":
            self._nursery.start_soon(self._summarize, active, outcome.card)  # a stopped run asks no model
        await self.tick()

    def _deactivate(self, active: ActiveRun) -> None:
        if self.active is active:
            self.active = None
            self.hub.active_run = None
        self.questions.clear()
        active.done.set()

    async def _summarize(self, active: ActiveRun, card: ResultCard) -> None:
        meta = read_meta(active.run_dir)
        task = meta.task if meta is not None else active.task
        try:
            await summarize_run(self.settings, active.run_dir, task, card, interrupt_history(active.run_dir))
        except Exception:  # best effort
            log.exception("summary for %s failed", active.run_id)

    # --- requests from the API -----------------------------------------------------------------------

    async def submit_run(
        self, task: str, *, effort: str | None, log_level: str | None, continuation: Continuation | None
    ) -> str:
        """``POST /api/runs``: refuse when busy (before enqueuing), else enqueue at the head and start it
        in this request. ``continuation``: the body's ``continuesFrom``, checked by the caller (once).
        Raises ``RunInProgress`` or ``RunIdCollision`` (its item withdrawn)."""
        async with self._tick_lock:  # check, enqueue and dispatch as one step: no other tick in between
            if self.active is not None or not self.gate_open:
                raise RunInProgress
            continues_from = continuation.prior_id if continuation is not None else None
            event = q.Enqueue(
                task=task, effort=effort, log_level=log_level, continues_from=continues_from, at_head=True
            )
            await self.queue.apply(lambda items: q.transition(items, event, _now()))
            try:
                run_id = await self._tick_locked(continuation)
            except RunIdCollision:
                await self.queue.apply(lambda items: q.transition(items, q.Withdraw(event.item_id), _now()))
                raise
        if run_id is None:
            raise RunInProgress
        return run_id

    async def stop_run(self, run_id: str, by: StopOrigin) -> str:
        """Stop the active run ``run_id`` now: its root scope is cancelled, so every model call, tool
        subprocess and MCP server of the run ends before it settles ``cancelled`` (its queue item too;
        the next item starts). Waits, bounded, until it has settled; returns the run's meta status then
        (``running`` only if it is still ending). Raises ``RunNotActive`` for any other run."""
        active = self.active
        if active is None or active.run_id != run_id:
            meta = self._read_meta(runs_root(self.workspace) / run_id)
            raise RunNotActive(run_id, meta.status if meta is not None else "unknown")
        active.controls.stop(by)
        with trio.move_on_after(STOP_WAIT_SECONDS):
            await active.done.wait()
        meta = self._read_meta(active.run_dir)
        return meta.status if meta is not None else "unknown"

    async def submit_initial(self, task: str) -> str | None:
        """Queue a task at startup (the demo's); it starts now when the slot is free. Returns its run's id
        once it started (``None`` while it waits in the queue)."""
        enqueue = q.Enqueue(task=task)
        await self.queue.apply(lambda items: q.transition(items, enqueue, _now()))
        try:
            await self.tick()
        except RunIdCollision:
            pass
        return next((i.run_id for i in self.queue.load() if i.id == enqueue.item_id), None)

    async def wind_down(self, seconds: float, second_signal: trio.Event) -> bool:
        """Close the gate, ask the active run to wind down, wait up to ``seconds`` (or a second signal),
        then abandon it. Returns whether a run was still active at the end. Sets ``stopping`` last."""
        try:
            return await self._wind_down(seconds, second_signal)
        finally:
            self.stopping.set()

    async def _wind_down(self, seconds: float, second_signal: trio.Event) -> bool:
        self.gate_open = False
        active = self.active
        if active is None:
            return False
        from orchestrator.lifecycle import WIND_DOWN_NOTICE

        active.controls.notify(WIND_DOWN_NOTICE)
        with trio.move_on_after(seconds):
            async with trio.open_nursery() as waiters:

                async def on_second() -> None:
                    await second_signal.wait()
                    waiters.cancel_scope.cancel()

                waiters.start_soon(on_second)
                await active.done.wait()
                waiters.cancel_scope.cancel()
        if not active.done.is_set():
            active.scope.cancel()
            with trio.move_on_after(5):
                await active.done.wait()
            return True
        return False


def _now() -> datetime:
    return datetime.now(UTC)
