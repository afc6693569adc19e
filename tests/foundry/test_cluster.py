"""The Dask side: a real LocalCluster, task failures scored as errors, cancellation, and a missing Dask."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import trio

from orchestrator.foundry import cluster as cluster_module
from orchestrator.foundry.cluster import DASK_MISSING, Cluster, ClusterError, Stopped
from orchestrator.foundry.job import RunOutcome


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
