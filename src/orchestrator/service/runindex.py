"""Per-run incremental index of ``log.jsonl``: line offsets, the run-view aggregate, the flow state and
the whole-run call tree (``flow/calltree.py``) and the context tracks (``flow/contexttrack.py``).

A poll reads only the bytes appended since the previous poll and folds only those events, so the run
view and the flow model of a million-event log cost what the new events cost. The index is also a
read-only ``Sequence`` of events (each read back from its line on demand), which the log-window and
detail functions take in place of an in-memory list.
"""

from __future__ import annotations

import secrets
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, overload

import msgspec
import trio

from orchestrator.flow import FlowState, InteractionModel, finalize, fold, operation_details
from orchestrator.flow.calltree import CallTree, TreeState, Waterfall, call_tree, fold_tree, totals, waterfall
from orchestrator.flow.contexttrack import ContextState, fold_context
from orchestrator.flow.delta import flow_answer
from orchestrator.flow.details import operation_log_index
from orchestrator.flow.search import SearchState, index_event
from orchestrator.runlog.reader import decode_line
from orchestrator.service.logwindow import RECENT_ROWS, RunAggregate

__all__ = ["RunIndex", "RunIndexes"]

_CACHE = 512
#: bytes of log read and folded at a time while catching up
CHUNK = 8 << 20


class RunIndex(Sequence[dict[str, Any]]):
    """Everything the endpoints derive from one run's log, kept current by ``update``."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.path = run_dir / "log.jsonl"
        self._reset()

    def _reset(self) -> None:
        self.aggregate = RunAggregate()
        self.flow = FlowState()
        #: names this fold state in ``/flow?since=`` cursors (``flow/delta.py``): new on every re-read
        self.generation = secrets.token_hex(4)
        self.tree = TreeState()
        self.context = ContextState()
        self._starts = array("q")
        self._lengths = array("q")
        self._read_to = 0
        self._cache: OrderedDict[int, dict[str, Any]] = OrderedDict()
        #: the search index (``flow/search.py``), built on the first search and kept current from then on
        self._search: SearchState | None = None

    def update(self) -> int:
        """Fold complete lines appended since the last call; returns how many events were new.

        Reads in ``CHUNK``-sized pieces, so catching up on a huge log holds one piece and its events in
        memory at a time (a partial last line waits for its newline). A log that shrank is re-read."""
        try:
            with self.path.open("rb") as handle:
                size = handle.seek(0, 2)
                if size < self._read_to:
                    self._reset()
                handle.seek(self._read_to)
                new = 0
                carry = b""
                while self._read_to + len(carry) < size:
                    data = carry + handle.read(min(CHUNK, size - self._read_to - len(carry)))
                    end = data.rfind(b"\n") + 1
                    if end == 0:
                        if len(data) >= size - self._read_to:
                            break  # only a partial line is left
                        carry = data
                        continue
                    new += self._fold(data, end)
                    carry = data[end:]
        except FileNotFoundError:
            return 0
        return new

    def _fold(self, data: bytes, end: int) -> int:
        """Index and fold the complete lines in ``data[:end]``, which starts at ``self._read_to``."""
        base = self._read_to
        self._read_to += end
        batch: list[dict[str, Any]] = []
        start = 0
        while start < end:
            stop = data.index(b"\n", start)
            event = decode_line(data[start:stop])
            if event is not None:
                self._starts.append(base + start)
                self._lengths.append(stop - start)
                batch.append(event)
            start = stop + 1
        first = len(self._starts) - len(batch)
        # Only the log's last RECENT_ROWS events survive in recentLog, and each of those is among the
        # last RECENT_ROWS of its own chunk: rendering just those rows per chunk renders all survivors.
        rows_from = len(batch) - RECENT_ROWS
        for k, event in enumerate(batch):
            self.aggregate.add(event, first + k, row=k >= rows_from)
            fold(self.flow, event)
            fold_tree(self.tree, event)
            if self._search is not None:
                index_event(self._search, event)
            fold_context(self.context, event)
        return len(batch)

    def search_state(self) -> SearchState:
        """The search index, synced with the flow state; the first call reads the log once to build it
        (call it where ``update`` runs: in the worker thread, under the index's lock)."""
        if self._search is None:
            state = SearchState()
            with self.path.open("rb") as handle:
                for start, length in zip(self._starts, self._lengths, strict=True):
                    handle.seek(start)
                    index_event(state, decode_line(handle.read(length)) or {})
            self._search = state
        self._search.sync(self.flow.details)
        return self._search

    def __len__(self) -> int:
        return len(self._starts)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self._starts):
            raise IndexError(index)
        cached = self._cache.get(index)
        if cached is not None:
            self._cache.move_to_end(index)
            return cached
        with self.path.open("rb") as handle:
            handle.seek(self._starts[index])
            event = decode_line(handle.read(self._lengths[index])) or {}
        self._cache[index] = event
        if len(self._cache) > _CACHE:
            self._cache.popitem(last=False)
        return event

    def event_at(self, index: int) -> dict[str, Any] | None:
        try:
            return self[index]
        except (IndexError, OSError):
            return None

    def model(self, meta_status: str | None, now: str, *, window: int | None = None) -> InteractionModel:
        model = finalize(self.flow, meta_status, now, window=window)
        return msgspec.structs.replace(model, totals=totals(self.tree))

    def flow_answer(
        self, meta_status: str | None, now: str, since: str, *, window: int | None = None
    ) -> dict[str, Any]:
        """``model`` as a ``?since=`` answer: a delta against the cursor ``since`` when it fits, else full."""
        return flow_answer(self.flow, self.model(meta_status, now, window=window), self.generation, since)

    def call_tree(self, meta_status: str | None, now: str) -> CallTree:
        return call_tree(self.tree, meta_status, now)

    def waterfall(self, meta_status: str | None, now: str) -> Waterfall:
        return waterfall(self.tree, meta_status, now)

    def details(self, operation_id: str) -> str | None:
        """An operation's Markdown detail body; ``KeyError`` for an id not in the current model."""
        return operation_details(self, self.flow, operation_id)

    def log_index(self, operation_id: str) -> int | None:
        """The log index an operation was folded from; ``KeyError`` like ``details``."""
        return operation_log_index(self.flow, operation_id)


class RunIndexes:
    """One ``RunIndex`` per run id, created on first use (bounded: the least recently used go).

    ``folder_of`` names a run id's folder (the routes' ``RunFolders.folder``: a Foundry run's lies outside
    the runs root)."""

    def __init__(self, folder_of: Callable[[str], Path], capacity: int = 16) -> None:
        self._folder_of = folder_of
        self._capacity = capacity
        self._indexes: OrderedDict[str, RunIndex] = OrderedDict()
        self._locks: dict[str, trio.Lock] = {}

    async def get(self, run_id: str, *, search: bool = False) -> RunIndex:
        """The run's index, caught up with its log (with ``search``, its search index too). The fold runs
        in a worker thread (the first poll of a million-event log takes seconds and must not stall the
        service or the active run); one update per index at a time."""
        index = self._indexes.get(run_id)
        if index is None:
            index = RunIndex(self._folder_of(run_id))
            self._indexes[run_id] = index
            self._locks[run_id] = trio.Lock()
            if len(self._indexes) > self._capacity:
                gone, _ = self._indexes.popitem(last=False)
                self._locks.pop(gone, None)
        else:
            self._indexes.move_to_end(run_id)
        async with self._locks[run_id]:
            await trio.to_thread.run_sync(index.update)
            if search:
                await trio.to_thread.run_sync(index.search_state)
        return index
