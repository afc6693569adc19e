"""``orchestrator serve``: Hypercorn (trio worker) serving the app, the service nursery, the lifecycle.

Startup: load the configuration (an invalid one still binds the port and serves the error page, and
the process exits 2 once stopped), reconcile runs (resume at most one), repair the queue, then serve.
SIGINT/SIGTERM: close the queue gate, wind the active run down (30 s by default, a second signal cuts
it short), stop serving; exit 130 if a run was still active, 0 if idle. stderr says so at once, then
the outcome (the run finished, or it resumes from its checkpoint at the next start); a start that
resumes a run says which, from when, and the question it asks again.
"""

from __future__ import annotations

import errno
import json
import signal
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from functools import partial
from importlib import resources
from pathlib import Path
from urllib.parse import quote

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from orchestrator.config import Settings, load_config, locate_config, probe_model
from orchestrator.config.probe import BOOTING, ModelNotReady
from orchestrator.config.secrets import load_redactor
from orchestrator.config.trust import apply_trust
from orchestrator.engine.runfolder import read_meta
from orchestrator.errors import ConfigError
from orchestrator.fsutil import atomic_write
from orchestrator.lifecycle import STOPPING_NOW, stopped_line, wind_down_seconds, winding_down
from orchestrator.llm import timeouts_from_env
from orchestrator.mcpclient import check_mcp_servers
from orchestrator.observability.live import close_sink, open_sink
from orchestrator.service.app import create_app
from orchestrator.service.core import Service
from orchestrator.service.errorpage import Waiting, create_error_app
from orchestrator.service.perimeter import Perimeter
from orchestrator.service.perimeter_rules import is_loopback, policy_from_env
from orchestrator.service.portcheck import bind_failure, busy_message, first_bind_error, holders, is_orchestrator
from orchestrator.service.queue_seal import load_seal
from orchestrator.service.stream import stream_limits_from_env
from orchestrator.service.token import NO_TOKEN_ENV, check_orchestration_dir, resolve_token

__all__ = ["DEFAULT_TITLE", "bind_warnings", "build_info", "open_link", "replay_link", "serve_main"]

DEFAULT_TITLE = "Adaptive Orchestrator"
EXIT_OK, EXIT_CONFIG, EXIT_BUSY = 0, 2, 130
#: What ``serve`` (and the image) listens on unless told otherwise.
DEFAULT_PORT = 8765


def build_info() -> dict[str, str | None] | None:
    """``{sha, builtAt}`` baked into the image at build time; ``None`` from a source checkout."""
    try:
        raw = resources.files("orchestrator").joinpath("_build_info.json").read_text()
    except (FileNotFoundError, OSError):
        return None
    info = json.loads(raw)
    return {k: v for k, v in {"sha": info.get("sha"), "builtAt": info.get("builtAt")}.items() if v}


def bind_warnings(host: str, port: int = DEFAULT_PORT) -> list[str]:
    """What to say at start when ``host`` is not loopback: the API runs shell commands for whoever holds
    the token, and the token travels in clear over plain HTTP. The container advice names the port the
    server listens on inside the container (``port``; the image's 8765 when it is 0, any free one)."""
    if is_loopback(host):
        return []
    inside = port or DEFAULT_PORT
    return [
        f"binding {host}, which is reachable beyond this machine. Whoever reaches this port with the token "
        "can make the orchestrator run commands as this user; over plain HTTP the token can be sniffed on the "
        f"network. Prefer --host 127.0.0.1 (in a container: publish the port as -p 127.0.0.1:{inside}:{inside}), "
        "or put a TLS proxy in front and list its name in ORCHESTRATOR_ALLOWED_HOSTS."
    ]


def _token_off(no_token: bool, env: Mapping[str, str]) -> bool:
    return no_token or env.get(NO_TOKEN_ENV, "").strip().lower() in ("1", "true", "yes")


def _token(workspace: Path, env: Mapping[str, str], *, no_token: bool) -> str | None:
    """The token the perimeter requires; ``None`` when turned off (only ever on a loopback bind)."""
    if _token_off(no_token, env):
        for _ in range(2):
            print(
                "orchestrator: WARNING: THE TOKEN IS OFF — any program or user on this machine can reach the API "
                "and make it run commands as you. Only the Host and Origin checks still stand.",
                file=sys.stderr,
            )
        return None
    if not workspace.is_dir():
        raise ConfigError(f"--workspace {workspace}: not a directory")
    return resolve_token(workspace, env).token


def _config(host: str, port: int) -> Config:
    config = Config()
    config.bind = [f"{host}:{port}"]
    config.graceful_timeout = 3.0
    config.backlog = 1024  # a burst of clients (a load test, many tabs) must not overflow the accept queue
    config.accesslog = None
    config.errorlog = "-"
    return config


def open_link(bind: str, token: str | None) -> str:
    """The address ``serve`` prints: the bind (a wildcard one through loopback, as the Host check does
    not take 0.0.0.0 as a name) with the sign-in token."""
    base = bind.replace("://0.0.0.0:", "://127.0.0.1:", 1).replace("://[::]:", "://[::1]:", 1)
    return f"{base}/?token={token}" if token is not None else base


def replay_link(link: str, run_id: str) -> str:
    """``link`` opening the page on ``run_id``'s replay (the shell's ``#watch/<id>/replay`` route; the
    sign-in redirect keeps the fragment)."""
    return f"{link.removesuffix('/')}{'' if '?' in link else '/'}#watch/{quote(run_id, safe='')}/replay"


def _announce(binds: list[str], port_file: Path | None, token: str | None = None) -> None:
    """The address lines go to stdout (what to open; a script can read them), the notes to stderr."""
    print(f"orchestrator: serving on {binds[0]} — Ctrl-C stops", flush=True)
    print(f"orchestrator: open {open_link(binds[0], token)}", flush=True)
    if port_file is not None:
        port = binds[0].rsplit(":", 1)[1]
        atomic_write(port_file, port.encode(), durable=False)


#: While the model server is not up yet, it is probed again after 1 s, 2 s, 4 s ... at most every 10 s.
MODEL_WAIT_BACKOFF, MODEL_WAIT_CAP = 1.0, 10.0


def _notice(message: str) -> None:
    print(f"orchestrator: {message}", file=sys.stderr, flush=True)


def _outcome(run_id: str, run_dir: Path, *, abandoned: bool) -> str:
    """What the wind-down came to for the run that was active when the signal arrived."""
    if abandoned:
        return stopped_line(run_id, "will resume from its checkpoint at the next start")
    meta = read_meta(run_dir)
    status = meta.status if meta is not None else "unknown"
    if status == "running":  # it ended in a way that left no terminal meta (a crash): the next start sees
        return stopped_line(run_id, "was left running; the next start reconciles it")
    return f"run {run_id} finished during the wind-down ({status}); stopped"


async def _wait_for_model(
    loaded: Settings,
    waiting: ModelNotReady,
    signals: AsyncIterator[int],
    title: str,
    host: str,
    port: int,
    port_file: Path | None,
    env: Mapping[str, str],
    sources: list[str],
    token: str | None,
) -> tuple[Settings, int] | None:
    """The model API could not be probed and the configuration needs it: serve the waiting page (it
    reloads itself) while probing again with backoff. Returns the probed settings and the bound port once
    the model server answers (the caller serves on that port), or ``None`` when a signal came first.

    The link printed carries the token, so the page's own reload lands signed in once the service is up.
    """
    problems = [waiting.status.message.removesuffix(BOOTING), *waiting.problems]  # it does not boot: it waits
    _notice(waiting.headline)
    for problem in waiting.problems:
        _notice(f"  ({problem})")
    _notice("waiting: the service starts by itself once the model server answers")
    found: list[Settings] = []
    ready = trio.Event()

    async def trigger() -> None:
        async with trio.open_nursery() as either:

            async def on_signal() -> None:
                await signals.__anext__()
                either.cancel_scope.cancel()

            async def on_ready() -> None:
                await ready.wait()
                either.cancel_scope.cancel()

            either.start_soon(on_signal)
            either.start_soon(on_ready)

    async def probe_again() -> None:
        delay = MODEL_WAIT_BACKOFF
        while True:
            await trio.sleep(delay)
            delay = min(MODEL_WAIT_CAP, delay * 2)
            try:
                found.append(await probe_model(loaded, attempts=1, on_notice=_notice))
            except ModelNotReady as still:
                _notice(f"still waiting: {still.status.message}")
                continue
            except ConfigError as exc:  # the server answered, but something else is wrong: keep saying so
                for problem in exc.problems:
                    _notice(f"invalid configuration: {problem}")
                continue
            ready.set()
            return

    shown = Waiting(api_base=waiting.api_base, loading=waiting.status.loading)  # already redacted
    app = create_error_app(problems, title, sources=sources, waiting=shown)
    # like the configuration error page: Host/Origin checks and headers, no token (it shows no run data)
    app.asgi_app = Perimeter(app.asgi_app, policy_from_env(None, host, env), inline_styles=True)  # type: ignore[method-assign]
    async with trio.open_nursery() as nursery:

        async def serving(task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED) -> None:
            await serve(app, _config(host, port), shutdown_trigger=trigger, task_status=task_status)
            nursery.cancel_scope.cancel()

        binds: list[str] = await nursery.start(serving)
        _announce(binds, port_file, token)
        nursery.start_soon(probe_again)
    if not found:
        return None
    _notice("the model server answered; starting the service")
    return found[0], int(binds[0].rsplit(":", 1)[1])


async def _port_problem(host: str, port: int, error: OSError) -> str:
    orchestrator = error.errno == errno.EADDRINUSE and await is_orchestrator(host, port)
    found = holders(port) if error.errno == errno.EADDRINUSE else []
    return busy_message(host, port, error, found, orchestrator)


async def serve_main(
    *,
    workspace: Path,
    host: str,
    port: int,
    port_file: Path | None,
    guild: str | None,
    deployment: str | None,
    env: Mapping[str, str],
    initial_task: str | None = None,
    no_token: bool = False,
    shown_notes: Callable[[list[str]], list[str]] | None = None,
) -> int:
    """Serve until SIGINT/SIGTERM; the exit code says how it ended (0 idle, 130 busy, 2 bad config or an
    address that cannot be bound — checked first, and said in one line naming who holds the port)."""
    taken = bind_failure(host, port)
    if taken is not None:
        print(f"orchestrator: {await _port_problem(host, port, taken)}", file=sys.stderr, flush=True)
        return EXIT_CONFIG
    try:
        return await _serve_main(
            workspace=workspace,
            host=host,
            port=port,
            port_file=port_file,
            guild=guild,
            deployment=deployment,
            env=env,
            initial_task=initial_task,
            no_token=no_token,
            shown_notes=shown_notes,
        )
    except (OSError, BaseExceptionGroup) as failure:  # taken between the check and the bind
        error = first_bind_error(failure)
        if error is None:
            raise
        print(f"orchestrator: {await _port_problem(host, port, error)}", file=sys.stderr, flush=True)
        return EXIT_CONFIG


async def _serve_main(
    *,
    workspace: Path,
    host: str,
    port: int,
    port_file: Path | None,
    guild: str | None,
    deployment: str | None,
    env: Mapping[str, str],
    initial_task: str | None = None,
    no_token: bool = False,
    shown_notes: Callable[[list[str]], list[str]] | None = None,
) -> int:
    title = env.get("ORCHESTRATOR_TITLE") or DEFAULT_TITLE
    for line in bind_warnings(host, port):
        print(f"orchestrator: WARNING: {line}", file=sys.stderr)
    if _token_off(no_token, env) and not is_loopback(host):
        # refused before anything binds: not even the configuration error page goes out on that address
        print(
            f"orchestrator: invalid configuration: the token can be turned off (--no-token / {NO_TOKEN_ENV}) only "
            f"on a loopback bind, not on {host}",
            file=sys.stderr,
        )
        return EXIT_CONFIG
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        # workspace trust (config/trust.py): an untrusted checkout's guild/ and deployment are not used
        paths, trust = apply_trust(locate_config(guild, deployment, env, workspace), workspace, env)
        for line in trust.notes():
            print(f"orchestrator: WARNING: {line}", file=sys.stderr, flush=True)
        try:
            check_orchestration_dir(workspace)  # a planted symlink into a shared folder is refused
            token = _token(workspace, env, no_token=no_token)
            seal = load_seal(workspace, env)
            limits = stream_limits_from_env(env)
            loaded = load_config(paths, env)
            timeouts = timeouts_from_env(env)
            wind_down = wind_down_seconds(env)
            if not workspace.is_dir():
                raise ConfigError(f"--workspace {workspace}: not a directory")
            try:
                settings = await probe_model(loaded, on_notice=_notice)
            except ModelNotReady as waiting:
                sources = load_redactor(env, workspace=workspace).redact_all(paths.notes())
                ready = await _wait_for_model(
                    loaded, waiting, signals, title, host, port, port_file, env, sources, token
                )
                if ready is None:
                    return EXIT_CONFIG
                settings, port = ready
            if settings.deployment.mcp_servers:
                names = ", ".join(settings.deployment.mcp_servers)
                _notice(f"starting each MCP server once to list its tools: {names}")
            mcp_problems = await check_mcp_servers(settings)  # each declared server started once, now
            if mcp_problems:
                raise ConfigError(mcp_problems)
        except ConfigError as exc:
            redactor = load_redactor(env, workspace=workspace)  # a key pasted into a wrong variable stays hidden
            sources = redactor.redact_all(paths.notes())
            for note in sources:
                print(f"orchestrator: {note}", file=sys.stderr)
            problems = redactor.redact_all(exc.problems)
            for problem in problems:
                print(f"orchestrator: invalid configuration: {problem}", file=sys.stderr)
            # the error page takes no action and shows no run data: Host/Origin checks and headers, no token
            app = create_error_app(problems, title, sources=sources)
            app.asgi_app = Perimeter(app.asgi_app, policy_from_env(None, host, env), inline_styles=True)  # type: ignore[method-assign]
            async with trio.open_nursery() as nursery:
                trigger = signals.__anext__
                _announce(
                    await nursery.start(partial(serve, app, _config(host, port), shutdown_trigger=trigger)), port_file
                )
            return EXIT_CONFIG
        for note in shown_notes(settings.notes) if shown_notes is not None else settings.notes:
            print(f"orchestrator: {note}", file=sys.stderr)
        sink = open_sink(env, settings.deployment.observability)
        service = Service(
            settings,
            workspace,
            timeouts=timeouts,
            title=title,
            build=build_info(),
            seal=seal,
            trust=trust,
            trace_sink=sink,
        )
        app = create_app(service, policy_from_env(token, host, env), limits)
        busy = False
        second_signal = trio.Event()

        async def shutdown_trigger() -> None:
            nonlocal busy
            await signals.__anext__()
            active = service.active
            if active is None:
                _notice("stopping (no run is active)")
            else:
                waiting = " (it waits for an answer: a question pending now is asked again after the restart)"
                _notice(winding_down(active.run_id, wind_down) + (waiting if service.questions.list() else ""))

            async def watch_second() -> None:
                await signals.__anext__()
                if active is not None:
                    _notice(STOPPING_NOW)
                second_signal.set()

            async with trio.open_nursery() as watcher:
                watcher.start_soon(watch_second)
                busy = await service.wind_down(wind_down, second_signal)
                watcher.cancel_scope.cancel()
            if active is not None:
                _notice(_outcome(active.run_id, active.run_dir, abandoned=busy))

        async with trio.open_nursery() as service_nursery:

            async def serving(task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED) -> None:
                await serve(app, _config(host, port), shutdown_trigger=shutdown_trigger, task_status=task_status)
                service_nursery.cancel_scope.cancel()  # best-effort tasks (summaries) do not hold the exit

            service.attach(service_nursery)
            await service.start()
            if service.resumed is not None:
                _notice(service.resumed.message)
            binds = await service_nursery.start(serving)
            _announce(binds, port_file, token)
            if initial_task is not None:
                run_id = await service.submit_initial(initial_task)
                if run_id is not None:  # the demo opens on its run's replay, not on an empty form
                    link = replay_link(open_link(binds[0], token), run_id)
                    print(f"orchestrator: watch the demo run {run_id}: open {link}", flush=True)
        await close_sink(sink)
        return EXIT_BUSY if busy else EXIT_OK
