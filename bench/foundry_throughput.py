"""Foundry throughput: benchmark runs per second with 2 Dask workers against 1. Run:
``.venv/bin/python bench/foundry_throughput.py [--quick]`` (see bench/README.md).

A sim suite (``tests/foundry/foundry_fixtures``) whose scripted model waits before every answer, as a
model server does, is evaluated once on the seed Guild (``--budget`` = one seed evaluation, so the
reflection model is never asked) by ``run_foundry`` with a LocalCluster of 1 worker, then of 2. Each
run is two model turns, a shell command and the validation. Prints both wall times and the ratio; exits
0; never asserts on timing. ``--quick``: 2 benchmarks × 2 repeats, 150 ms per turn (seconds).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import trio  # noqa: E402
from tests.foundry.foundry_fixtures import PHRASE, clean_env, deployment, make_guild, make_suite  # noqa: E402

from orchestrator.foundry.search import FoundryOptions, run_foundry  # noqa: E402


async def timed(root: Path, suite: Path, guild: Path, workers: int, repeats: int) -> float:
    options = FoundryOptions(
        suite=suite,
        guild_dir=guild,
        deployment_file=deployment(root),
        env=clean_env(),
        budget=len(list(suite.iterdir())) * repeats,
        repeats=repeats,
        workers=workers,
        sim_solutions=True,
        reflection_api_base="http://127.0.0.1:9/v1",  # never asked: the budget is the seed's evaluation
        out=root / f"out-{workers}",
    )
    started = time.monotonic()
    summary, _ = await run_foundry(options)
    elapsed = time.monotonic() - started
    assert summary.seed_score.mean == 1.0, summary.verdict  # every run really solved its benchmark
    return elapsed


async def main_async(benchmarks: int, repeats: int, delay_ms: int) -> None:
    with tempfile.TemporaryDirectory(prefix="foundry-bench-") as tmp:
        root = Path(tmp)
        suite = make_suite(root, benchmarks, delay_ms=delay_ms)
        guild = make_guild(root)
        (guild / "prompts" / "orchestrator.md").write_text(f"You are the orchestrator. {PHRASE}\n")
        runs = benchmarks * repeats
        one = await timed(root, suite, guild, 1, repeats)
        two = await timed(root, suite, guild, 2, repeats)
    print(f"{runs} runs, {delay_ms} ms per model turn, 2 turns per run")
    print(f"1 worker : {one:6.2f} s  ({runs / one:.2f} runs/s)")
    print(f"2 workers: {two:6.2f} s  ({runs / two:.2f} runs/s)")
    print(f"throughput 2 workers / 1 worker: {one / two:.2f}x (ideal 2.00x)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 benchmarks × 2 repeats, 150 ms per turn")
    parser.add_argument("--benchmarks", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--delay-ms", type=int, default=1000)
    args = parser.parse_args()
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    if args.quick:
        trio.run(main_async, 2, 2, 150)
    else:
        trio.run(main_async, args.benchmarks, args.repeats, args.delay_ms)
    return 0


if __name__ == "__main__":
    sys.exit(main())
