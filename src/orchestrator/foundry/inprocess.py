"""Running one benchmark task in this process: ``execute_run`` on the workspace copy.

With a sim solution the scripted model is served on a free loopback port for the duration of the run
and the settings are loaded with that endpoint (and the script's model name and context window)
overriding the deployment file, exactly as the ``ORCHESTRATOR_*`` variables would.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import trio

from orchestrator.config import Settings, load_settings, probe_model
from orchestrator.engine.human import AnswersFile
from orchestrator.engine.runner import RunOutcome, RunRequest, RunServices, execute_run
from orchestrator.llm import timeouts_from_env
from orchestrator.runlog.events import RoleStart, RunEvent
from orchestrator.sim import SimScript, serve_sim
from orchestrator.vocabulary import DEFAULT_LOG_LEVEL, LogLevel

__all__ = ["RunRecord", "load_run_settings", "run_in_process", "sim_env"]

#: What ``ask_human`` hears when ``humanResponses`` has no near-exact match.
NO_ANSWER = "No answer is available; use your judgement."


@dataclass
class RunRecord:
    """How the Guild's run (or runs, when a parked question was answered) ended."""

    status: str
    run_id: str | None = None
    summary: str = ""
    #: Every run folder the task produced, oldest first (tokens are summed over them).
    run_dirs: list[Path] = field(default_factory=list)
    #: Why the run counts as an error without a card (timeout, crash); ``None`` when it has a card.
    problem: str | None = None


def sim_env(env: Mapping[str, str], script: SimScript, api_base: str) -> dict[str, str]:
    """``env`` pointed at a served sim: its endpoint, its model name and context window."""
    out = dict(env)
    out["ORCHESTRATOR_API_BASE"] = api_base
    out["ORCHESTRATOR_MODEL"] = script.model
    out["ORCHESTRATOR_MODEL_CONTEXT_WINDOW"] = str(script.context_window)
    return out


async def load_run_settings(guild_dir: Path, deployment_file: Path, env: Mapping[str, str]) -> Settings:
    """``load_settings`` then the model probe (``ConfigError`` on either)."""
    return await probe_model(load_settings(guild_dir, deployment_file, env))


def _listener(on_phase: Callable[[str], None]) -> Callable[[RunEvent], None]:
    def listen(event: RunEvent) -> None:
        if isinstance(event, RoleStart):
            on_phase(f"running · {event.payload.role_id}")

    return listen


async def _execute(
    settings: Settings,
    workspace: Path,
    request: RunRequest,
    services: RunServices,
    run_timeout: float,
) -> RunRecord:
    outcome: RunOutcome | None = None
    problem = f"the run did not finish within {run_timeout:g} s (--run-timeout)"
    with trio.move_on_after(run_timeout):
        try:
            outcome = await execute_run(settings, workspace, request, services)
        except Exception as exc:  # a crash of one benchmark must not stop the suite
            problem = f"the run crashed: {type(exc).__name__}: {exc}"
    if outcome is None:
        runs = sorted((workspace / ".orchestration" / "runs").glob("run-*"))
        return RunRecord(status="error", run_id=runs[-1].name if runs else None, run_dirs=runs[-1:], problem=problem)
    card = outcome.card
    return RunRecord(status=card.status, run_id=outcome.run_id, summary=card.summary, run_dirs=[outcome.run_dir])


async def run_in_process(
    *,
    guild_dir: Path,
    deployment_file: Path,
    env: Mapping[str, str],
    workspace: Path,
    task: str,
    effort: str,
    human_responses: Mapping[str, str],
    script: SimScript | None,
    run_timeout: float,
    on_phase: Callable[[str], None],
    log_level: LogLevel = DEFAULT_LOG_LEVEL,
) -> RunRecord:
    """Run ``task`` on ``workspace`` once; a sim ``script``, when given, is the model for this run only.

    Raises ``ConfigError`` when the settings do not load (the caller stops the suite).
    """
    services = RunServices(
        timeouts=timeouts_from_env(env),
        human=AnswersFile(human_responses, fallback=NO_ANSWER),
        log_listeners=[_listener(on_phase)],
    )
    request = RunRequest(task=task, effort=effort, log_level=log_level)
    if script is None:
        settings = await load_run_settings(guild_dir, deployment_file, env)
        return await _execute(settings, workspace, request, services, run_timeout)
    async with trio.open_nursery() as nursery:
        api_base = await nursery.start(serve_sim, script)
        try:
            settings = await load_run_settings(guild_dir, deployment_file, sim_env(env, script, api_base))
            return await _execute(settings, workspace, request, services, run_timeout)
        finally:
            nursery.cancel_scope.cancel()
