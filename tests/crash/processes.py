"""The crash harness's child processes: their environment, finding a process's descendants by a token,
reaping orphans (a child subreaper), and how a process ended."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

import trio
from tests.proctable import children_of, marked_pids, reap, set_child_subreaper

# --- child processes -----------------------------------------------------------------------------

TOKEN_VARIABLE = "CRASH_HARNESS_TOKEN"
#: A sweep that cannot clear the strays in this long is a harness failure.
SWEEP_SECONDS = 10.0


def child_env(token: str, pause_ms: int) -> dict[str, str]:
    """The orchestrator's environment: no inherited ``ORCHESTRATOR_*``, fast failure, the fault pause,
    and a token every descendant inherits (how strays are found)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    env.update(
        {
            TOKEN_VARIABLE: token,
            "ORCHESTRATOR_LLM_BACKOFF_SECONDS": "0.05",
            "ORCHESTRATOR_STALL_HEADERS_SECONDS": "10",
            "ORCHESTRATOR_STALL_IDLE_SECONDS": "10",
        }
    )
    if pause_ms:
        env["ORCHESTRATOR_FAULT_CHECKPOINT_PAUSE_MS"] = str(pause_ms)
    return env


def token_pids(token: str) -> set[int]:
    """Live processes carrying ``token``."""
    return marked_pids(TOKEN_VARIABLE, token)


class Reaper:
    """Makes this process a child subreaper while the harness runs, so the tool processes a killed
    orchestrator orphans (``run_shell`` children live in their own sessions) are re-parented here rather
    than to PID 1 — which in some containers never reaps them — and can be killed and reaped."""

    def __init__(self) -> None:
        self._previous = False
        self.preexisting: set[int] = set()
        self.reaped = 0

    def __enter__(self) -> Reaper:
        self._previous = set_child_subreaper(True)
        self.preexisting = children_of(os.getpid())
        return self

    def __exit__(self, *exc: object) -> None:
        set_child_subreaper(self._previous)

    def adopted(self) -> set[int]:
        return children_of(os.getpid()) - self.preexisting

    async def sweep(self, token: str, *, exclude: set[int]) -> int:
        """Kill every process carrying ``token`` (whole process groups) and reap every adopted child
        until none is left; returns how many were killed. Waits on the process table, not a clock."""
        killed: set[int] = set()
        with trio.fail_after(SWEEP_SECONDS):
            while True:
                strays = token_pids(token) - exclude
                for pid in strays:
                    for kill in (os.killpg, os.kill):  # its process group first: a shell and its children
                        try:
                            kill(pid, signal.SIGKILL)
                        except (ProcessLookupError, PermissionError):
                            pass
                killed |= strays
                adopted = self.adopted() - exclude
                self.reaped += sum(reap(pid) for pid in adopted)
                if not strays and not adopted:
                    return len(killed)
                await trio.sleep(0.002)


@dataclass
class Finished:
    """How a child process ended: its exit code (``None`` if we killed it) and its output."""

    kind: str
    returncode: int | None
    stdout: str
    stderr: str
    elapsed: float
    pid: int
    #: Seconds from the first log event to the end (``elapsed`` when the anchor was the spawn).
    working: float
