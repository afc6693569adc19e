"""The ``orchestrator sim-model`` command: serve a sim script until SIGINT/SIGTERM.

Exit codes: 0 after a signal-driven shutdown, 2 for a bad script or arguments, 1 if the address cannot
be bound.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

import msgspec
import trio

from orchestrator.sim.script import ScriptError, SimScript, load_script
from orchestrator.sim.server import serve_sim

__all__ = ["apply_flavor_options", "build_parser", "main", "write_port_file"]


def build_parser() -> argparse.ArgumentParser:
    """The ``orchestrator sim-model`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="orchestrator sim-model",
        description="Serve a scripted, simulated OpenAI Responses-API model (see docs/sim-model.md).",
    )
    parser.add_argument("--script", type=Path, help="script JSON file (omitted: an empty script)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to bind; 0 picks a free one (default 0)")
    parser.add_argument("--port-file", type=Path, help="once listening, atomically write the bound port here")
    parser.add_argument(
        "--flavor",
        choices=["openai", "llama-server"],
        help="whose wire habits to imitate (default: the script's `flavor.name`, else openai)",
    )
    parser.add_argument(
        "--loading-seconds",
        type=float,
        help="llama-server flavor: answer 503 'Loading model' on every endpoint for this long after start",
    )
    parser.add_argument(
        "--system-first",
        action="store_true",
        help="llama-server flavor: refuse a system message after position 0 with HTTP 500 (Qwen3.5-style template)",
    )
    parser.add_argument(
        "--no-tool-template",
        action="store_true",
        help="llama-server flavor: GET /props reports a chat template that cannot render tools",
    )
    return parser


def apply_flavor_options(script: SimScript, args: argparse.Namespace) -> SimScript:
    """The script with the command line's flavor options laid over its ``flavor`` block.

    Raises ``ScriptError`` for a negative or non-finite ``--loading-seconds``.
    """
    flavor = script.flavor
    changes: dict[str, object] = {}
    if args.flavor is not None:
        changes["name"] = args.flavor
    if args.loading_seconds is not None:
        seconds = args.loading_seconds
        if not (seconds >= 0 and seconds != float("inf")):
            raise ScriptError(f"--loading-seconds {seconds}: expected a non-negative number of seconds")
        changes["loading_ms"] = round(seconds * 1000)
    if args.system_first:
        changes["system_first"] = True
    if args.no_tool_template:
        changes["supports_tools"] = False
    if not changes:
        return script
    return msgspec.structs.replace(script, flavor=msgspec.structs.replace(flavor, **changes))


def write_port_file(path: Path, port: int) -> None:
    """Write ``port`` to ``path`` atomically: a temp file in the same directory, fsync, rename.

    Blocking; raises ``OSError`` on failure (the temp file is removed).
    """
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(f"{port}\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


async def _run(script: SimScript, host: str, port: int, port_file: Path | None) -> int:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:

        async def wait_for_signal() -> None:
            async for _ in signals:
                return

        async with trio.open_nursery() as nursery:
            base_url: str = await nursery.start(
                partial(serve_sim, script, host=host, port=port, shutdown_trigger=wait_for_signal)
            )
            print(f"sim-model listening on {base_url} ({script.flavor.name} flavor)", file=sys.stderr, flush=True)
            if port_file is not None:
                bound = urlsplit(base_url).port
                await trio.to_thread.run_sync(write_port_file, port_file, bound)
    return 0


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def main(argv: list[str] | None = None) -> int:
    """Run ``orchestrator sim-model``; returns the process exit code.

    Serves until SIGINT or SIGTERM, then shuts down gracefully (in-flight streams get 1 s) and returns 0.
    """
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        script = load_script(args.script) if args.script is not None else SimScript()
        script = apply_flavor_options(script, args)
    except (ScriptError, OSError) as exc:
        print(f"sim-model: {exc}", file=sys.stderr)
        return 2
    code = 1
    try:
        code = trio.run(_run, script, args.host, args.port, args.port_file)
    except* OSError as group:
        for exc in _leaves(group):
            print(f"sim-model: cannot serve on {args.host}:{args.port}: {exc}", file=sys.stderr)
    return code
