"""``GET /api/runs/<id>/replay?from=N&count=K``: the flow model as it was at operations N .. N+K-1.

The frames come from a ``flow/replay.py`` pass over the log's lines (read in a worker thread, only as
far as the range needs), consistent with the run index: exactly the events the index has folded, so
``operationsTotal`` and the last frame agree with ``GET /flow``. The pass each run stopped at is kept
(a few runs, with the byte offset it read to), so a page asking chunk after chunk costs each chunk's own
events; a range before where the kept pass stands starts a fresh one from the log's first line.
Conditional JSON: a finished run's chunks never change, so a page replaying it again gets ``304``s.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import msgspec
import trio
from quart import Blueprint, Response, request

from orchestrator.engine.runfolder import read_meta
from orchestrator.flow.model import InteractionModel
from orchestrator.flow.replay import MAX_FRAMES, REPLAY_TAIL, ReplayPass
from orchestrator.runlog.reader import decode_line
from orchestrator.runlog.writer import utc_timestamp
from orchestrator.service.routes.common import (
    RunFolders,
    conditional_json,
    error_response,
    invalid_parameter,
)
from orchestrator.service.runindex import RunIndexes

__all__ = ["DEFAULT_FRAMES", "KEPT_PASSES", "ReplayChunk", "parse_count", "replay_blueprint"]

#: Frames per request when ``count`` is absent.
DEFAULT_FRAMES = 50
#: Runs whose replay pass is kept between requests.
KEPT_PASSES = 4
MAX_FROM = 999_999_999
MAX_TAIL = 1000


class ReplayChunk(msgspec.Struct, kw_only=True, rename="camel", frozen=True):
    """One answer: ``frames[i]`` is the model right after operation ``from + i``."""

    run_id: str
    status: str
    #: the run's operations so far (the scrubber's end); frames stop there
    operations_total: int
    first: int
    frames: list[InteractionModel]


def parse_count(value: str | None, *, default: int, low: int, high: int) -> int | None:
    """A decimal integer query value in ``low..high`` (``default`` when absent); ``None`` when invalid."""
    if value is None:
        return default
    if not (value.isascii() and value.isdigit() and 0 < len(value) <= 9):
        return None
    number = int(value)
    return number if low <= number <= high else None


def _invalid(parameter: str, low: int, high: int) -> Response:
    """The 400 every query parameter of the run routes answers with (the shape ``/search`` uses too)."""
    return invalid_parameter(parameter, f"{parameter} must be a whole number from {low:,} to {high:,}")


class _LogLines:
    """The log's events from byte ``offset`` on, at most ``limit`` of them, read line by line (a line still
    being written ends them); ``offset`` follows the lines read, so it is where the next read starts."""

    def __init__(self, path: Path, offset: int, limit: int) -> None:
        self.path = path
        self.offset = offset
        self.limit = limit

    def events(self) -> Iterator[dict[str, Any]]:
        if self.limit <= 0:
            return
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            kept = 0
            for line in handle:
                if not line.endswith(b"\n"):
                    return
                self.offset += len(line)
                event = decode_line(line)
                if event is not None:
                    yield event
                    kept += 1
                    if kept >= self.limit:
                        return


class _Passes:
    """The replay pass each recently replayed run stopped at, with the byte offset it read to. A request
    takes its run's pass out while it folds, so two requests never fold into the same one."""

    def __init__(self) -> None:
        self._kept: OrderedDict[str, tuple[ReplayPass, int]] = OrderedDict()

    def take(self, run_id: str, first: int, events: int, size: int) -> tuple[ReplayPass, int]:
        kept = self._kept.pop(run_id, None)
        if kept is not None and kept[0].can_start(first) and kept[0].events <= events and kept[1] <= size:
            return kept
        return ReplayPass(), 0

    def keep(self, run_id: str, replay_pass: ReplayPass, offset: int) -> None:
        self._kept[run_id] = (replay_pass, offset)
        while len(self._kept) > KEPT_PASSES:
            self._kept.popitem(last=False)


def replay_blueprint(indexes: RunIndexes, folders: RunFolders) -> Blueprint:
    replay = Blueprint("replay", __name__)
    passes = _Passes()

    @replay.get("/api/runs/<run_id>/replay")
    async def get_replay(run_id: str) -> Response:
        first = parse_count(request.args.get("from"), default=1, low=1, high=MAX_FROM)
        if first is None:
            return _invalid("from", 1, MAX_FROM)
        count = parse_count(request.args.get("count"), default=DEFAULT_FRAMES, low=1, high=MAX_FRAMES)
        if count is None:
            return _invalid("count", 1, MAX_FRAMES)
        tail = parse_count(request.args.get("tail"), default=REPLAY_TAIL, low=1, high=MAX_TAIL)
        if tail is None:
            return _invalid("tail", 1, MAX_TAIL)
        if not folders.known(run_id):
            return error_response("not_found", 404)
        index = await indexes.get(run_id)
        events, total = len(index), len(index.flow.operations)
        meta = read_meta(folders.folder(run_id))
        status = meta.status if meta else None
        now = utc_timestamp()

        frames: list[InteractionModel] = []
        if first <= total:
            try:
                size = index.path.stat().st_size
            except FileNotFoundError:
                size = 0
            replay_pass, offset = passes.take(run_id, first, events, size)
            lines = _LogLines(index.path, offset, events - replay_pass.events)

            def derive() -> list[InteractionModel]:
                with closing(lines.events()) as source:
                    return replay_pass.frames(source, first=first, count=count, meta_status=status, now=now, tail=tail)

            try:
                frames = await trio.to_thread.run_sync(derive)
            except FileNotFoundError:
                frames = []
            else:
                passes.keep(run_id, replay_pass, lines.offset)
        chunk = ReplayChunk(
            run_id=run_id, status=status or "unknown", operations_total=total, first=first, frames=frames
        )
        return conditional_json(chunk)

    return replay
