"""The benchmark's child processes (``orchestrator serve``, ``sim-model``): start on a free loopback port,
stop (always reaped), and the cProfile report of a child run under ``--profile``. Also used by
``bench/load/run.py``.
"""

from __future__ import annotations

import io
import os
import pstats
import secrets
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import trio

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Child:
    """A child process of the bench (``orchestrator serve`` or ``sim-model``) and where it listens."""

    name: str
    process: trio.Process
    port: int
    log_path: Path
    log_file: TextIO
    profile_path: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


#: The access token the bench's ``serve`` children require (each bench process picks its own).
BENCH_TOKEN = secrets.token_urlsafe(32)
#: What every request to a ``serve`` child carries (``httpx`` ``headers=``; the WebSocket's ``extra_headers``).
AUTH = {"Authorization": f"Bearer {BENCH_TOKEN}"}


def clean_env() -> dict[str, str]:
    """The bench's environment without ``ORCHESTRATOR_*`` overrides (the child reads its files only),
    plus the bench's token and a socket cap above its subscriber count."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    env["ORCHESTRATOR_TOKEN"] = BENCH_TOKEN
    env["ORCHESTRATOR_WS_MAX_SOCKETS"] = "256"  # section (b) holds 100+ live streams; the default cap is 64
    return env


async def start_child(
    name: str, args: list[str], workdir: Path, *, profile: bool = False, wait_seconds: float = 60
) -> Child:
    """Start ``python -m orchestrator ARGS --port 0 --port-file F`` (under cProfile when ``profile``)
    and wait for the port file."""
    port_file = workdir / f"{name}.port"
    log_path = workdir / f"{name}.log"
    log_file = log_path.open("w")
    profile_path = workdir / f"{name}.prof" if profile else None
    profiler = ["-m", "cProfile", "-o", str(profile_path)] if profile_path else []
    process = await trio.lowlevel.open_process(
        [sys.executable, *profiler, "-m", "orchestrator", *args, "--port", "0", "--port-file", str(port_file)],
        env=clean_env(),
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=log_file,
        stderr=subprocess.STDOUT,
    )
    child = Child(name, process, 0, log_path, log_file, profile_path)
    try:
        with trio.fail_after(wait_seconds):
            while not port_file.exists():
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited with {process.returncode}:\n{child.tail()}")
                await trio.sleep(0.02)
        child.port = int(port_file.read_text().strip())
    except BaseException:
        await stop_child(child)
        raise
    return child


async def stop_child(child: Child) -> None:
    """SIGTERM, then SIGKILL after 10 s; always reaps the process (shielded: safe in ``finally``)."""
    with trio.CancelScope(shield=True):
        if child.process.returncode is None:
            try:
                child.process.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
            with trio.move_on_after(10):
                await child.process.wait()
            if child.process.returncode is None:
                child.process.kill()
                await child.process.wait()
        child.log_file.close()
    if child.profile_path is not None and child.profile_path.exists():
        show_profile(child.profile_path, child.name)


#: The service's own code and the server stack under it, for the cumulative view of a profile.
SERVER_PATHS = r"orchestrator/|hypercorn/|quart|wsproto/|h11/"


def show_profile(path: Path, name: str) -> None:
    """The hottest functions of a child's whole-lifetime cProfile: own time, then cumulative time
    restricted to the service and its server stack (cProfile inflates every figure)."""
    for title, key, restrict in (
        ("own time", "tottime", ()),
        ("cumulative, server code", "cumulative", (SERVER_PATHS,)),
    ):
        out = io.StringIO()
        pstats.Stats(str(path), stream=out).sort_stats(key).print_stats(*restrict, 22)
        lines = out.getvalue().splitlines()
        header = next((i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls")), 0)
        print(f"-- cProfile of {name}, by {title}")
        print("\n".join(line for line in lines[header:] if line.strip()))
