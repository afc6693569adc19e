"""Start or resume one run end to end: run folder, ``meta.json``, log, checkpoints, the role tree.

This is the seam both the CLI and the service use. ``execute_run`` starts a new run; ``resume_run``
continues one rebuilt from its checkpoint. Both return when the entry role has a card, then write the
terminal meta and delete the checkpoint. Cancellation (shutdown) propagates and leaves the meta at
``running`` with the last checkpoint on disk: the run is resumable, not finished. A stop
(``RunServices.stop``, the run's root scope) is the one cancellation that ends the run: a final
checkpoint is written and kept, ``run_stopped`` is logged, and the meta says ``cancelled``.

A host that routes operator requests starts them with ``nursery.start``: once the run's role tree
exists they hand it a ``RunControls`` handle (``task_status.started``); the host never holds the run.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import trio

from orchestrator.config import Settings
from orchestrator.config.secrets import Redactor, secret_values
from orchestrator.conversation import CardError, ResultCard
from orchestrator.engine import events as ev
from orchestrator.engine.checkpoint import Checkpointer, delete_checkpoint
from orchestrator.engine.controls import RunControls, RunStop
from orchestrator.engine.human import HumanBackend
from orchestrator.engine.interrupts import InterruptQueue
from orchestrator.engine.run import DeltaSink, Run
from orchestrator.engine.runfolder import (
    RUN_ID_PATTERN,
    TERMINAL_STATUSES,
    RunMeta,
    create_run_dir,
    new_run_id,
    read_meta,
    runs_root,
    write_meta,
)
from orchestrator.engine.state import RunState
from orchestrator.llm import LlmClient, LlmTimeouts
from orchestrator.mcpclient import open_mcp_tools
from orchestrator.runlog.events import RunEvent
from orchestrator.runlog.writer import RunLog, utc_timestamp
from orchestrator.tools import NativeTool, default_native_tools, ensure_git_exclude
from orchestrator.vocabulary import LogLevel, StopOrigin

__all__ = [
    "Continuation",
    "InvalidContinuation",
    "PreparedRun",
    "RunOutcome",
    "RunRequest",
    "RunServices",
    "continuation_briefing",
    "execute_prepared",
    "execute_run",
    "prepare_run",
    "resume_run",
    "run_redactor",
]


@dataclass
class RunRequest:
    task: str
    effort: str = "standard"
    log_level: LogLevel = "full"
    continues_from: str | None = None


@dataclass
class RunOutcome:
    run_id: str
    run_dir: Path
    card: ResultCard
    meta: RunMeta
    #: The question a ``needs_clarification`` run waits on (a parked ``ask_human``, else the entry
    #: card's summary); ``None`` for every other status.
    question: str | None = None


@dataclass
class RunServices:
    """What a run borrows from its host; tests and the service pass their own."""

    timeouts: LlmTimeouts = field(default_factory=LlmTimeouts)
    native_tools: Mapping[str, NativeTool] | None = None
    on_delta: DeltaSink | None = None
    #: Called with every event as it is written (after the level filter); must not raise.
    log_listeners: list[Callable[[RunEvent], None]] = field(default_factory=list)
    #: Called before those with every event and its ``log.jsonl`` line (``bytes``: safe to hand to another
    #: thread); must not raise.
    log_line_listeners: list[Callable[[RunEvent, bytes], None]] = field(default_factory=list)
    #: Operator requests for the run (notices such as the shutdown wind-down).
    interrupts: InterruptQueue = field(default_factory=InterruptQueue)
    #: fsync checkpoints and metas (off only in benchmarks that measure bytes, not durability).
    durable: bool = True
    #: Who answers ``ask_human`` (none: the tool reports ``unavailable``).
    human: HumanBackend | None = None
    #: Queue-dispatched runs park an early ``ask_human`` instead of waiting (see docs/queueing.md).
    queue_tracked: bool = False
    #: The secret values kept out of the log and the conversation; ``None``: gathered at run start from
    #: this process's environment, ``/run/secrets``, the workspace token file and the settings.
    redactor: Redactor | None = None
    #: The run's root scope: ``stop(by)`` ends the run ``cancelled`` (the host keeps it to stop the run).
    stop: RunStop = field(default_factory=RunStop)


class InvalidContinuation(ValueError):
    """``continuesFrom`` does not name a known run with a terminal status."""


@dataclass(frozen=True)
class Continuation:
    """A checked ``continuesFrom``: the prior run's id and the marked block appended below the task."""

    prior_id: str
    block: str


def continuation_briefing(
    workspace: Path, prior_id: str, *, read: Callable[[Path], RunMeta | None] = read_meta
) -> Continuation:
    """Check ``prior_id`` (a run id naming a readable run with a terminal status) and build its block.

    ``read`` reads the prior run's meta (a caller holding the metas already passes its own).
    Raises ``InvalidContinuation`` naming what is wrong with ``prior_id``.
    """
    if not RUN_ID_PATTERN.match(prior_id):
        raise InvalidContinuation(f"continuesFrom {prior_id!r} is not a run id (run-YYYYMMDD-HHMMSS)")
    prior = read(runs_root(workspace) / prior_id)
    if prior is None:
        raise InvalidContinuation(f"continuesFrom {prior_id!r} names no readable run in {runs_root(workspace)}")
    if prior.status not in TERMINAL_STATUSES:
        raise InvalidContinuation(f"continuesFrom {prior_id!r} is still {prior.status}; only a finished run continues")
    summary = prior.result.summary if prior.result is not None else (prior.error.message if prior.error else "")
    block = "\n".join(
        [
            f"[Platform briefing — this run continues run {prior_id}]",
            f"Prior task: {prior.task}",
            f"Prior result ({prior.status}): {summary or '(no summary)'}",
            f'Prior plan: read it with read_plan using runId "{prior_id}".',
            "[End of briefing]",
        ]
    )
    return Continuation(prior_id=prior_id, block=block)


def _tools(services: RunServices) -> dict[str, NativeTool]:
    return dict(services.native_tools) if services.native_tools is not None else default_native_tools()


def run_redactor(settings: Settings, workspace: Path) -> Redactor:
    """The redactor a run (and the service's intake) uses: every secret of this process's environment
    and ``workspace``'s token file (``config.secrets.secret_values``, with the deployment's
    ``toolEnvironment``), every secret the settings know, and the credential shapes."""
    allow = settings.deployment.tool_environment
    return Redactor([*secret_values(os.environ, workspace=workspace, allow=allow), *settings.redactor().values])


def _redactor(settings: Settings, workspace: Path, services: RunServices) -> Redactor:
    if services.redactor is not None:
        return services.redactor
    return run_redactor(settings, workspace)


async def _drive(
    settings: Settings,
    workspace: Path,
    run_dir: Path,
    state: RunState,
    services: RunServices,
    checkpointer: Checkpointer,
    task: str | None,
    task_status: trio.TaskStatus[RunControls],
) -> tuple[ResultCard, bool]:
    """Open the log and the model client, run (``task``) or resume (``None``) to the entry card.

    Hands ``task_status`` the run's ``RunControls`` once the role tree exists (at once when an MCP
    server problem ends the run before it starts, or a stop ends it sooner). Returns the card and
    whether the run was stopped (``services.stop``): the root scope — the model client, the MCP
    servers, the role tree — is cancelled and everything in it ends before this returns."""
    model = settings.deployment.model
    level: LogLevel = "standard" if state.log_level == "standard" else "full"
    redactor = _redactor(settings, workspace, services)
    handed = False

    def hand_over(controls: RunControls) -> None:
        nonlocal handed
        handed = True
        task_status.started(controls)

    try:
        with RunLog(run_dir / "log.jsonl", level, redactor) as log:
            log.listeners.extend(services.log_listeners)
            log.line_listeners.extend(services.log_line_listeners)
            card: ResultCard | None = None
            with services.stop.scope:
                async with (
                    LlmClient(model.api_base, api_key=settings.api_key, timeouts=services.timeouts) as llm,
                    open_mcp_tools(settings) as mcp,
                ):
                    run = Run(  # without MCP tools when a server the Guild references could not be used
                        settings=settings if isinstance(mcp, list) else mcp.settings,
                        workspace=workspace,
                        state=state,
                        log=log,
                        llm=llm,
                        native_tools={**_tools(services), **({} if isinstance(mcp, list) else mcp.native_tools)},
                        on_delta=services.on_delta,
                        checkpointer=checkpointer,
                        interrupts=services.interrupts,
                        human=services.human,
                        redactor=redactor,
                    )
                    if isinstance(mcp, list):
                        hand_over(RunControls(services.interrupts, stop=services.stop))
                        card = _config_error_card(mcp)
                        if task is not None:  # in the log too, so the run's views count it as its problem
                            run.refuse_start(task, card)
                    else:
                        run.queue_tracked = services.queue_tracked
                        hand_over(RunControls(services.interrupts, run.modify_plan, services.stop))
                        card = await (run.execute(task) if task is not None else run.resume())
            if card is not None:
                return card, False
            # Only the stop scope swallows a cancellation: the run was stopped before its entry card.
            if not handed:
                hand_over(RunControls(services.interrupts, stop=services.stop))
            return _stopped(log, state, checkpointer, services.stop.by or "api"), True
    finally:
        checkpointer.close()


def _stopped(log: RunLog, state: RunState, checkpointer: Checkpointer, by: StopOrigin) -> ResultCard:
    """The stopped run's end: a final checkpoint (kept), the ``run_stopped`` event, the card it ends with.

    Everything the run had in flight has ended by now (the root scope unwound it); the state is what a
    crash at this moment would have left, minus any handler interlude's frames (never checkpointed: a
    resume re-runs the interlude), so the checkpoint is as consistent as any other."""
    chain = [frame for frame in state.frames if frame.handler_for is None]
    try:
        checkpointer.write(msgspec.structs.replace(state, frames=chain))
    except OSError:
        pass  # the disk refused the final checkpoint: the stop still ends the run (the last one stays)
    log.emit(ev.run_stopped(state.run_id, by, [frame.instance_id for frame in state.frames]))
    message = f"the operator stopped the run ({_ORIGIN_WORDS[by]})"
    return ResultCard(status="error", summary=message, error=CardError(kind="interrupted", message=message))


#: How ``run_stopped.by`` reads in the stopped run's error message.
_ORIGIN_WORDS: dict[str, str] = {
    "api": "through the HTTP API",
    "mcp": "through the MCP runs face",
    "ui": "from the web UI",
}


def _config_error_card(problems: list[str]) -> ResultCard:
    """The problems once, in the error (the summary only says what kind of failure it is)."""
    summary = "the run could not start its MCP tool servers"
    return ResultCard(status="error", summary=summary, error=CardError(kind="unavailable", message="; ".join(problems)))


def _question(card: ResultCard, state: RunState) -> str | None:
    """The question a ``needs_clarification`` card waits on: the parked ``ask_human`` question, else the
    card's own summary (an entry role that finished ``needs_clarification``)."""
    if card.status != "needs_clarification":
        return None
    return state.park_question or card.summary or None


def _finish(run_dir: Path, meta: RunMeta, card: ResultCard, *, stopped: bool = False) -> None:
    """The terminal meta. A stopped run is ``cancelled`` with no result (its error says who stopped it)
    and keeps its final checkpoint; any other run's checkpoint is deleted."""
    meta.status = "cancelled" if stopped else card.status
    meta.result = None if stopped else card
    meta.error = card.error
    meta.end_time = utc_timestamp()
    write_meta(run_dir, meta)
    if not stopped:
        delete_checkpoint(run_dir)


@dataclass
class PreparedRun:
    """A run whose folder and ``running`` meta exist, ready to execute."""

    run_id: str
    run_dir: Path
    meta: RunMeta
    state: RunState
    task: str


def prepare_run(
    settings: Settings,
    workspace: Path,
    request: RunRequest,
    *,
    now: datetime | None = None,
    briefing: str = "",
    continuation: Continuation | None = None,
) -> PreparedRun:
    """Create the run folder and its ``running`` meta (synchronous: the caller learns the id at once).

    ``briefing`` (the queue's interim briefing) is appended below the task, after any continuation
    block; neither reaches ``meta.task``. ``continuation``: ``request.continues_from`` already checked
    by the caller (checked here when absent). Raises ``InvalidContinuation`` or ``RunIdCollision``
    before anything is written. A secret in the task is redacted here, so neither ``meta.json``, the
    log nor the model ever holds it.
    """
    task = run_redactor(settings, workspace).redact(request.task)
    request = dataclasses.replace(request, task=task)
    if request.continues_from:
        if continuation is None or continuation.prior_id != request.continues_from:
            continuation = continuation_briefing(workspace, request.continues_from)
        task = f"{task}\n\n{continuation.block}"
    if briefing:
        task = f"{task}\n\n{briefing}"
    run_id = new_run_id(now or datetime.now(UTC))
    run_dir = create_run_dir(workspace, run_id)
    ensure_git_exclude(workspace)  # best effort: keep the bookkeeping out of the project's git
    meta = RunMeta(
        run_id=run_id,
        task=request.task,
        status="running",
        effort=request.effort,
        log_level=request.log_level,
        guild_path=str(settings.guild_dir),
        start_time=utc_timestamp(),
        continues_from=request.continues_from,
    )
    write_meta(run_dir, meta)
    state = RunState(run_id=run_id, started_at=meta.start_time, log_level=request.log_level, effort=request.effort)
    return PreparedRun(run_id=run_id, run_dir=run_dir, meta=meta, state=state, task=task)


async def execute_prepared(
    settings: Settings,
    workspace: Path,
    prepared: PreparedRun,
    services: RunServices | None = None,
    *,
    task_status: trio.TaskStatus[RunControls] = trio.TASK_STATUS_IGNORED,
) -> RunOutcome:
    """Run a prepared run to its card and write the terminal meta; ``task_status`` gets the run's
    ``RunControls`` once its role tree exists (``nursery.start``)."""
    services = services or RunServices()
    checkpointer = Checkpointer(prepared.run_dir, durable=services.durable)
    card, stopped = await _drive(
        settings, workspace, prepared.run_dir, prepared.state, services, checkpointer, prepared.task, task_status
    )
    _finish(prepared.run_dir, prepared.meta, card, stopped=stopped)
    return RunOutcome(
        run_id=prepared.run_id,
        run_dir=prepared.run_dir,
        card=card,
        meta=prepared.meta,
        question=_question(card, prepared.state),
    )


async def execute_run(
    settings: Settings,
    workspace: Path,
    request: RunRequest,
    services: RunServices | None = None,
    *,
    now: datetime | None = None,
    task_status: trio.TaskStatus[RunControls] = trio.TASK_STATUS_IGNORED,
) -> RunOutcome:
    """Create the run folder, run the Guild on ``request.task`` and write the terminal meta.

    Raises ``InvalidContinuation`` or ``RunIdCollision`` before anything is written.
    """
    prepared = prepare_run(settings, workspace, request, now=now)
    return await execute_prepared(settings, workspace, prepared, services, task_status=task_status)


async def resume_run(
    settings: Settings,
    workspace: Path,
    run_dir: Path,
    state: RunState,
    seq: int,
    services: RunServices | None = None,
    *,
    task_status: trio.TaskStatus[RunControls] = trio.TASK_STATUS_IGNORED,
) -> RunOutcome:
    """Continue the run in ``run_dir`` from its recovered checkpoint ``(state, seq)``; ``task_status``
    as in ``execute_prepared``."""
    services = services or RunServices()
    meta = read_meta(run_dir) or RunMeta(
        run_id=state.run_id,
        task=state.frames[0].task if state.frames else "",
        status="running",
        effort=state.effort,
        log_level=state.log_level,
        guild_path=str(settings.guild_dir),
        start_time=state.started_at,
    )
    checkpointer = Checkpointer(run_dir, durable=services.durable)
    checkpointer.resume_from(seq)
    card, stopped = await _drive(settings, workspace, run_dir, state, services, checkpointer, None, task_status)
    _finish(run_dir, meta, card, stopped=stopped)
    return RunOutcome(run_id=state.run_id, run_dir=run_dir, card=card, meta=meta, question=_question(card, state))
