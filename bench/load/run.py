"""Service load test. Run: ``just load [--seconds 60] [--clients 200]`` (see bench/README.md).

The sim model and ``orchestrator serve`` run as processes on loopback. A scripted multi-turn run
(lead → helper × N streamed turns → lead) runs once without load, for the reference card; then the
same script runs again while ``--clients`` concurrent clients poll ``GET /api/runs/:id``,
``GET /api/queue``, ``GET /api/runs/:id/flow`` and ``GET /api/runs/:id/log?limit=50`` in a loop for
``--seconds``. Each client is a trio task with its own ``httpx.AsyncClient`` holding one keep-alive
connection (``max_connections=1``), like one browser tab; there is no think time unless ``--interval``.

Prints requests/s, statuses and latency percentiles. Exits 1 on any 5xx, any transport error, a run
that does not finish, or a loaded run whose card (or event-type sequence) differs from the reference.
It lives in ``bench/load/`` so ``just bench`` (``bench/*.py``) does not pick it up.
"""

from __future__ import annotations

import argparse
import json
import ssl
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import msgspec
import trio

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH), str(BENCH.parent)]  # the process helpers of bench/log_window/; tests/

from log_window.children import AUTH, Child, start_child, stop_child  # noqa: E402
from log_window.measure import cpu_pressure, cpu_seconds, pressure_note  # noqa: E402
from tests.engine.harness import call, finish, turn  # noqa: E402
from tests.helpers import write_deployment, write_guild  # noqa: E402

from orchestrator.engine.runfolder import TERMINAL_STATUSES, read_meta, runs_root  # noqa: E402
from orchestrator.runlog import read_events  # noqa: E402

ROLES = {"lead": ["agent", "finish", "context_info"], "helper": ["finish", "context_info"]}
PROSE = "Reading the next module and noting what it imports before changing anything. "
CONTENT_CHARS, CHUNK_CHARS, CHUNK_DELAY_MS = 160, 8, 20  # ~0.4 s of streaming per turn
REFERENCE_SHARE = 1 / 3  # the unloaded run lasts about this share of --seconds
RUN_WAIT_SECONDS = 300  # bound on waiting for a run to end
REQUEST_TIMEOUT = 30.0
ENDPOINTS = ("run view", "queue", "flow", "log")


def script(helper_turns: int) -> dict[str, Any]:
    """The lead delegates once; the helper streams ``helper_turns`` turns, each calling context_info."""
    streamed = {
        "content": (PROSE * (CONTENT_CHARS // len(PROSE) + 1))[:CONTENT_CHARS],
        "chunkChars": CHUNK_CHARS,
        "chunkDelayMs": CHUNK_DELAY_MS,
    }
    turns = [turn("lead", call("agent", role="helper", task="survey the modules"), **streamed)]
    turns += [turn("helper", call("context_info"), **streamed) for _ in range(helper_turns - 1)]
    turns += [
        turn("helper", finish(f"surveyed {helper_turns} modules"), **streamed),
        turn("lead", finish("survey complete", artifacts=["notes.md"]), **streamed),
        {"expect": {"systemContains": "one-line summaries"}, "reusable": True, "content": "A survey run."},
    ]
    return {"onExhausted": "error", "turns": turns}


@dataclass
class Tally:
    """Every client's answers: latency per endpoint, statuses, transport errors."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {e: [] for e in ENDPOINTS})
    first: list[float] = field(default_factory=list)  # each client's first answer (includes its TCP connect)
    statuses: Counter[int] = field(default_factory=Counter)
    by_endpoint: Counter[tuple[str, int]] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)

    @property
    def requests(self) -> int:
        return sum(self.statuses.values()) + sum(self.errors.values())


@dataclass
class RunResult:
    run_id: str
    status: str
    card: Any
    seconds: float
    types: list[str]


async def start_run(client: httpx.AsyncClient, sim: Child, plan: dict[str, Any]) -> str:
    (await client.post(f"{sim.url}/_sim/script", json=plan)).raise_for_status()  # fresh consumption and ids
    await trio.sleep(1.05 - (time.time() % 1.0))  # run ids have one-second resolution
    response = await client.post("/api/runs", json={"task": "Survey the modules and write notes."})
    if response.status_code != 201:
        raise RuntimeError(f"POST /api/runs: HTTP {response.status_code}: {response.text}")
    return str(response.json()["runId"])


async def wait_run(workspace: Path, run_id: str) -> RunResult:
    run_dir = runs_root(workspace) / run_id
    with trio.fail_after(RUN_WAIT_SECONDS):
        while True:
            meta = read_meta(run_dir)
            if meta is not None and meta.status in TERMINAL_STATUSES:
                break
            await trio.sleep(0.05)
    seconds = (
        datetime.fromisoformat(meta.end_time or meta.start_time) - datetime.fromisoformat(meta.start_time)
    ).total_seconds()
    card = msgspec.to_builtins(meta.result)
    types = [e["type"] for e in read_events(run_dir / "log.jsonl")]
    return RunResult(run_id, meta.status, card, seconds, types)


async def poller(base_url: str, run_id: str, deadline: float, interval: float, tally: Tally, start_at: int) -> None:
    """One client: the four polls in turn until ``deadline`` (bounded by a request budget too)."""
    paths = {
        "run view": f"/api/runs/{run_id}",
        "queue": "/api/queue",
        "flow": f"/api/runs/{run_id}/flow",
        "log": f"/api/runs/{run_id}/log?limit=50",
    }
    budget = int((deadline - time.perf_counter()) * 1000) + 1  # at most 1,000 requests/s per client
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    async with httpx.AsyncClient(
        base_url=base_url, timeout=REQUEST_TIMEOUT, limits=limits, verify=_NO_TLS, headers=AUTH
    ) as client:
        for n in range(budget):
            if time.perf_counter() >= deadline:
                break
            name = ENDPOINTS[(start_at + n) % len(ENDPOINTS)]
            started = time.perf_counter()
            try:
                response = await client.get(paths[name])
                await response.aread()
            except httpx.HTTPError as exc:
                tally.errors[f"{name}: {type(exc).__name__}"] += 1
                continue
            if n == 0:
                tally.first.append(time.perf_counter() - started)
            else:
                tally.latencies[name].append(time.perf_counter() - started)
            tally.statuses[response.status_code] += 1
            tally.by_endpoint[(name, response.status_code)] += 1
            if interval:
                await trio.sleep(interval)


#: Plain-HTTP loopback: one shared TLS context, so 200 clients do not each load the CA bundle (~10 ms each).
_NO_TLS = ssl.create_default_context()


def listen_overflows() -> int | None:
    """The kernel's ``TcpExt ListenOverflows`` counter (machine-wide): a connect that found the listen
    backlog full. Its SYN is retried after 1, 3, 7, 15, 31 s, which shows up as a huge first-request time."""
    try:
        lines = [
            line.split() for line in Path("/proc/net/netstat").read_text().splitlines() if line.startswith("TcpExt:")
        ]
        return int(lines[1][lines[0].index("ListenOverflows")])
    except (OSError, IndexError, ValueError):
        return None


def percentiles(values: list[float]) -> str:
    if not values:
        return "no answers"
    cuts = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else [values[0]] * 99
    return (
        f"p50 {cuts[49] * 1e3:7.1f} ms  p90 {cuts[89] * 1e3:7.1f} ms  "
        f"p99 {cuts[98] * 1e3:7.1f} ms  max {max(values) * 1e3:7.1f} ms"
    )


async def load_test(args: argparse.Namespace, workdir: Path) -> list[str]:
    """Runs everything; returns the failures (empty: passed)."""
    failures: list[str] = []
    helper_turns = max(3, round(args.seconds * REFERENCE_SHARE / (CONTENT_CHARS / CHUNK_CHARS * CHUNK_DELAY_MS / 1e3)))
    plan = script(helper_turns)
    script_file = workdir / "script.json"
    script_file.write_text(json.dumps(plan))
    workspace = workdir / "ws"
    workspace.mkdir()
    sim = await start_child("sim", ["sim-model", "--script", str(script_file)], workdir)
    serve: Child | None = None
    try:
        guild = write_guild(workdir / "guild", ROLES)
        deployment = write_deployment(workdir / "deployment.json", f"{sim.url}/v1")
        serve_args = ["serve", "--workspace", str(workspace), "--guild", str(guild), "--deployment", str(deployment)]
        serve = await start_child("serve", serve_args, workdir, profile=args.profile)
        async with httpx.AsyncClient(base_url=serve.url, timeout=REQUEST_TIMEOUT, headers=AUTH) as control:
            print(f"script: lead → helper × {helper_turns} streamed turns → lead ({len(plan['turns']) - 1} turns)")
            reference = await wait_run(workspace, await start_run(control, sim, plan))
            print(f"reference run (no load): {reference.status} in {reference.seconds:.1f} s, card {reference.card}")

            run_id = await start_run(control, sim, plan)
            tally = Tally()
            cpu_before, clients_before = cpu_seconds(serve.process.pid), time.process_time()
            overflows = listen_overflows()
            pressure, started = cpu_pressure(), time.perf_counter()
            deadline = started + args.seconds
            async with trio.open_nursery() as nursery:
                for i in range(args.clients):
                    nursery.start_soon(poller, serve.url, run_id, deadline, args.interval, tally, i)
            elapsed = time.perf_counter() - started
            machine = pressure_note(pressure, elapsed).replace("this section", "the load")
            overflowed = listen_overflows()
            serve_cpu, clients_cpu = cpu_seconds(serve.process.pid) - cpu_before, time.process_time() - clients_before
            run_done = read_meta(runs_root(workspace) / run_id)
            still_running = run_done is None or run_done.status not in TERMINAL_STATUSES
            loaded = await wait_run(workspace, run_id)
        print(
            f"loaded run: {loaded.status} in {loaded.seconds:.1f} s "
            f"({'still running' if still_running else 'finished'} when the load stopped), card {loaded.card}"
        )
        slowdown = loaded.seconds / reference.seconds if reference.seconds > 0 else float("nan")
        print(f"run time under load / without: {slowdown:.2f}x  [the same scripted run, before and during the load]")
        print(
            f"{args.clients} clients x {args.seconds:g} s: {tally.requests:,} requests, "
            f"{tally.requests / elapsed:,.0f} requests/s over {elapsed:.1f} s"
        )
        print(
            f"CPU: serve {serve_cpu:.1f} s ({serve_cpu / elapsed:.0%} of one core), "
            f"the clients (this process) {clients_cpu:.1f} s ({clients_cpu / elapsed:.0%})"
        )
        print(machine)
        print("statuses: " + ", ".join(f"{status}: {n:,}" for status, n in sorted(tally.statuses.items())))
        if tally.errors:
            print("transport errors: " + ", ".join(f"{kind}: {n:,}" for kind, n in sorted(tally.errors.items())))
        everything = [v for values in tally.latencies.values() for v in values]
        if overflows is not None and overflowed is not None:
            print(f"listen-backlog overflows during the load (kernel, machine-wide): {overflowed - overflows:,}")
        print(f"first answer per client (includes the TCP connect): {percentiles(tally.first)}")
        print(f"latency, all:      {percentiles(everything)}")
        for name in ENDPOINTS:
            print(f"latency, {name + ':':<9} {percentiles(tally.latencies[name])}  ({len(tally.latencies[name]):,})")

        server_errors = sum(n for status, n in tally.statuses.items() if status >= 500)
        if server_errors:
            failures.append(f"{server_errors} responses were 5xx")
        if tally.errors:
            failures.append(f"{sum(tally.errors.values())} requests failed in transport")
        other = {k: n for k, n in tally.by_endpoint.items() if k[1] != 200}
        if other:
            failures.append(f"non-200 answers: {other}")
        if tally.requests == 0:
            failures.append("no request was answered")
        if reference.status != "success":
            failures.append(f"the reference run ended {reference.status}")
        if loaded.card != reference.card or loaded.status != reference.status:
            failures.append(f"the loaded run's card {loaded.card} differs from the reference {reference.card}")
        if loaded.types != reference.types:
            failures.append("the loaded run's event-type sequence differs from the reference")
    finally:
        if serve is not None:
            await stop_child(serve)
        await stop_child(sim)
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60, help="how long the clients poll (default 60)")
    parser.add_argument("--clients", type=int, default=200, help="concurrent polling clients (default 200)")
    parser.add_argument("--interval", type=float, default=0, help="pause between a client's requests (default 0)")
    parser.add_argument("--profile", action="store_true", help="run serve under cProfile and print its hot spots")
    parser.add_argument("--quick", action="store_true", help="3 s with 20 clients: proves the test runs (./dev test)")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.clients = 3.0, 20
    if args.seconds <= 0 or args.clients <= 0 or args.interval < 0:
        parser.error("--seconds and --clients must be positive, --interval not negative")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="load-test-") as tmp:
        try:
            failures = trio.run(load_test, args, Path(tmp))
        except Exception as exc:
            print(f"load test failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
    print(f"total time: {time.perf_counter() - started:.1f} s")
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    print("load test: " + ("FAILED" if failures else "passed (zero 5xx, same card as without load)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
