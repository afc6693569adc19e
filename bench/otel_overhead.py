"""Trace-export overhead. Run: ``.venv/bin/python bench/otel_overhead.py [--quick]`` (see bench/README.md).

The real engine runs a scripted role against the in-process sim model: every turn one model call and one
cheap tool call (``context_info``, no subprocess, so the export's share is as large as it gets). The same
run, alternating, without the export and with the live export (``observability.live``) pointed at a
loopback OTLP/HTTP collector that holds every request 5 s before answering (the worst collector that
still answers: the queue fills and spans are dropped). Only the run is timed (``execute_prepared``), not
the sink's bounded close after it. The ratio is the median, over the rounds, of each exporting run over the
plain run right after it.

Prints the ratio side by side and the spans dropped; exits 0; never asserts on timing. ``--quick``: a few
short rounds (seconds; what ``./dev test`` runs).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the sim and collector helpers live with the tests

from tests.engine.harness import FAST, call, finish, turn  # noqa: E402
from tests.helpers import make_settings, serve_script  # noqa: E402
from tests.observability.collector import collector  # noqa: E402

from orchestrator.engine.run import StreamDelta  # noqa: E402
from orchestrator.engine.runner import RunRequest, RunServices, execute_prepared, prepare_run  # noqa: E402
from orchestrator.observability.config import ExportConfig  # noqa: E402
from orchestrator.observability.live import TraceListener, run_listener  # noqa: E402
from orchestrator.observability.sink import SpanSink  # noqa: E402
from orchestrator.runlog.events import RunEvent  # noqa: E402

GOAL = 1.02


def script(turns: int) -> dict[str, object]:
    return {"turns": [*[turn("lead", call("context_info")) for _ in range(turns)], turn("lead", finish("done"))]}


class Timed:
    """The live listener, with the time spent inside it summed (its whole cost to the run's thread): every
    log event, and every streamed chunk it watches for the time to first chunk."""

    def __init__(self, listener: TraceListener) -> None:
        self.listener = listener
        self.seconds = 0.0
        self.events = 0

    def __call__(self, event: RunEvent) -> None:
        started = time.perf_counter()
        self.listener(event)
        self.seconds += time.perf_counter() - started
        self.events += 1

    def delta(self, delta: StreamDelta) -> None:
        started = time.perf_counter()
        self.listener.delta(delta)
        self.seconds += time.perf_counter() - started


async def timed_run(scratch: Path, base_url: str, sink: SpanSink | None, index: int, spent: list[Timed]) -> float:
    workspace = scratch / f"w{index}"
    workspace.mkdir()
    settings = make_settings(workspace, base_url, roles={"lead": ["context_info", "finish"]})
    prepared = prepare_run(settings, workspace, RunRequest(task="go", log_level="full"))
    services = RunServices(timeouts=FAST)
    if sink is not None:  # as attach_trace does, timed
        spent.append(Timed(run_listener(sink, prepared.run_dir, settings)))
        services.log_listeners.append(spent[-1])
        services.on_delta = spent[-1].delta
    started = time.perf_counter()
    outcome = await execute_prepared(settings, workspace, prepared, services)
    elapsed = time.perf_counter() - started
    assert outcome.card.status == "success", outcome.card
    return elapsed


async def bench(rounds: int, turns: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, collector("slow", hold_seconds=5.0) as slow:
        scratch = Path(tmp)
        config = ExportConfig(endpoint=f"{slow.url}/v1/traces", export_timeout_seconds=10, shutdown_timeout_seconds=0.2)
        sink = SpanSink(config, schedule_delay_millis=50)
        plain: list[float] = []
        exporting: list[float] = []
        spent: list[Timed] = []
        async with serve_script(script(turns)) as sim:
            for index in range(rounds * 2 + 1):
                await sim.set_script(script(turns))
                with_export = index % 2 == 1
                elapsed = await timed_run(scratch, sim.base_url, sink if with_export else None, index, spent)
                if index:  # the first run warms up
                    (exporting if with_export else plain).append(elapsed)
        report = await trio.to_thread.run_sync(sink.close)
    no_export, export = statistics.median(plain), statistics.median(exporting)
    # each exporting run against the plain run right after it: drift in the machine's load cancels out
    ratio = statistics.median(e / p for e, p in zip(exporting, plain, strict=True))
    print(f"runs: {rounds} of each, {turns} turns + {turns} tool calls per run; collector holds each request 5 s")
    print(f"  no export             median run {no_export * 1000:8.1f} ms")
    print(f"  export, slow collector median run {export * 1000:8.1f} ms")
    print(f"export/no-export run wall time (median of adjacent pairs): {ratio:.3f}x (goal <= {GOAL}x)")
    events = sum(t.events for t in spent)
    listener_seconds = sum(t.seconds for t in spent)
    print(
        f"listener (fold + enqueue): {listener_seconds / events * 1e6:.1f} us per log event (chunks included); "
        f"listener/run time ratio: {listener_seconds / sum(exporting):.4f}"
    )
    print(f"spans: {report.submitted} submitted, {report.exported} exported, {report.dropped} dropped (counted)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few short rounds (seconds)")
    args = parser.parse_args(argv)
    rounds, turns = (3, 20) if args.quick else (9, 60)
    trio.run(bench, rounds, turns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
