"""The Dask side: a real LocalCluster, task failures scored as errors, cancellation, and a missing Dask."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
from tests.foundry.foundry_fixtures import PHRASE, clean_env, deployment, make_guild, make_suite
from tests.realmodel.llama_server import free_port
from tests.slowness import budget

from orchestrator.foundry import cluster as cluster_module
from orchestrator.foundry.cluster import DASK_MISSING, Cluster, ClusterError, Stopped
from orchestrator.foundry.job import RunOutcome
from orchestrator.foundry.search import FoundryOptions, run_foundry


async def test_a_task_that_fails_on_its_worker_is_an_error_outcome_naming_it() -> None:
    def scenario() -> tuple[int, list[tuple[str, RunOutcome]]]:
        cluster = Cluster.open(workers=2, scheduler=None)
        try:
            done: list[tuple[str, RunOutcome]] = []
            cluster.run([("a", b"not msgpack"), ("b", b"\x00")], lambda name, o: done.append((name, o)))
            return cluster.worker_count, done
        finally:
            cluster.close()

    workers, done = await trio.to_thread.run_sync(scenario)
    assert workers == 2
    assert sorted(name for name, _ in done) == ["a", "b"]
    for _, outcome in done:
        assert outcome.status == "error" and outcome.error_kind == "crash"
        assert outcome.reasons[0].startswith("the task failed on its worker: ")


async def test_after_stop_nothing_more_runs() -> None:
    def scenario() -> None:
        cluster = Cluster.open(workers=1, scheduler=None)
        try:
            cluster.stop()
            assert cluster.stopping
            with pytest.raises(Stopped):
                cluster.run([("a", b"")], lambda name, o: None)
        finally:
            cluster.close()

    await trio.to_thread.run_sync(scenario)


def test_a_lost_worker_becomes_an_error_with_the_reason() -> None:
    from types import SimpleNamespace

    from distributed import KilledWorker

    class Lost:
        def result(self) -> Any:
            raise KilledWorker("foundry-x", SimpleNamespace(address="tcp://127.0.0.1:1234"), 1)

    outcome = Cluster(client=None, local=None, address="x")._outcome(Lost())
    assert outcome.status == "error" and outcome.error_kind == "worker_lost"
    assert "retried once elsewhere" in outcome.reasons[0] and "'foundry-x' on 2 different workers" in outcome.reasons[0]


def test_without_dask_the_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ClusterError) as info:
        cluster_module.Cluster.open(workers=1, scheduler=None)
    assert str(info.value) == DASK_MISSING
    assert "pip install 'orchestrator[cluster]'" in DASK_MISSING


async def _start_cluster(port: int, env: dict[str, str]) -> list[trio.Process]:
    """``dask scheduler`` and two ``dask worker --nthreads 1`` on loopback, as the docs say (without nannies,
    so a killed worker stays dead and every process is one this test started)."""
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
    loopback = ["--host", "127.0.0.1", "--no-dashboard"]
    scheduler = [sys.executable, "-m", "distributed.cli.dask_scheduler", "--port", str(port), *loopback]
    processes = [await trio.lowlevel.open_process(scheduler, **quiet)]
    for name in ("w1", "w2"):
        worker = [sys.executable, "-m", "distributed.cli.dask_worker", f"tcp://127.0.0.1:{port}", "--nthreads", "1"]
        processes.append(await trio.lowlevel.open_process([*worker, "--name", name, "--no-nanny", *loopback], **quiet))
    return processes


def _kill_the_worker_running_a_run(address: str, watching: Callable[[], None]) -> int:
    """Connect, say so (``watching``), wait until a worker processes a Foundry task, then SIGKILL that
    worker process; its pid."""
    import time

    from distributed import Client

    client = Client(address, timeout=budget(60), set_as_default=False)
    try:
        watching()
        deadline = time.monotonic() + budget(90)
        while time.monotonic() < deadline:
            for worker, keys in client.processing().items():
                if any(str(key).startswith("foundry-") for key in keys):
                    pid = client.run(os.getpid, workers=[worker])[worker]
                    os.kill(pid, signal.SIGKILL)
                    return pid
            time.sleep(0.05)
        raise AssertionError("no Foundry task was seen running")
    finally:
        client.close()


@pytest.mark.slow
async def test_an_existing_cluster_runs_the_search_and_retries_a_run_whose_worker_died(tmp_path: Path) -> None:
    port = free_port()
    env = clean_env() | {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1"}
    processes = await _start_cluster(port, env)
    try:
        suite = make_suite(tmp_path, 1, delay_ms=1000)  # a run lasts seconds: the watcher cannot miss it
        guild = make_guild(tmp_path)
        (guild / "prompts" / "orchestrator.md").write_text(f"You are the orchestrator. {PHRASE}\n")
        options = FoundryOptions(
            suite=suite,
            guild_dir=guild,
            deployment_file=deployment(tmp_path),
            env=clean_env(),
            budget=2,  # the seed's evaluation only: the reflection model is never asked
            repeats=2,
            scheduler=f"tcp://127.0.0.1:{port}",
            sim_solutions=True,
            reflection_api_base="http://127.0.0.1:9/v1",
            out=tmp_path / "out",
            connect_seconds=60,
        )
        killed: list[int] = []  # the pid of the worker killed mid-run: one of the two this test started
        watching = trio.Event()

        async def kill_one() -> None:
            def said() -> None:
                trio.from_thread.run_sync(watching.set)

            killed.append(await trio.to_thread.run_sync(_kill_the_worker_running_a_run, options.scheduler, said))

        with trio.fail_after(budget(150)):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(kill_one)
                await watching.wait()  # the search starts once the killer watches the workers
                summary, out = await run_foundry(options)
        assert killed and killed[0] in {p.pid for p in processes[1:]}, "a worker was killed mid-run"
        # the run on the killed worker was retried on a live worker and passed: no error was scored
        assert summary.seed_score.passes == 2 and summary.seed_score.runs == 2, summary.verdict
        assert len(list((out / "cache").glob("*/bench_0/*.json"))) == 2
    finally:
        for process in processes:
            process.kill()
        for process in processes:
            await process.wait()


async def test_the_local_cluster_listens_on_loopback_only() -> None:
    import ipaddress

    import psutil

    def listening() -> list[str]:
        cluster = Cluster.open(workers=2, scheduler=None)
        try:
            assert cluster.address.startswith("inproc://")
            sockets = psutil.Process().net_connections(kind="inet")
            return [s.laddr.ip for s in sockets if s.status == psutil.CONN_LISTEN]
        finally:
            cluster.close()

    addresses = await trio.to_thread.run_sync(listening)
    assert addresses, "the dashboard / metrics servers listen somewhere"
    assert all(ipaddress.ip_address(ip).is_loopback for ip in addresses), addresses
