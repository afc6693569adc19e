"""Trace-export overhead. Run: ``.venv/bin/python bench/otel_overhead.py [--quick]`` (see bench/README.md).

The real engine runs a scripted role against the in-process sim model: every turn one model call and one
cheap tool call (``context_info``, no subprocess, so the export's share is as large as it gets). Each round
runs the same run five times, in an order that rotates from round to round: without the export, and with
the live export (``observability.live``, one sink per collector, as a process has) pointed at a loopback
OTLP/HTTP collector, in a process of its own, that is down (nothing listens), slow (holds each request
5 s: the queue fills and spans are dropped) or answering 500; and without it a second time, whose ratio
to the first is the measurement's own noise. Only the run is timed (``execute_prepared``), not the sinks'
bounded close after the last round. Per collector: the median over the rounds of the exporting run's wall
time over the plain run's of the same round (drift in the machine's load cancels out) with a
distribution-free 95 % confidence interval of that median, the fastest over the fastest, and the same
median for the process's CPU time (every thread; the sink's fold of the run's tail included), which other
processes on a shared machine disturb less.

Prints the ratios side by side, the time the listener spends on the run's thread and the sinks' threads
per event, and each sink's spans (submitted, exported, dropped) and events not folded; exits 0; never
asserts on timing. ``--quick``: a few short rounds (seconds; what ``./dev test`` runs; noise only).
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import msgspec
import trio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the sim and collector helpers live with the tests

from tests.engine.harness import FAST, call, finish, turn  # noqa: E402
from tests.helpers import make_settings, serve_script  # noqa: E402
from tests.observability.collector import closed_port  # noqa: E402

from orchestrator.config import Settings  # noqa: E402
from orchestrator.engine.runner import RunRequest, RunServices, execute_prepared, prepare_run  # noqa: E402
from orchestrator.observability.config import ExportConfig  # noqa: E402
from orchestrator.observability.live import attach_trace, run_listener  # noqa: E402
from orchestrator.observability.report import ExportReport  # noqa: E402
from orchestrator.observability.sidecar import SidecarSink  # noqa: E402
from orchestrator.runlog.events import RunEvent  # noqa: E402

GOAL = 1.02
PLAIN = "no export"
#: the same plain run a second time each round: its ratio to the first is the measurement's own noise
AGAIN = "no export 2"
COLLECTORS = ("down", "slow (5 s)", "500")
_events = msgspec.json.Decoder(RunEvent)
#: the confidence of the interval printed around each median ratio
CONFIDENCE = 0.95


def median_interval(values: list[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """A distribution-free confidence interval for the median of ``values``: the order statistics
    ``(k, n + 1 - k)`` with the largest ``k`` whose coverage (binomial, p = 1/2) is at least ``confidence``;
    the whole range when there are too few values for that."""
    ordered = sorted(values)
    n = len(ordered)
    best = 1
    for k in range(1, n // 2 + 1):
        coverage = 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2**n
        if coverage < confidence:
            break
        best = k
    return ordered[best - 1], ordered[n - best]


def script(turns: int) -> dict[str, object]:
    return {"turns": [*[turn("lead", call("context_info")) for _ in range(turns)], turn("lead", finish("done"))]}


def replay_cost(sink: SidecarSink, run_dir: Path, settings: Settings, passes: int = 20) -> tuple[float, int]:
    """The listener's whole cost on the run's thread, per log event: one measured run's lines replayed
    through a fresh listener, ``passes`` times (the runs themselves carry no timing code). The median
    pass's seconds per event, and the events of a pass."""
    lines = [line + b"\n" for line in (run_dir / "log.jsonl").read_bytes().split(b"\n") if line]
    pairs = [(_events.decode(line), line) for line in lines]
    per_pass: list[float] = []
    for _ in range(passes):
        listener = run_listener(sink, run_dir, settings)
        started = time.perf_counter()
        for event, line in pairs:
            listener(event, line)
        per_pass.append((time.perf_counter() - started) / len(pairs))
    return statistics.median(per_pass), len(pairs)


async def timed_run(
    scratch: Path, base_url: str, sink: SidecarSink | None, name: str, last: list[tuple[Path, Settings]]
) -> tuple[float, float, float]:
    """The run's wall time, the process's CPU time over it and the shipping of its tail (every thread),
    and the run's own thread's CPU time (the sim answering it included: it runs on the same trio loop)."""
    workspace = scratch / name
    workspace.mkdir()
    settings = make_settings(workspace, base_url, roles={"lead": ["context_info", "finish"]})
    prepared = prepare_run(settings, workspace, RunRequest(task="go", log_level="full"))
    services = RunServices(timeouts=FAST)
    if sink is not None:  # as attach_trace does, timed
        attach_trace(services, run_listener(sink, prepared.run_dir, settings))
        last[:] = [(prepared.run_dir, settings)]
    started, cpu, own = time.perf_counter(), time.process_time(), time.thread_time()
    outcome = await execute_prepared(settings, workspace, prepared, services)
    elapsed, own = time.perf_counter() - started, time.thread_time() - own
    assert outcome.card.status == "success", outcome.card
    await trio.sleep(0.02)  # every run alike: the sink's thread folds the run's tail (it polls every 200 ms)
    while sink is not None and sink.pending:  # noqa: ASYNC110 (the sink is a thread: no event to wait on)
        await trio.sleep(0.02)
    cpu = time.process_time() - cpu  # the run's whole export work charged to it, not to the next run
    await trio.sleep(0.1)  # untimed: the threads settle before the next run
    return elapsed, cpu, own


@contextmanager
def collector_process(mode: str) -> Iterator[str]:
    """A collector (``tests/observability/collector.py``) in a process of its own: its work is not the
    export's cost to the measured process. Its base URL; it ends when its standard input closes."""
    with subprocess.Popen(
        [sys.executable, "-m", "tests.observability.collector", mode, "5"],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as served:
        assert served.stdin is not None and served.stdout is not None
        try:
            yield served.stdout.readline().strip()
        finally:
            served.stdin.close()
            try:
                served.wait(10)
            except subprocess.TimeoutExpired:
                served.kill()


def open_sinks(stack: ExitStack) -> dict[str, SidecarSink]:
    slow = stack.enter_context(collector_process("slow"))
    failing = stack.enter_context(collector_process("fail"))
    urls = {"down": f"http://127.0.0.1:{closed_port()}", "slow (5 s)": slow, "500": failing}
    # the export as a process has it (its sidecar), with the processor's own defaults (a 5 s schedule,
    # batches of 512), as a process configured by the variables
    return {
        name: SidecarSink(
            ExportConfig(endpoint=f"{urls[name]}/v1/traces", export_timeout_seconds=10, shutdown_timeout_seconds=0.2)
        )
        for name in COLLECTORS
    }


async def bench(rounds: int, turns: int) -> None:
    modes = (PLAIN, AGAIN, *COLLECTORS)
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    cpus: dict[str, list[float]] = {mode: [] for mode in modes}
    owns: dict[str, list[float]] = {mode: [] for mode in modes}
    last: list[tuple[Path, Settings]] = []
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        scratch = Path(tmp)
        sinks = open_sinks(stack)
        for sink in sinks.values():  # the sidecars' start (the SDK's import) is not a run's cost
            await trio.to_thread.run_sync(sink.wait_ready, 60)
        async with serve_script(script(turns)) as sim:
            for index in range(rounds + 1):  # round 0 warms up
                for k in range(len(modes)):
                    mode = modes[(index + k) % len(modes)]
                    await sim.set_script(script(turns))
                    elapsed, cpu, own = await timed_run(scratch, sim.base_url, sinks.get(mode), f"r{index}-{k}", last)
                    if index:
                        times[mode].append(elapsed)
                        cpus[mode].append(cpu)
                        owns[mode].append(own)
        per_event, run_events = replay_cost(sinks["down"], *last[0])
        reports: dict[str, ExportReport] = {}
        for name, sink in sinks.items():
            reports[name] = await trio.to_thread.run_sync(sink.close)
    plain = times[PLAIN]
    print(f"rounds: {rounds}, each runs all five in a rotating order; {turns} turns + {turns} tool calls per run")
    print(f"  {PLAIN:<12} median run {statistics.median(plain) * 1000:8.1f} ms")
    for name in (AGAIN, *COLLECTORS):
        pairs = [e / p for e, p in zip(times[name], plain, strict=True)]
        ratio = statistics.median(pairs)
        low, high = median_interval(pairs)
        fastest = min(times[name]) / min(plain)
        cpu = statistics.median(e / p for e, p in zip(cpus[name], cpus[PLAIN], strict=True))
        own = statistics.median(e / p for e, p in zip(owns[name], owns[PLAIN], strict=True))
        what = "noise floor (the same plain run again)" if name == AGAIN else f"goal <= {GOAL}x"
        print(
            f"  {name:<12} median run {statistics.median(times[name]) * 1000:8.1f} ms   /no-export: "
            f"{ratio:.3f}x [{CONFIDENCE:.0%} CI of the median {low:.3f}-{high:.3f}] ({what}), "
            f"fastest/fastest {fastest:.3f}x, process CPU {cpu:.3f}x, the run's thread's CPU {own:.3f}x"
        )
    exporting = sum(sum(times[name]) for name in COLLECTORS)
    events = run_events * rounds * len(COLLECTORS)
    print(
        f"listener on the run's thread: {per_event * 1e6:.2f} us per log event (a measured run's {run_events} lines "
        f"replayed; each streamed chunk adds a set lookup); listener/run time ratio: "
        f"{per_event * events / exporting:.5f}"
    )
    busy = sum(sink.busy_seconds for sink in sinks.values())
    print(
        f"sinks' writer threads (shipping the runs' positions, idle wakes included): {busy / events * 1e6:.2f} us "
        f"per log event; their CPU/run time ratio: {busy / exporting:.5f}"
    )
    sidecars = sum(sink.sidecar_cpu_seconds - sink.sidecar_start_cpu_seconds for sink in sinks.values())
    print(
        f"the sidecars (their own processes, after their start: reading the logs, decode, fold, SDK, export): "
        f"{sidecars / events * 1e6:.2f} us per log event; their CPU/run time ratio: {sidecars / exporting:.5f}"
    )
    for name, report in reports.items():
        print(
            f"spans, {name:<10}: {report.submitted} submitted, {report.exported} exported, {report.dropped} dropped "
            f"(counted); {report.unfolded} events not folded"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few short rounds (seconds)")
    args = parser.parse_args(argv)
    rounds, turns = (3, 20) if args.quick else (40, 60)
    trio.run(bench, rounds, turns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
