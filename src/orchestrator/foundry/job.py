"""One benchmark run of one candidate: the Dask task, what it is sent and what it sends back.

``execute_job`` runs on a worker. It gets everything it needs in the job (the candidate's Guild files,
the benchmark's starting files without ``eval.json`` or ``sim-solution.json``, the ``eval.json`` bytes,
the deployment file, and with ``--sim-solutions`` the scripted model), so workers share no filesystem
with the driver. The model endpoint is the worker's own: its ``ORCHESTRATOR_API_BASE`` and the other
``ORCHESTRATOR_*`` variables apply. It runs the task with ``inprocess.run_in_process`` (answering
``ask_human`` from ``humanResponses``), validates, condenses the log per role and returns the outcome
with the run folders as a gzipped tar. Both ends speak msgpack (``msgspec``).
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Literal

import msgspec
import trio

from orchestrator.errors import ConfigError
from orchestrator.foundry.evalspec import parse_eval
from orchestrator.foundry.inprocess import run_in_process
from orchestrator.foundry.report import run_tokens
from orchestrator.foundry.trace import RoleTrace, condense
from orchestrator.foundry.validate import validate_workspace
from orchestrator.runlog import read_events
from orchestrator.sim import load_script

__all__ = [
    "RunJob",
    "RunOutcome",
    "decode_outcome",
    "encode_job",
    "execute_job",
    "pack_tree",
    "unpack_tar",
    "unpack_tree",
]

#: characters kept of the validation command's output
OUTPUT_TAIL = 1500

ErrorKind = Literal["run", "crash", "timeout", "invalid_guild", "worker_lost", "config"]


class RunJob(msgspec.Struct, kw_only=True, frozen=True):
    candidate: str
    benchmark: str
    repeat: int
    guild_files: dict[str, bytes]
    bench_files: dict[str, bytes]
    eval_json: bytes
    deployment: bytes
    sim_script: bytes | None = None
    effort: str = "standard"
    run_timeout: float = 1800.0


class RunOutcome(msgspec.Struct, kw_only=True, rename="camel"):
    """How one run went: ``status`` pass / fail / error, and what the reflection model is shown."""

    status: Literal["pass", "fail", "error"]
    reasons: list[str] = []
    error_kind: ErrorKind | None = None
    run_status: str | None = None
    run_id: str | None = None
    exit_code: int | None = None
    output_tail: str = ""
    roles: list[RoleTrace] = []
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    worker: str = ""
    #: the run folders as a gzipped tar (not kept in the evaluation cache: unpacked under runs/)
    archive: bytes = b""

    @property
    def score(self) -> float:
        return 1.0 if self.status == "pass" else 0.0


def pack_tree(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` by its POSIX path relative to ``root``."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def unpack_tree(files: dict[str, bytes], root: Path) -> None:
    """Write ``pack_tree``'s files under ``root`` (refusing any path that leaves it)."""
    base = root.resolve()
    for relative, data in files.items():
        target = (root / relative).resolve()
        if not target.is_relative_to(base):
            raise ValueError(f"{relative}: leaves the target folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _tar(directories: list[Path]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for directory in directories:
            if directory.is_dir():
                tar.add(directory, arcname=directory.name)
    return buffer.getvalue()


def unpack_tar(data: bytes, target: Path) -> None:
    """Unpack a run archive into ``target`` (the ``data`` filter: nothing outside it, no devices)."""
    if not data:
        return
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(target, filter="data")


async def _run(job: RunJob, root: Path) -> RunOutcome:
    guild_dir, workspace, deployment = root / "guild", root / "workspace", root / "deployment.json"
    unpack_tree(job.guild_files, guild_dir)
    workspace.mkdir()
    unpack_tree(job.bench_files, workspace)
    deployment.write_bytes(job.deployment)
    spec = parse_eval(job.eval_json)
    script = load_script(job.sim_script) if job.sim_script is not None else None
    started = time.monotonic()
    record = await run_in_process(
        guild_dir=guild_dir,
        deployment_file=deployment,
        env=dict(os.environ),
        workspace=workspace,
        task=spec.description,
        effort=job.effort,
        human_responses=spec.human_responses,
        script=script,
        run_timeout=job.run_timeout,
        on_phase=lambda _phase: None,
    )
    outcome = RunOutcome(status="error", run_status=record.status, run_id=record.run_id)
    if record.status != "success" or record.problem:
        outcome.error_kind = "timeout" if record.problem and "--run-timeout" in record.problem else "run"
        if record.problem and "crashed" in record.problem:
            outcome.error_kind = "crash"
        summary = f": {record.summary}" if record.summary else ""
        outcome.reasons = [record.problem or f"the run ended {record.status}{summary} (validation skipped)"]
    else:
        verdict = await validate_workspace(spec.validation, workspace)
        outcome.status = "pass" if verdict.passed else "fail"
        outcome.reasons = list(verdict.reasons)
        if verdict.command is not None:
            outcome.exit_code = verdict.command.exit_code
            output = verdict.command.stdout + verdict.command.stderr
            outcome.output_tail = output[-OUTPUT_TAIL:]
    outcome.seconds = round(time.monotonic() - started, 3)
    for run_dir in record.run_dirs:
        outcome.roles.extend(condense(read_events(run_dir / "log.jsonl")))
    outcome.prompt_tokens, outcome.completion_tokens = run_tokens(record.run_dirs)
    outcome.archive = _tar(record.run_dirs)
    return outcome


def encode_job(job: RunJob) -> bytes:
    return msgspec.msgpack.encode(job)


def decode_outcome(data: bytes) -> RunOutcome:
    return msgspec.msgpack.decode(data, type=RunOutcome)


def execute_job(payload: bytes) -> bytes:
    """The Dask task: run the job in a fresh trio loop on this worker thread; the outcome as msgpack.

    A configuration the worker cannot load (its endpoint, the deployment) is an ``error`` outcome of
    kind ``config`` naming the problem, not an exception: the run is scored, the search goes on.
    """
    job = msgspec.msgpack.decode(payload, type=RunJob)
    root = Path(tempfile.mkdtemp(prefix=f"foundry-{job.benchmark}-"))
    try:
        try:
            outcome = trio.run(_run, job, root)
        except* ConfigError as group:
            problems = [p for exc in group.exceptions if isinstance(exc, ConfigError) for p in exc.problems]
            outcome = RunOutcome(status="error", error_kind="config", reasons=["; ".join(problems)])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    outcome.worker = socket.gethostname()
    return msgspec.msgpack.encode(outcome)
