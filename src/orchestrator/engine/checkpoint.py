"""Crash-consistent checkpoints whose per-turn cost is proportional to what the turn added.

On disk, in the run folder:

- ``state.json`` — a snapshot: ``{"version", "seq", "state": RunState}``, replaced atomically.
- ``journal.jsonl`` — append-only records after the snapshot, one per safe point. A line is
  ``<crc32 as 8 hex digits> <json>\\n``; the JSON is ``{"seq", "run", "frames": [FrameDelta]}``: the
  run-level scalars and, per live frame (root first), its header (every field but the history) plus
  only the history messages appended since the frame's previous record (``base``/``tail``), or the
  whole history when something rewrote it (compaction, ``edit_context``).

Recovery = the snapshot + every journal record with ``seq`` above the snapshot's, in order, up to the
first line that is torn or fails its checksum (the safe point it described is replayed). Compaction =
write a new snapshot (temp file, fsync, rename, fsync dir), then truncate the journal; a crash between
any two steps still recovers, because records at or below the snapshot's ``seq`` are ignored.

A new snapshot is taken when the journal has grown past ``COMPACT_FACTOR`` × the last snapshot's size
(and at least ``MIN_JOURNAL_BYTES``), so total bytes written stay within a small constant of the final
state size, and a turn's write cost does not grow with the run.
"""

from __future__ import annotations

import os
import re
import time
import zlib
from pathlib import Path

import msgspec

from orchestrator.conversation import Message
from orchestrator.engine.state import RoleFrame, RunState
from orchestrator.fsutil import atomic_write, fsync_dir
from orchestrator.schema import Base

__all__ = [
    "CHECKPOINT_FILES",
    "CheckpointError",
    "Checkpointer",
    "delete_checkpoint",
    "load_checkpoint",
]

SNAPSHOT = "state.json"
JOURNAL = "journal.jsonl"
CHECKPOINT_FILES = (SNAPSHOT, JOURNAL)
VERSION = 1
COMPACT_FACTOR = 4
MIN_JOURNAL_BYTES = 256 * 1024


class Snapshot(Base):
    version: int
    seq: int
    state: RunState


class FrameDelta(Base):
    """One live frame in a journal record. ``header`` (every field but the history) is omitted when it
    is unchanged since the frame's previous record — a suspended parent costs nothing per child turn."""

    id: str
    base: int
    tail: list[Message]
    header: RoleFrame | None = None


class JournalRecord(Base):
    seq: int
    run: RunState
    frames: list[FrameDelta]


class CheckpointError(Exception):
    """No usable checkpoint: missing, unreadable, or not a checkpoint this version understands."""


_encoder = msgspec.json.Encoder()
_CRC = re.compile(rb"[0-9a-f]{8}")
_snapshot_decoder = msgspec.json.Decoder(Snapshot)
_record_decoder = msgspec.json.Decoder(JournalRecord)


def _fault_pause() -> float:
    """Fault injection for the crash harness: seconds to pause half-way through each write."""
    value = os.environ.get("ORCHESTRATOR_FAULT_CHECKPOINT_PAUSE_MS", "")
    return float(value) / 1000 if value.isdigit() else 0.0


class Checkpointer:
    """Writes one run's checkpoints. Synchronous by design: a checkpoint is never half-applied by a
    cancellation, because no await happens inside it.

    Raises ``OSError`` when the disk refuses a write; the caller decides whether the run goes on.
    """

    def __init__(self, run_dir: Path, *, durable: bool = True) -> None:
        self.run_dir = run_dir
        self.durable = durable
        self.seq = 0
        self.snapshot_bytes = 0
        self.journal_bytes = 0
        self.bytes_written = 0
        self._persisted: dict[str, tuple[int, int]] = {}  # instance id -> (history epoch, length)
        self._headers: dict[str, bytes] = {}  # instance id -> the header bytes last written
        self._journal_fd = -1
        self._pause = _fault_pause()

    def resume_from(self, seq: int) -> None:
        """Continue after a recovered checkpoint: the next write is a fresh snapshot."""
        self.seq = seq
        self._persisted.clear()
        self._headers.clear()

    def write(self, state: RunState) -> None:
        """Record ``state`` as the run's newest checkpoint (a journal record, or a snapshot when due)."""
        self.seq += 1
        if self._journal_fd < 0 or self._snapshot_due():
            self._write_snapshot(state)
        else:
            self._append_record(state)

    def _snapshot_due(self) -> bool:
        return self.journal_bytes >= max(MIN_JOURNAL_BYTES, COMPACT_FACTOR * self.snapshot_bytes)

    def _write_snapshot(self, state: RunState) -> None:
        data = _encoder.encode(Snapshot(version=VERSION, seq=self.seq, state=state))
        if self._pause:
            atomic_write_paused(self.run_dir / SNAPSHOT, data, self._pause)
        else:
            atomic_write(self.run_dir / SNAPSHOT, data, durable=self.durable)
        self.snapshot_bytes = len(data)
        self.bytes_written += len(data)
        self._open_journal(truncate=True)
        self._persisted = {f.instance_id: (f.history_epoch, len(f.history)) for f in state.frames}
        self._headers = {f.instance_id: _encoder.encode(msgspec.structs.replace(f, history=[])) for f in state.frames}

    def _open_journal(self, *, truncate: bool) -> None:
        if self._journal_fd >= 0:
            os.close(self._journal_fd)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | (os.O_TRUNC if truncate else 0)
        self._journal_fd = os.open(self.run_dir / JOURNAL, flags, 0o644)
        if truncate and self.durable:
            os.fsync(self._journal_fd)
        self.journal_bytes = 0

    def _append_record(self, state: RunState) -> None:
        deltas: list[FrameDelta] = []
        persisted: dict[str, tuple[int, int]] = {}
        headers: dict[str, bytes] = {}
        for frame in state.frames:
            epoch, length = self._persisted.get(frame.instance_id, (-1, 0))
            base = length if epoch == frame.history_epoch and length <= len(frame.history) else 0
            header = msgspec.structs.replace(frame, history=[])
            encoded = _encoder.encode(header)
            changed = self._headers.get(frame.instance_id) != encoded
            deltas.append(
                FrameDelta(
                    id=frame.instance_id, base=base, tail=frame.history[base:], header=header if changed else None
                )
            )
            persisted[frame.instance_id] = (frame.history_epoch, len(frame.history))
            headers[frame.instance_id] = encoded
        run = msgspec.structs.replace(state, frames=[])
        body = _encoder.encode(JournalRecord(seq=self.seq, run=run, frames=deltas))
        line = b"%08x " % zlib.crc32(body) + body + b"\n"
        if self._pause:
            half = len(line) // 2
            os.write(self._journal_fd, line[:half])
            time.sleep(self._pause)
            os.write(self._journal_fd, line[half:])
        else:
            view = memoryview(line)
            while view:
                view = view[os.write(self._journal_fd, view) :]
        if self.durable:
            os.fdatasync(self._journal_fd)
        self.journal_bytes += len(line)
        self.bytes_written += len(line)
        self._persisted = persisted
        self._headers = headers

    def close(self) -> None:
        if self._journal_fd >= 0:
            os.close(self._journal_fd)
            self._journal_fd = -1


def atomic_write_paused(path: Path, data: bytes, pause: float) -> None:
    """``atomic_write`` with a pause after half the temp file (fault injection only)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        half = len(data) // 2
        os.write(fd, data[:half])
        time.sleep(pause)
        os.write(fd, data[half:])
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def load_checkpoint(run_dir: Path) -> tuple[RunState, int]:
    """Rebuild the newest complete checkpoint: ``(state, seq)``.

    Raises ``CheckpointError`` (never anything else) when the snapshot is missing or unreadable.
    Journal lines after a torn or corrupt one are ignored.
    """
    try:
        raw = (run_dir / SNAPSHOT).read_bytes()
    except FileNotFoundError:
        raise CheckpointError("no checkpoint (state.json) was ever written") from None
    except OSError as exc:
        raise CheckpointError(f"state.json is unreadable: {exc}") from None
    try:
        snapshot = _snapshot_decoder.decode(raw)
    except msgspec.DecodeError as exc:
        raise CheckpointError(f"state.json is corrupt: {exc}") from None
    except RecursionError:
        raise CheckpointError("state.json is corrupt: nested too deeply") from None
    if snapshot.version != VERSION:
        raise CheckpointError(f"state.json has version {snapshot.version}; this executor reads {VERSION}")
    state, seq = snapshot.state, snapshot.seq
    try:
        journal = (run_dir / JOURNAL).read_bytes()
    except OSError:
        journal = b""
    for line in journal.split(b"\n"):
        record = _decode_record(line)
        if record is None:
            break
        if record.seq <= seq:
            continue
        applied = _apply(state, record) if record.seq == seq + 1 else None
        if applied is None:
            break
        state, seq = applied, record.seq
    return state, seq


def _decode_record(line: bytes) -> JournalRecord | None:
    """A journal line's record, or ``None`` when it is torn, fails its checksum or does not decode."""
    if len(line) < 10 or line[8:9] != b" " or not _CRC.fullmatch(line[:8]):
        return None
    body = line[9:]
    if int(line[:8], 16) != zlib.crc32(body):
        return None
    try:
        return _record_decoder.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return None


def _apply(state: RunState, record: JournalRecord) -> RunState | None:
    """The state after ``record``, or ``None`` when the record does not fit the state it follows."""
    previous = {f.instance_id: f for f in state.frames}
    frames: list[RoleFrame] = []
    for delta in record.frames:
        before = previous.get(delta.id)
        if (delta.base or delta.header is None) and before is None:
            return None
        if before is not None and len(before.history) < delta.base:
            return None
        kept = before.history[: delta.base] if before is not None else []
        header = delta.header if delta.header is not None else before
        assert header is not None
        frames.append(msgspec.structs.replace(header, history=kept + delta.tail))
    return msgspec.structs.replace(record.run, frames=frames)


def delete_checkpoint(run_dir: Path) -> None:
    """Remove the checkpoint files (and stray temp files) once the run has a terminal meta."""
    for name in CHECKPOINT_FILES:
        (run_dir / name).unlink(missing_ok=True)
    for stray in run_dir.glob(f"{SNAPSHOT}.*.tmp"):
        stray.unlink(missing_ok=True)
