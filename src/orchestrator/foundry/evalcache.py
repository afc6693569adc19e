"""The durable evaluation cache: one file per finished run, keyed by candidate, benchmark and repeat.

``cache/<candidate id>/<benchmark>/<repeat>.json`` holds the run's outcome (the condensed traces
included, the archive not); ``runs/<candidate id>/<benchmark>/<repeat>/`` holds its run folders
(``meta.json``, ``log.jsonl``). The run folder is written first and the cache file last, atomically
and fsynced, so a driver killed at any instant leaves either a finished entry or none: a resumed
search never runs a finished evaluation again.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec

from orchestrator.foundry.job import RunOutcome, unpack_tar
from orchestrator.fsutil import atomic_write

__all__ = ["EvalCache"]


class EvalCache:
    """Finished runs under ``out`` (read once, then kept in memory)."""

    def __init__(self, out: Path) -> None:
        self.root = out / "cache"
        self.runs = out / "runs"
        self._memory: dict[tuple[str, str, int], RunOutcome] = {}
        #: runs this process added (the rest came from disk)
        self.added = 0

    def _path(self, candidate: str, benchmark: str, repeat: int) -> Path:
        return self.root / candidate / benchmark / f"{repeat}.json"

    def get(self, candidate: str, benchmark: str, repeat: int) -> RunOutcome | None:
        key = (candidate, benchmark, repeat)
        if key in self._memory:
            return self._memory[key]
        path = self._path(*key)
        try:
            outcome = msgspec.json.decode(path.read_bytes(), type=RunOutcome)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            return None  # absent (or a file no finished write left: atomic writes make that impossible)
        self._memory[key] = outcome
        return outcome

    def put(self, candidate: str, benchmark: str, repeat: int, outcome: RunOutcome) -> None:
        run_dir = self.runs / candidate / benchmark / str(repeat)
        if run_dir.exists():
            shutil.rmtree(run_dir)  # a half-unpacked folder from a killed driver
        unpack_tar(outcome.archive, run_dir)
        stored = msgspec.structs.replace(outcome, archive=b"")
        path = self._path(candidate, benchmark, repeat)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, msgspec.json.encode(stored))
        self._memory[(candidate, benchmark, repeat)] = stored
        self.added += 1

    def count(self) -> int:
        """Finished runs on disk."""
        return sum(1 for _ in self.root.glob("*/*/*.json")) if self.root.is_dir() else 0
