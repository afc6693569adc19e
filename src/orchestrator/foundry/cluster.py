"""The Dask side of the Foundry: where the benchmark runs happen.

Every benchmark run of every candidate is one Dask task (``job.execute_job``). ``--workers N`` starts a
``LocalCluster`` of N single-thread workers in this process (each run is a trio loop on its worker's
thread, mostly waiting on the model); ``--scheduler ADDR`` connects to an existing cluster, typically
one ``dask worker --nthreads 1`` per model server. The local cluster talks in-process and its HTTP
servers listen on loopback only (a Dask scheduler runs whatever code it is sent). A task whose worker is
lost is retried on another worker once (``retries=1``, and ``allowed-failures`` 1 on the local
scheduler); after that the run is an ``error`` of kind ``worker_lost`` with Dask's reason.

Dask's client runs its own event loop in a thread of its own. Everything here is synchronous and is
called from a worker thread of the driver (``trio.to_thread``), never from the trio loop itself.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from concurrent.futures import CancelledError
from typing import Any

from orchestrator.foundry.job import RunOutcome, decode_outcome, execute_job

__all__ = ["DASK_MISSING", "Cluster", "ClusterError", "Stopped"]

DASK_MISSING = (
    "the Foundry runs its benchmark runs on Dask, which is not installed: "
    "pip install 'orchestrator[cluster]' (or: pip install 'dask[distributed]==2026.8.0')"
)
#: how long to wait for an existing scheduler to answer, and for its first worker
CONNECT_SECONDS = 10.0


class ClusterError(Exception):
    """The cluster cannot be used (Dask missing, scheduler unreachable, no worker)."""


class Stopped(Exception):
    """The runs were cancelled (Ctrl-C): what finished is in the cache, the rest is not."""


class Cluster:
    """A Dask client (and the local cluster it owns, if any); use from a thread, then ``close``."""

    def __init__(self, client: Any, local: Any | None, address: str) -> None:
        self._client = client
        self._local = local
        self.address = address
        self._pending: set[Any] = set()
        self._stopping = False

    @classmethod
    def open(cls, *, workers: int, scheduler: str | None, connect_seconds: float = CONNECT_SECONDS) -> Cluster:
        """Start a local cluster of ``workers`` workers, or connect to ``scheduler`` (``ClusterError``)."""
        try:
            import dask
            from distributed import Client, LocalCluster
        except ImportError:
            raise ClusterError(DASK_MISSING) from None
        if scheduler is not None:
            try:
                client = Client(scheduler, timeout=connect_seconds, set_as_default=False)
            except (OSError, TimeoutError, ValueError) as exc:
                raise ClusterError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
            try:
                client.wait_for_workers(1, timeout=connect_seconds)
            except (OSError, TimeoutError) as exc:
                client.close()
                raise ClusterError(f"the Dask scheduler at {scheduler} has no worker: {exc}") from None
            return cls(client, None, scheduler)
        with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
            local = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=False,  # in-process comms: no scheduler port at all
                # the scheduler's and the workers' HTTP servers (dashboard, metrics) stay on loopback: by
                # default they listen on every interface
                dashboard_address="127.0.0.1:0",
                worker_dashboard_address="127.0.0.1:0",
                silence_logs=logging.ERROR,
            )
        client = Client(local, set_as_default=False)
        return cls(client, local, local.scheduler_address)

    @property
    def stopping(self) -> bool:
        return self._stopping

    @property
    def worker_count(self) -> int:
        return len(self._client.scheduler_info(n_workers=-1).get("workers", {}))

    def run(self, jobs: list[tuple[str, bytes]], on_done: Callable[[str, RunOutcome], None]) -> None:
        """Submit every ``(name, job)``; call ``on_done(name, outcome)`` as each finishes (any order).

        Raises ``Stopped`` once ``stop`` was called (the remaining tasks are cancelled).
        """
        from distributed import as_completed

        if self._stopping:
            raise Stopped
        names: dict[Any, str] = {}
        for name, payload in jobs:
            key = f"foundry-{name}-{uuid.uuid4().hex[:8]}"
            future = self._client.submit(execute_job, payload, key=key, pure=False, retries=1)
            names[future] = name
            self._pending.add(future)
        try:
            for future in as_completed(list(names), loop=self._client.loop):
                self._pending.discard(future)
                if self._stopping:
                    raise Stopped
                on_done(names[future], self._outcome(future))
        finally:
            leftover = [f for f in names if f in self._pending]
            if leftover:
                self._client.cancel(leftover)
                self._pending.difference_update(leftover)

    def _outcome(self, future: Any) -> RunOutcome:
        from distributed import KilledWorker

        try:
            return decode_outcome(future.result())
        except CancelledError:
            raise Stopped from None
        except KilledWorker as exc:
            reason = f"the worker running it was lost twice (retried once elsewhere): {exc}"
            return RunOutcome(status="error", error_kind="worker_lost", reasons=[reason])
        except Exception as exc:
            reason = f"the task failed on its worker: {type(exc).__name__}: {exc}"
            return RunOutcome(status="error", error_kind="crash", reasons=[reason])

    def stop(self) -> None:
        """Cancel every pending task (safe from any thread); ``run`` then raises ``Stopped``."""
        self._stopping = True
        pending = list(self._pending)
        if pending:
            self._client.cancel(pending)

    def close(self) -> None:
        self._client.close()
        if self._local is not None:
            self._local.close()
