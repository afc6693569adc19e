"""Section (a) of the read-path benchmark: a 1,000-event and a big synthetic run log side by side under
one ``orchestrator serve`` process; the index build, interleaved medians of the log window (head and
tail pages), the run view and the flow answer on each, printed as 1M/1k ratios, then the next poll
after 1,000 appended events.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import msgspec
import trio
from tests.helpers import write_deployment, write_guild

from log_window.children import AUTH, start_child, stop_child
from log_window.measure import cpu_seconds, ms, timed_get
from log_window.synthetic import set_status, write_synthetic_run
from orchestrator.engine.runfolder import runs_root

SMALL_EVENTS = 1_000
LARGE_EVENTS = 1_000_000
APPEND_EVENTS = 1_000
SMALL_ID, LARGE_ID = "run-20260101-000000", "run-20260101-000001"
PAGE = 50
ROUNDS = 9  # interleaved rounds of the cheap endpoints
FLOW_ROUNDS = ROUNDS  # the flow answer is windowed (bounded), so it gets as many rounds as the rest
APPEND_ROUNDS = 3
UNREACHABLE_MODEL = "http://127.0.0.1:9/v1"  # the probe fails at once; serve boots on the configured name/window


class _FlowOperations(msgspec.Struct):
    operations: list[msgspec.Raw]


_flow_decoder = msgspec.json.Decoder(_FlowOperations)


async def build_index_watched(client: httpx.AsyncClient, url: str) -> tuple[float, float, int]:
    """The first request of a run (it builds the index) while another task polls ``/api/queue`` every
    50 ms: (build seconds, longest queue answer during it, queue answers during it)."""
    longest, answered = 0.0, 0
    asked = 0.0  # when the watcher's in-flight request was sent
    async with trio.open_nursery() as nursery:

        async def watch() -> None:
            nonlocal longest, answered, asked
            async with httpx.AsyncClient(base_url=str(client.base_url), timeout=600, headers=AUTH) as other:
                while True:
                    asked = time.perf_counter()
                    elapsed, _ = await timed_get(other, "/api/queue")
                    longest, answered = max(longest, elapsed), answered + 1
                    await trio.sleep(0.05)

        nursery.start_soon(watch)
        await trio.sleep(0.3)
        build, _ = await timed_get(client, url)
        await trio.sleep(0.1)  # the watcher's request queued behind the build is answered now
        nursery.cancel_scope.cancel()
    return build, max(longest, time.perf_counter() - asked if answered else 0.0), answered


async def bench_read_path(workdir: Path, large: int, profile: bool, rounds: int = ROUNDS) -> None:
    workspace = workdir / "ws-read"
    workspace.mkdir()
    started = time.perf_counter()
    logs = {
        "1k": write_synthetic_run(workspace, SMALL_ID, SMALL_EVENTS),
        "1M": write_synthetic_run(workspace, LARGE_ID, large),
    }
    ids = {"1k": SMALL_ID, "1M": LARGE_ID}
    size = logs["1M"].path.stat().st_size
    print(
        f"synthetic logs: {logs['1k'].events:,} and {logs['1M'].events:,} events "
        f"({size / 1e6:.0f} MB) written in {time.perf_counter() - started:.1f} s"
    )
    guild = write_guild(
        workdir / "read-guild",
        {"orchestrator": ["agent", "finish"], "planner": ["agent", "finish"], "worker": ["run_shell", "finish"]},
    )
    deployment = write_deployment(workdir / "read-deployment.json", UNREACHABLE_MODEL)
    args = ["serve", "--workspace", str(workspace), "--guild", str(guild), "--deployment", str(deployment)]
    serve = await start_child("serve-read", args, workdir, profile=profile)
    try:
        for run_id in ids.values():  # live runs: meta running (written after the startup reconciliation)
            set_status(runs_root(workspace) / run_id, "running")
        async with httpx.AsyncClient(base_url=serve.url, timeout=600, headers=AUTH) as client:
            warm_small, _ = await timed_get(client, f"/api/runs/{SMALL_ID}")
            cpu_before = cpu_seconds(serve.process.pid)
            build, blocked, answered = await build_index_watched(client, f"/api/runs/{LARGE_ID}")
            build_cpu = cpu_seconds(serve.process.pid) - cpu_before
            print(
                f"first request (index build): 1k {ms(warm_small)}, 1M {build:.2f} s "
                f"(one-time; serve CPU {build_cpu:.1f} s, {build_cpu / logs['1M'].events * 1e6:.0f} us per event)"
            )
            print(
                f"  while the 1M index was built, a concurrent GET /api/queue waited up to {blocked:.2f} s "
                f"({answered} answers): the build runs in a worker thread, so this is its GIL share"
            )
            totals = {
                k: (await timed_get(client, f"/api/runs/{v}/log?limit=1"))[1].json()["total"] for k, v in ids.items()
            }

            endpoints: dict[str, Callable[[str], str]] = {
                "log head": lambda k: f"/api/runs/{ids[k]}/log?offset=0&limit={PAGE}",
                "log tail": lambda k: f"/api/runs/{ids[k]}/log?offset={totals[k] - PAGE}&limit={PAGE}",
                "run view": lambda k: f"/api/runs/{ids[k]}",
                "flow": lambda k: f"/api/runs/{ids[k]}/flow",
            }
            times: dict[tuple[str, str], list[float]] = {(e, k): [] for e in endpoints for k in ids}
            sizes: dict[tuple[str, str], int] = {}
            flow_ops: dict[str, int] = {}
            flow_cpu: list[float] = []
            for round_no in range(rounds):
                for name, url_for in endpoints.items():
                    if name == "flow" and round_no >= min(FLOW_ROUNDS, rounds):
                        continue
                    order = ["1k", "1M"] if round_no % 2 == 0 else ["1M", "1k"]
                    for key in order:
                        cpu_before = cpu_seconds(serve.process.pid)
                        elapsed, response = await timed_get(client, url_for(key))
                        if name == "flow" and key == "1M":
                            flow_cpu.append(cpu_seconds(serve.process.pid) - cpu_before)
                        times[(name, key)].append(elapsed)
                        sizes[(name, key)] = len(response.content)
                        if name == "flow":
                            flow_ops[key] = len(_flow_decoder.decode(response.content).operations)

            print(
                f"medians over {rounds} interleaved rounds ({min(FLOW_ROUNDS, rounds)} for flow), "
                "client-observed, loopback:"
            )
            ratios: dict[str, float] = {}
            for name in endpoints:
                small, big = statistics.median(times[(name, "1k")]), statistics.median(times[(name, "1M")])
                ratios[name] = big / small
                print(
                    f"  {name:<9} 1k {ms(small)} ({sizes[(name, '1k')]:>11,} B)   "
                    f"1M {ms(big)} ({sizes[(name, '1M')]:>11,} B)   {ratios[name]:8.2f}x"
                )
            print(
                f"  flow operations: 1k {flow_ops['1k']:,}, 1M {flow_ops['1M']:,}; "
                f"serve CPU per 1M flow answer {statistics.median(flow_cpu):.2f} s (the rest is the client's read)"
            )
            log_ratio = max(ratios["log head"], ratios["log tail"])
            print(f"log window 1M/1k: {log_ratio:.2f}x (goal <= 2x)  [the worse of head and tail pages]")
            print(f"run view 1M/1k: {ratios['run view']:.2f}x (goal <= 2x)")
            print(f"flow 1M/1k: {ratios['flow']:.2f}x (goal <= 2x)")

            # the incremental path: append to both logs, the next poll folds only the new events
            steady = {k: statistics.median(times[("run view", k)]) for k in ids}
            polls: dict[str, list[float]] = {k: [] for k in ids}
            for round_no in range(min(APPEND_ROUNDS, rounds)):
                order = ["1k", "1M"] if round_no % 2 == 0 else ["1M", "1k"]
                for key in order:
                    logs[key].append_turns(APPEND_EVENTS)
                    elapsed, _ = await timed_get(client, f"/api/runs/{ids[key]}")
                    polls[key].append(elapsed)
            print(
                f"next run-view poll after +{APPEND_EVENTS:,} events (median of {min(APPEND_ROUNDS, rounds)}): "
                f"1k {ms(statistics.median(polls['1k']))}, 1M {ms(statistics.median(polls['1M']))} "
                f"(steady polls: 1k {ms(steady['1k'])}, 1M {ms(steady['1M'])})"
            )
            incremental = {k: statistics.median(polls[k]) - steady[k] for k in ids}
            poll_ratio = statistics.median(polls["1M"]) / statistics.median(polls["1k"])
            print(
                f"  incremental cost of {APPEND_EVENTS:,} new events: 1k {ms(incremental['1k'])}, "
                f"1M {ms(incremental['1M'])}; 1M/1k next-poll ratio {poll_ratio:.2f}x"
            )
    finally:
        await stop_child(serve)
