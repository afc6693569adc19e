"""Start one run end to end: run folder, ``meta.json``, log, model client, the role tree, final meta.

This is the seam both ``orchestrator run`` and the service use: give it resolved settings and a
request; it returns when the entry role has a card. Cancellation (shutdown) propagates and leaves the
meta at ``running`` — the run is resumable, not finished.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.config import Settings
from orchestrator.engine.run import DeltaSink, Run
from orchestrator.engine.runfolder import RunMeta, create_run_dir, new_run_id, write_meta
from orchestrator.engine.state import RunState
from orchestrator.llm import LlmClient, LlmTimeouts
from orchestrator.runlog.events import ResultCard, RunEvent
from orchestrator.runlog.writer import LogLevel, RunLog, utc_timestamp
from orchestrator.tools import NativeTool, default_native_tools

__all__ = ["RunOutcome", "RunRequest", "RunServices", "execute_run"]


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


@dataclass
class RunServices:
    """What a run borrows from its host; tests and the service pass their own."""

    timeouts: LlmTimeouts = field(default_factory=LlmTimeouts)
    native_tools: Mapping[str, NativeTool] | None = None
    on_delta: DeltaSink | None = None
    #: Called with every event as it is written (after the level filter); must not raise.
    log_listeners: list[Callable[[RunEvent], None]] = field(default_factory=list)


async def execute_run(
    settings: Settings,
    workspace: Path,
    request: RunRequest,
    services: RunServices | None = None,
    *,
    now: datetime | None = None,
) -> RunOutcome:
    """Create the run folder, run the Guild on ``request.task`` and write the terminal meta.

    Raises ``RunIdCollision`` (before anything is written) when this second's run id is taken.
    """
    services = services or RunServices()
    started = now or datetime.now(UTC)
    run_id = new_run_id(started)
    run_dir = create_run_dir(workspace, run_id)
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
    model = settings.deployment.model
    tools = dict(services.native_tools) if services.native_tools is not None else default_native_tools()
    with RunLog(run_dir / "log.jsonl", request.log_level) as log:
        log.listeners.extend(services.log_listeners)
        async with LlmClient(model.api_base, api_key=settings.api_key, timeouts=services.timeouts) as llm:
            run = Run(
                settings=settings,
                workspace=workspace,
                state=state,
                log=log,
                llm=llm,
                native_tools=tools,
                on_delta=services.on_delta,
            )
            card = await run.execute(request.task)
    meta.status = card.status
    meta.result = card
    meta.error = card.error
    meta.end_time = utc_timestamp()
    write_meta(run_dir, meta)
    return RunOutcome(run_id=run_id, run_dir=run_dir, card=card, meta=meta)
