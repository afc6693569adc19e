"""The run folder ``<workspace>/.orchestration/runs/<run_id>/``: run ids, ``meta.json``, tolerant reads."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import msgspec

from orchestrator.conversation import CardError, ResultCard
from orchestrator.fsutil import atomic_write
from orchestrator.schema import Base

__all__ = [
    "RUN_ID_PATTERN",
    "TERMINAL_STATUSES",
    "RunIdCollision",
    "RunMeta",
    "create_run_dir",
    "new_run_id",
    "read_meta",
    "runs_root",
    "write_meta",
]

RUN_ID_PATTERN = re.compile(r"^run-\d{8}-\d{6}$")
#: A run with one of these statuses is over (``cancelled``: the operator stopped it).
TERMINAL_STATUSES = frozenset({"success", "error", "needs_clarification", "interrupted", "cancelled"})


class RunMeta(Base):
    """``meta.json``: what the run is and how it ended. Rewritten atomically at start and at the end."""

    run_id: str
    task: str
    status: str
    effort: str
    log_level: str
    guild_path: str
    start_time: str
    end_time: str | None = None
    result: ResultCard | None = None
    error: CardError | None = None
    continues_from: str | None = None


class RunIdCollision(Exception):
    """The generated run id already names a run directory (ids have one-second resolution)."""


_meta_decoder = msgspec.json.Decoder(RunMeta)
_encoder = msgspec.json.Encoder()


def runs_root(workspace: Path) -> Path:
    return workspace / ".orchestration" / "runs"


def new_run_id(now: datetime) -> str:
    return now.strftime("run-%Y%m%d-%H%M%S")


def create_run_dir(workspace: Path, run_id: str) -> Path:
    """Create the run's folder; raises ``RunIdCollision`` when it exists already (never shares one)."""
    root = runs_root(workspace)
    root.mkdir(parents=True, exist_ok=True)
    path = root / run_id
    try:
        path.mkdir()
    except FileExistsError:
        raise RunIdCollision(run_id) from None
    return path


def write_meta(run_dir: Path, meta: RunMeta) -> None:
    """Replace ``meta.json`` atomically; temp files a killed writer left behind are removed."""
    atomic_write(run_dir / "meta.json", _encoder.encode(meta))
    for stray in run_dir.glob("meta.json.*.tmp"):
        stray.unlink(missing_ok=True)


def read_meta(run_dir: Path) -> RunMeta | None:
    """The run's meta, or ``None`` when missing or unreadable (a torn or foreign file is not fatal)."""
    try:
        return _meta_decoder.decode((run_dir / "meta.json").read_bytes())
    except (OSError, msgspec.DecodeError, RecursionError):
        return None
