"""``GET /api/runs/<id>/replay?from=N&count=K``: the flow model as it was at operations N .. N+K-1.

The frames come from ``flow/replay.py`` in one pass over the log's first lines (read in a worker thread,
only as far as the range needs), consistent with the run index: exactly the events the index has folded,
so ``operationsTotal`` and the last frame agree with ``GET /flow``. Conditional JSON: a finished run's
chunks never change, so a page replaying it again gets ``304``s.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import msgspec
import trio
from quart import Blueprint, Response, request

from orchestrator.engine.runfolder import read_meta
from orchestrator.flow.model import InteractionModel
from orchestrator.flow.replay import MAX_FRAMES, REPLAY_TAIL, replay_frames
from orchestrator.runlog.reader import decode_line
from orchestrator.runlog.writer import utc_timestamp
from orchestrator.service.routes.common import RunFolders, conditional_json, error_response
from orchestrator.service.runindex import RunIndexes

__all__ = ["DEFAULT_FRAMES", "ReplayChunk", "parse_count", "replay_blueprint"]

#: Frames per request when ``count`` is absent.
DEFAULT_FRAMES = 50


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


def _log_events(path: Path, limit: int) -> Iterator[dict[str, Any]]:
    """The first ``limit`` events of the log, read line by line (what ``RunIndex`` folded)."""
    if limit <= 0:
        return
    with path.open("rb") as handle:
        kept = 0
        for line in handle:
            if not line.endswith(b"\n"):
                return  # a line still being written
            event = decode_line(line)
            if event is not None:
                yield event
                kept += 1
                if kept >= limit:
                    return


def replay_blueprint(indexes: RunIndexes, folders: RunFolders) -> Blueprint:
    replay = Blueprint("replay", __name__)

    @replay.get("/api/runs/<run_id>/replay")
    async def get_replay(run_id: str) -> Response:
        first = parse_count(request.args.get("from"), default=1, low=1, high=999_999_999)
        if first is None:
            return error_response("invalid_from", 400)
        count = parse_count(request.args.get("count"), default=DEFAULT_FRAMES, low=1, high=MAX_FRAMES)
        if count is None:
            return error_response("invalid_count", 400)
        tail = parse_count(request.args.get("tail"), default=REPLAY_TAIL, low=1, high=1000)
        if tail is None:
            return error_response("invalid_tail", 400)
        if not folders.known(run_id):
            return error_response("not_found", 404)
        index = await indexes.get(run_id)
        events, total = len(index), len(index.flow.operations)
        meta = read_meta(folders.folder(run_id))
        status = meta.status if meta else None
        now = utc_timestamp()

        def derive() -> list[InteractionModel]:
            if first > total:
                return []
            try:
                with closing(_log_events(index.path, events)) as source:
                    return replay_frames(source, first=first, count=count, meta_status=status, now=now, tail=tail)
            except FileNotFoundError:
                return []

        frames = await trio.to_thread.run_sync(derive)
        chunk = ReplayChunk(
            run_id=run_id, status=status or "unknown", operations_total=total, first=first, frames=frames
        )
        return conditional_json(chunk)

    return replay
