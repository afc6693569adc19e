"""The ``orchestrator`` command: ``serve``, ``run``, ``resume``, ``demo``, ``check``, ``init``, ``trust``, ``token``,
``mcp``, ``bench``, ``foundry``, ``sim-model``; ``orchestrator --version`` prints the package version.

Exit codes: 0 success; 1 the run ended ``error`` / ``needs_clarification``; 2 invalid configuration or
usage (a port already in use included, and a model server whose chat template cannot render tools); 3 the
configuration is valid but no model server answers at ``model.apiBase`` (or it is still loading its model) —
``check`` says so even when the configured values would let a service boot, ``run`` and ``resume`` when the
run needs the probe; 130 interrupted by a signal.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import msgspec
import trio

from orchestrator.cliparser import build_parser
from orchestrator.config import Settings, load_config, locate_config, probe_model, render_settings
from orchestrator.config.probe import BOOTING, ModelNotReady, not_ready_headline
from orchestrator.config.secrets import load_redactor
from orchestrator.config.settings import ConfigPaths
from orchestrator.config.trust import TrustReport, apply_trust
from orchestrator.engine.human import AnswersFile, HumanBackend, Terminal, load_answers
from orchestrator.engine.reconcile import reconcile_runs
from orchestrator.engine.runfolder import RunIdCollision
from orchestrator.engine.runner import (
    InvalidContinuation,
    RunOutcome,
    RunRequest,
    RunServices,
    execute_prepared,
    prepare_run,
    resume_run,
)
from orchestrator.errors import ConfigError
from orchestrator.lifecycle import WindDown, run_with_wind_down, wind_down_seconds
from orchestrator.llm import timeouts_from_env
from orchestrator.mcpclient import check_mcp_servers
from orchestrator.narration import Narrator
from orchestrator.observability.live import attach_trace, close_sink, open_sink, run_listener
from orchestrator.projectsettings import read_project_settings, resolve_effort, resolve_log_level

__all__ = ["build_parser", "main"]

EXIT_OK, EXIT_RUN_FAILED, EXIT_CONFIG, EXIT_UNREACHABLE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

#: How a caller (the demo) rewrites the start-up notes before they are printed.
NotesView = Callable[[list[str]], list[str]]


def _human(args: argparse.Namespace) -> HumanBackend | None:
    """Who answers ``ask_human`` for a command-line run: the answers file, else an interactive terminal."""
    if getattr(args, "answers", None):
        return AnswersFile(load_answers(Path(args.answers)))
    return Terminal() if sys.stdin.isatty() else None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "sim-model":
        from orchestrator.sim.cli import main as sim_main

        return sim_main(argv[1:])
    if argv and argv[0] == "bench":
        from orchestrator.foundry.cli import main as bench_main

        return bench_main(argv[1:])
    if argv and argv[0] == "foundry":
        from orchestrator.foundry.foundrycli import main as foundry_main

        return foundry_main(argv[1:])
    args = build_parser().parse_args(argv)
    env = dict(os.environ)
    if args.command == "mcp":
        return _mcp(args, env)
    if args.command == "init":
        return _init(args, env)
    if args.command == "trust":
        return _trust(args, env)
    if args.command == "token":
        return _token(args, env)
    try:
        if args.command == "check":
            return trio.run(_check, args, env)
        if args.command == "demo":
            return trio.run(_demo, args, env)
        if args.command == "resume":
            return trio.run(_resume, args, env)
        if args.command == "serve":
            return trio.run(_serve, args, env)
        if args.command == "export-trace":
            return trio.run(_export_trace, args, env)
        return trio.run(_run, args, env)
    except ModelNotReady as exc:
        _print_not_ready(exc.headline, [exc.status.message, *exc.problems], env)
        return EXIT_UNREACHABLE
    except ConfigError as exc:
        _print_problems(exc, env)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _mcp(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``orchestrator mcp`` (normally reached through ``orchestrator.__main__`` without this module)."""
    from orchestrator.workflow.cli import run_mcp

    return run_mcp(args, env)


def _init(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``orchestrator init [DIR]``: the packaged defaults copied into DIR (see ``defaults/init.py``), trusted."""
    from orchestrator.defaults.init import InitRefused, init_workspace

    directory = Path(args.directory).resolve()
    try:
        copied = init_workspace(directory, force=args.force, workflows=args.workflows)
    except InitRefused as exc:
        print("orchestrator init: nothing written; these already exist:", file=sys.stderr)
        for path in exc.existing:
            print(f"  - {path}", file=sys.stderr)
        print("  (--force replaces them, keeping each old copy beside it as NAME.replaced-TIMESTAMP)", file=sys.stderr)
        return EXIT_CONFIG
    except OSError as exc:
        print(f"orchestrator init: cannot write into {directory}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_CONFIG
    for item in copied:
        kept = f" (the old one is now {item.kept_as.name})" if item.kept_as else ""
        print(f"orchestrator init: wrote the {item.what} to {item.target}{kept}")
    _record_trust(directory, env, "orchestrator init")
    print(
        f"orchestrator init: `orchestrator check --workspace {directory}` shows them in use; "
        f"`orchestrator serve --workspace {directory}` serves with them"
    )
    return EXIT_OK


# --- workspace trust (config/trust.py) ---------------------------------------------------------


def _record_trust(directory: Path, env: Mapping[str, str], command: str) -> bool:
    from orchestrator.config.trust import trust_store_path, trust_workspace

    try:
        record = trust_workspace(directory, env)
    except (OSError, ConfigError) as exc:
        print(f"{command}: cannot record trust in {trust_store_path(env)}: {exc}", file=sys.stderr)
        return False
    for path in sorted(record.files):
        print(f"{command}: trusted {directory / path} (sha256 {record.files[path][:12]}…)")
    if not record.files:
        print(f"{command}: {directory} has no guild/ or deployment/deployment.json to trust")
    return True


def _trust(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``orchestrator trust [DIR]``: record the hashes of DIR's guild/ and deployment file outside it."""
    directory = Path(args.directory).resolve()
    if not directory.is_dir():
        print(f"orchestrator trust: {directory}: not a directory", file=sys.stderr)
        return EXIT_CONFIG
    if not _record_trust(directory, env, "orchestrator trust"):
        return EXIT_CONFIG
    print("orchestrator trust: a changed file is untrusted again until you run this once more")
    return EXIT_OK


def _located(args: argparse.Namespace, env: Mapping[str, str]) -> tuple[ConfigPaths, TrustReport]:
    """The config paths with an untrusted workspace's own copies swapped for the packaged ones."""
    workspace = Path(args.workspace).resolve()
    paths, trust = apply_trust(locate_config(args.guild, args.deployment, env, workspace), workspace, env)
    for line in trust.notes():
        print(f"orchestrator: WARNING: {line}", file=sys.stderr, flush=True)
    return paths, trust


# ------------------------------------------------------------------------------------------------


def _token(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``orchestrator token``: ORCHESTRATOR_TOKEN when set, else the workspace's token (created when missing,
    so the next ``serve`` there uses the same one)."""
    from orchestrator.service.token import resolve_token

    workspace = Path(args.workspace).resolve()
    if not workspace.is_dir():
        print(f"orchestrator: --workspace {workspace}: not a directory", file=sys.stderr)
        return EXIT_CONFIG
    try:
        source = resolve_token(workspace, env)
    except ConfigError as exc:
        _print_problems(exc, env)
        return EXIT_CONFIG
    print(source.token)
    print(f"orchestrator: from {source.origin}; open http://HOST:PORT/?token=<this token>", file=sys.stderr)
    return EXIT_OK


#: ``check``/``run``/``resume``: how long a model server still loading its model is waited for.
LOAD_WAIT_SECONDS = 120.0


def _notice(message: str) -> None:
    print(f"orchestrator: {message}", file=sys.stderr, flush=True)


def _print_problems(exc: ConfigError, env: Mapping[str, str]) -> None:
    print("orchestrator: invalid configuration:", file=sys.stderr)
    for problem in load_redactor(env).redact_all(exc.problems):
        print(f"  - {problem}", file=sys.stderr)


def _print_not_ready(headline: str, details: list[str], env: Mapping[str, str]) -> None:
    """The cause first, in one line; what it leads to below it, in parentheses."""
    redactor = load_redactor(env)
    print(f"orchestrator: {redactor.redact_all([headline])[0]}", file=sys.stderr)
    for detail in redactor.redact_all([d.removesuffix(BOOTING) for d in details]):
        print(f"  ({detail})", file=sys.stderr)


async def _settings(
    args: argparse.Namespace, env: Mapping[str, str], *, probe: bool = True, shown_notes: NotesView | None = None
) -> Settings:
    """Load and probe the configuration, printing its notes. A model server whose chat template cannot
    render tools is a ``ConfigError`` here (exit 2): no run could work, so none is started."""
    paths, _ = _located(args, env)
    try:
        settings = load_config(paths, env)
        if probe:
            settings = await probe_model(settings, load_wait_seconds=LOAD_WAIT_SECONDS, on_notice=_notice)
    except ConfigError:
        for note in load_redactor(env).redact_all(paths.notes()):  # where each file came from, also on failure
            print(f"orchestrator: {note}", file=sys.stderr)
        raise
    problem = settings.model_status.tools_problem if settings.model_status is not None else None
    notes = [note for note in settings.notes if problem is None or not note.endswith(problem)]
    for note in shown_notes(notes) if shown_notes is not None else notes:
        print(f"orchestrator: {note}", file=sys.stderr)
    if problem is not None:
        raise ConfigError(problem)
    return settings


async def _check(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    settings = await _settings(args, env, probe=not args.no_probe)
    if not args.no_probe:  # start each declared MCP server once: a run would meet these at its start
        problems = await check_mcp_servers(settings)
        if problems:
            raise ConfigError(problems)
    _, trust = apply_trust(
        locate_config(args.guild, args.deployment, env, Path(args.workspace).resolve()), Path(args.workspace), env
    )
    print(json.dumps({**render_settings(settings), "trust": msgspec.to_builtins(trust)}, indent=2))
    status = settings.model_status
    if status is not None and not status.reachable:  # valid, and bootable on the configured values, but
        api_base = settings.redactor().redact_all([settings.deployment.model.api_base])[0]  # nothing answers
        _print_not_ready(not_ready_headline(api_base, loading=status.loading), [status.message], env)
        return EXIT_UNREACHABLE
    return EXIT_OK


def _request(args: argparse.Namespace, settings: Settings, workspace: Path) -> RunRequest:
    project = read_project_settings(workspace)
    logging = settings.deployment.logging
    return RunRequest(
        task=args.task,
        effort=resolve_effort(args.effort, project),
        log_level=resolve_log_level(args.log_level, project, logging.level if logging else None),  # type: ignore[arg-type]
        continues_from=getattr(args, "continues_from", None),
    )


def _narrated(args: argparse.Namespace, env: Mapping[str, str]) -> RunServices:
    """A terminal run's services: the narration on stderr (a line per role, tool call and model turn)."""
    narrator = Narrator()
    return RunServices(
        timeouts=timeouts_from_env(env), human=_human(args), on_delta=narrator.delta, log_listeners=[narrator.event]
    )


async def _run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    settings = await _settings(args, env)
    workspace = Path(args.workspace).resolve()
    services = _narrated(args, env)
    return await _execute(settings, workspace, _request(args, settings, workspace), services, args.json, env)


async def _execute(
    settings: Settings,
    workspace: Path,
    request: RunRequest,
    services: RunServices,
    as_json: bool,
    env: Mapping[str, str],
) -> int:
    if not workspace.is_dir():
        raise ConfigError(f"--workspace {workspace}: not a directory")
    try:
        prepared = prepare_run(settings, workspace, request)
    except RunIdCollision as exc:
        print(f"orchestrator: run id {exc} is taken (one run per second); try again", file=sys.stderr)
        return EXIT_RUN_FAILED
    except InvalidContinuation as exc:
        raise ConfigError(str(exc)) from None
    sink = open_sink(env, settings.deployment.observability)
    if sink is not None:
        attach_trace(services, run_listener(sink, prepared.run_dir, settings))
    try:
        outcome, wind_down = await run_with_wind_down(
            lambda: execute_prepared(settings, workspace, prepared, services),
            services.interrupts,
            seconds=wind_down_seconds(env),
            say=_say,
        )
    finally:
        await close_sink(sink)
    return _report(outcome, wind_down, as_json)


def _say(line: str) -> None:
    """A line for the operator on stderr, at once."""
    print(f"orchestrator: {line}", file=sys.stderr, flush=True)


def _report(outcome: RunOutcome | None, wind_down: WindDown, as_json: bool) -> int:
    if outcome is None:
        print(
            "orchestrator: stopped by a signal before the run finished; its last checkpoint is kept — "
            "`orchestrator resume` continues it",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    if wind_down.signalled:
        _say(f"run {outcome.run_id} finished during the wind-down ({outcome.card.status})")
    _print_outcome(outcome, as_json)
    return EXIT_OK if outcome.card.status == "success" else EXIT_RUN_FAILED


async def _resume(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    settings = await _settings(args, env)
    workspace = Path(args.workspace).resolve()
    reconciliation = reconcile_runs(workspace, guild_path=str(settings.guild_dir))
    for run_id, reason in reconciliation.interrupted.items():
        print(f"orchestrator: marked {run_id} interrupted ({reason})", file=sys.stderr)
    found = reconciliation.resumable
    if found is None:
        print("orchestrator: no run to resume", file=sys.stderr)
        return EXIT_OK
    _say(f"{found.notice().message} ({len(found.state.frames)} live roles)")
    services = _narrated(args, env)
    sink = open_sink(env, settings.deployment.observability)
    if sink is not None:
        attach_trace(services, run_listener(sink, found.run_dir, settings))
    try:
        outcome, wind_down = await run_with_wind_down(
            lambda: resume_run(settings, workspace, found.run_dir, found.state, found.seq, services),
            services.interrupts,
            seconds=wind_down_seconds(env),
            say=_say,
        )
    finally:
        await close_sink(sink)
    return _report(outcome, wind_down, args.json)


async def _export_trace(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from orchestrator.observability.exporttrace import export_trace, resolve_run_dir

    settings = await _settings(args, env, probe=False)
    return export_trace(resolve_run_dir(args.run_dir, Path(args.workspace)), settings.deployment, env)


def _print_outcome(outcome: RunOutcome, as_json: bool) -> None:
    card = outcome.card
    if as_json:
        print(msgspec.json.encode({"runId": outcome.run_id, **msgspec.to_builtins(card)}).decode())
        return
    print(f"run {outcome.run_id}: {card.status}")
    print(f"  {card.summary}")
    if card.error is not None:
        print(f"  error: {card.error.kind}" + (f" — {card.error.message}" if card.error.message else ""))
    for artifact in card.artifacts:
        print(f"  artifact: {artifact}")
    print(f"  log: {outcome.run_dir / 'log.jsonl'}")


async def _serve(
    args: argparse.Namespace,
    env: Mapping[str, str],
    initial_task: str | None = None,
    shown_notes: NotesView | None = None,
) -> int:
    from orchestrator.service.serve import serve_main

    return await serve_main(
        workspace=Path(args.workspace).resolve(),
        host=args.host,
        port=args.port,
        port_file=Path(args.port_file) if args.port_file else None,
        guild=args.guild,
        deployment=args.deployment,
        env=env,
        initial_task=initial_task,
        no_token=args.no_token,
        shown_notes=shown_notes,
    )


async def _demo(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """The bundled sim script on a free loopback port; then either the service pointed at it with the
    demo task submitted (default), or one run of the demo task in the terminal (``--once``)."""
    from orchestrator.demo import run_demo, serve_demo

    if args.once:
        return await run_demo(args, env, settings_loader=_settings, execute=_execute, request_for=_request)
    return await serve_demo(args, env, serve=_serve)
