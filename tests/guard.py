"""The test run's guard rails (a pytest plugin, loaded by ``tests/conftest.py``).

* **Slowness.** The process that starts pytest measures the machine once (:mod:`tests.slowness`) and
  hands the factor to its xdist workers; the header says what it found.
* **Deadlines that unwind.** Every trio test runs inside ``trio.move_on_after(timeout × slowness)``,
  so a hung test is *cancelled*: its scopes unwind, the processes it started are killed by their own
  ``finally`` blocks, and the next test starts on a clean trio state. (pytest-timeout's SIGALRM lands
  anywhere, inside trio's run loop included, and once left a run behind that failed the next test with
  "Attempted to call run() from inside a run()".) pytest-timeout stays as the backstop for code that
  cannot be cancelled, set past the largest deadline; sync tests get it scaled by the slowness.
* **Processes left behind.** Every process the run starts inherits :data:`RUN_VARIABLE`, and the
  controller is a child subreaper (Linux), so a process whose parent died first is re-parented to it,
  marker or not (a tool's subprocess gets a scrubbed environment). When the session ends, the controller
  kills any of either still alive (a worker that died, a test that forgot one), names them in the
  summary, and reaps what was re-parented to it.
* **Parallel by module.** ``-n auto`` is a worker per core plus one. Under xdist, tests are sent to
  workers a module at a time (their module fixtures, a served UI or a built wheel, are made once),
  unless an ``xdist_group`` mark puts them in a named group of their own.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Callable, Sequence
from inspect import iscoroutinefunction
from pathlib import Path
from typing import Any

import pytest
import trio
from tests.proctable import children_of, marked_pids, proc_stat, reap, set_child_subreaper
from tests.slowness import FACTOR_VARIABLE, MAX_FACTOR, calibrate, slowness

#: Inherited by every process the run starts; its value names this run.
RUN_VARIABLE = "ORCHESTRATOR_TEST_RUN"
#: A trio test's pytest-timeout backstop: past its largest deadline, so the deadline fires first.
BACKSTOP_MARGIN = 30.0


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    if _is_worker(config):
        return
    os.environ.setdefault(RUN_VARIABLE, uuid.uuid4().hex)
    _adopt_orphans()
    if FACTOR_VARIABLE not in os.environ:
        os.environ[FACTOR_VARIABLE] = f"{calibrate():.2f}"


def _adopt_orphans() -> None:
    """Make this process a child subreaper (Linux; elsewhere nothing changes)."""
    try:
        set_child_subreaper(True)
    except (OSError, AttributeError):
        pass


def _slowness_line() -> str:
    return f"slowness: ×{slowness():.2f} now (calibration ×{os.environ.get(FACTOR_VARIABLE)}, load per core included)"


def pytest_report_header(config: pytest.Config) -> str:
    return _slowness_line()


# --------------------------------------------------------------------------------------- deadlines


class DeadlineExceeded(Exception):
    """A trio test ran past its scaled deadline and was cancelled."""


def _base_timeout(item: pytest.Item) -> float:
    marker = item.get_closest_marker("timeout")
    if marker is not None:
        value = marker.kwargs.get("timeout", marker.args[0] if marker.args else None)
        if value is not None:
            return float(value)
    return float(item.config.getini("timeout") or 0)


def _run_within(base: float, run_name: str) -> Callable[..., Any]:
    """A ``trio.run`` for pytest-trio that cancels the test after ``base`` seconds × the slowness then."""

    def run(async_fn: Callable[[], Any], **options: Any) -> Any:
        deadline = min(base * slowness(), base * MAX_FACTOR)

        async def within_deadline() -> Any:
            with trio.move_on_after(deadline) as scope:
                return await async_fn()
            if scope.cancelled_caught:
                raise DeadlineExceeded(
                    f"{run_name} did not finish within {deadline:.0f} s ({base:.0f} s × slowness "
                    f"{deadline / base:.2f}); it was cancelled and its scopes unwound"
                )
            return None

        return trio.run(within_deadline, **options)

    return run


def _set_timeout(item: pytest.Item, seconds: float) -> None:
    item.own_markers[:] = [m for m in item.own_markers if m.name != "timeout"]
    item.add_marker(pytest.mark.timeout(seconds))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: Sequence[pytest.Item]) -> None:
    """Before pytest-trio marks the async tests: give each its deadline-guarded runner, and scale
    every test's pytest-timeout (0, no timeout, stays 0)."""
    for item in items:
        base = _base_timeout(item)
        if base <= 0:
            continue
        test = getattr(item, "obj", None)
        inner = getattr(getattr(test, "hypothesis", None), "inner_test", test)
        if iscoroutinefunction(inner) and not hasattr(test, "hypothesis"):
            item.add_marker(pytest.mark.trio(run=_run_within(base, item.name)))
            _set_timeout(item, base * MAX_FACTOR + BACKSTOP_MARGIN)
        else:
            _set_timeout(item, base * slowness())


# --------------------------------------------------------------------------------------- leftovers


def _describe(pid: int) -> str:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        command = "?"
    return f"{pid} ({command.strip()[:120]})"


@pytest.hookimpl(trylast=True)  # after xdist has shut its workers down
def pytest_sessionfinish(session: pytest.Session) -> None:
    if _is_worker(session.config):
        return
    run = os.environ.get(RUN_VARIABLE)
    if not run:
        return
    children = children_of(os.getpid())  # after the workers: what was re-parented here, exited or not
    adopted = {pid for pid in children if (stat := proc_stat(pid)) is not None and stat[0] != "Z"}
    marked = {pid for pid in marked_pids(RUN_VARIABLE, run) - {os.getpid()} if proc_stat(pid) is not None}
    leftovers = marked | adopted
    named = [_describe(pid) for pid in sorted(leftovers)]
    for pid in leftovers:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    _reap(children)
    session.config.stash[_LEFTOVERS] = named


def _reap(children: set[int], seconds: float = 5.0) -> None:
    """Reap ``children`` (re-parented here: nobody else waits for them) once they have exited, each killed
    one included; bounded."""
    deadline = time.monotonic() + seconds
    waiting = set(children)
    while waiting and time.monotonic() < deadline:
        waiting = {pid for pid in waiting if not reap(pid) and proc_stat(pid) is not None}
        if waiting:
            time.sleep(0.01)


_LEFTOVERS = pytest.StashKey[list[str]]()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if not _is_worker(config):  # shown with -q too: the factor every budget of this run was scaled by
        terminalreporter.write_line(_slowness_line())
    named = config.stash.get(_LEFTOVERS, [])
    if named:
        terminalreporter.write_sep("=", f"{len(named)} processes outlived their tests and were killed", yellow=True)
        for line in named:
            terminalreporter.write_line(line)


# --------------------------------------------------------------------------------------- xdist


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Whole modules to a worker (``loadscope``), a named ``xdist_group`` to one worker."""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleOrGroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.rfind("@") > nodeid.rfind("]"):
                return nodeid.rsplit("@", 1)[-1]
            return nodeid.split("::", 1)[0]

    return ModuleOrGroupScheduling(config, log)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker per core the run may use, plus one, since most tests spend their time
    waiting on the processes they started (a served UI, a sim model, Chromium)."""
    return len(os.sched_getaffinity(0)) + 1
