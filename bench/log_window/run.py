"""Service read-path benchmark. Run: ``.venv/bin/python bench/log_window/run.py`` (see bench/README.md).

(a) A 1,000-event and a 1,000,000-event synthetic run log, side by side under one ``orchestrator serve``
    process (real HTTP on loopback): the one-time index build of the big log, then interleaved medians
    of ``GET /api/runs/:id/log`` (head and tail pages), ``GET /api/runs/:id`` and
    ``GET /api/runs/:id/flow`` on each, printed as 1M/1k ratios, then the cost of the next poll after
    1,000 events are appended (the incremental path).
(b) The latency of a scripted run (sim model and service as processes) with 100 subscribed WebSocket
    clients against none, interleaved.

Prints results and exits 0 (1 only when the bench itself cannot run); never asserts on timing.
``--profile`` runs each serve process under cProfile and prints its hot spots (timings then inflate);
``--events N`` shrinks the big log for a quick look; ``--quick`` (what ``./dev test`` runs) is a
10,000-event log, 2 rounds and one pair: seconds, proving the bench runs and prints its ratio lines.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH), str(BENCH.parent)]  # this bench's modules (log_window.*); tests/ helpers

from log_window.measure import cpu_pressure, pressure_note  # noqa: E402
from log_window.read_path import LARGE_EVENTS, ROUNDS, bench_read_path  # noqa: E402
from log_window.subscribers import RUN_PAIRS, SUBSCRIBERS, bench_subscribers  # noqa: E402

QUICK_EVENTS = 10_000


async def _main(args: argparse.Namespace, workdir: Path) -> None:
    sections: list[tuple[str, Callable[[], Awaitable[None]]]] = [
        (
            f"== (a) read path: 1k vs {args.events:,} events",
            lambda: bench_read_path(workdir, args.events, args.profile, args.rounds),
        ),
        (
            f"== (b) run latency with {SUBSCRIBERS} WebSocket subscribers vs none",
            lambda: bench_subscribers(workdir, args.pairs, args.profile),
        ),
    ]
    for title, section in sections:
        print(title, flush=True)
        pressure, started = cpu_pressure(), time.perf_counter()
        await section()
        print(pressure_note(pressure, time.perf_counter() - started))
        print(flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=LARGE_EVENTS, help="events in the big log (default 1,000,000)")
    parser.add_argument("--pairs", type=int, default=RUN_PAIRS, help="interleaved pairs of paced runs (default 3)")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="run each serve process under cProfile and print where its time went (timings inflated ~2-3x)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="a 10,000-event log, 2 rounds, 1 pair (seconds): proves it runs"
    )
    args = parser.parse_args()
    args.rounds = ROUNDS
    if args.quick:
        args.events, args.pairs, args.rounds = QUICK_EVENTS, 1, 2
        print(f"--quick: the big log has {QUICK_EVENTS:,} events (still labelled 1M below); 2 rounds, 1 pair")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="log-window-bench-") as tmp:
        workdir = Path(tmp)
        try:
            trio.run(_main, args, workdir)
        except Exception as exc:
            print(f"bench failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
    print(f"total bench time: {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
