"""What the watch screen's 1 s poll of a live run's flow model costs in bytes. Run:
``.venv/bin/python bench/live_poll_bytes.py [--quick]`` (see bench/README.md).

A synthetic live run (``log_window.synthetic``: orchestrator → planner → workers, the last one still at
work) of about 500 tool calls is polled once a simulated second, the way the shell polls it, two ways side
by side: the full re-download (``GET /flow``: the windowed model, a ``304`` only when the body is byte for
byte the previous one) and the delta poll (``GET /flow?since=<cursor>``, ``flow/delta.py``: only what
changed since the answer held; also a ``304`` when unchanged). Two phases: 30 s **between events** (the
run waits on its model: nothing is appended, only the clock moves) and 30 s **with news** (one worker
turn — four events, one tool call — appended each second). Bytes are response bodies as the route encodes
them (headers left out: the same few hundred bytes both ways). For scale, it also prints what the other
per-second poll of the watched run costs: ``GET /api/runs/:id?recent=0`` (the run view without the recent
log rows only the fallback view shows, as the shell asks for it).
Prints bytes per second and the full/delta ratios; exits 0; never asserts.

``--quick``: 10 s per phase (same run size; seconds).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).parent))
from log_window.synthetic import set_status, write_synthetic_run

from orchestrator.engine.runfolder import read_meta
from orchestrator.service.etag import etag_of
from orchestrator.service.routes.rundetail import FLOW_WINDOW
from orchestrator.service.runindex import RunIndex
from orchestrator.service.views import run_view

_encode = msgspec.json.Encoder().encode
START = datetime(2026, 1, 2, tzinfo=UTC)  # after the synthetic log's last event: its open calls keep running


class Poller:
    """One client's poll of one path: the body it would be sent (empty for a ``304``)."""

    def __init__(self) -> None:
        self.etag: str | None = None
        self.total = 0

    def receive(self, body: bytes) -> int:
        tag = etag_of(body)
        size = 0 if tag == self.etag else len(body)
        self.etag = tag
        self.total += size
        return size


def stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 s per phase (seconds)")
    parser.add_argument("--events", type=int, default=2_100, help="log size (≈ 4 events per tool call)")
    parser.add_argument("--seconds", type=int, default=30, help="simulated seconds per phase")
    args = parser.parse_args()
    seconds = 10 if args.quick else args.seconds
    with tempfile.TemporaryDirectory() as tmp:
        log = write_synthetic_run(Path(tmp), "run-bench", args.events)
        run_dir = next(Path(tmp).rglob("log.jsonl")).parent
        set_status(run_dir, "running")
        meta = read_meta(run_dir)
        index = RunIndex(run_dir)
        index.update()
        calls = sum(1 for p in index.flow.participants if p.kind == "tool")
        print(f"live run: {len(index)} events, {len(index.flow.operations)} operations, {calls} tool calls")
        full, delta, view = Poller(), Poller(), Poller()
        clock = START
        status = meta.status if meta else None
        first = index.flow_answer(status, stamp(clock), "", window=FLOW_WINDOW)  # the page's first, full answer
        cursor = first["cursor"]
        full.receive(_encode(index.model(status, stamp(clock), window=FLOW_WINDOW)))
        print(f"first answer (both ways): {len(_encode(first)) / 1024:.1f} KB")
        results: dict[str, tuple[float, float, float]] = {}
        for phase, news in (("between events", False), ("with news (1 tool call/s)", True)):
            before = (full.total, delta.total, view.total)
            for _ in range(seconds):
                clock += timedelta(seconds=1)
                if news:
                    log.append_turns(4)
                    index.update()
                now = stamp(clock)
                full.receive(_encode(index.model(status, now, window=FLOW_WINDOW)))
                answer = index.flow_answer(status, now, cursor, window=FLOW_WINDOW)
                delta.receive(_encode(answer))
                cursor = answer["cursor"]
                shown = run_view("run-bench", meta, index.aggregate, plan=None, interrupt_pending=False, now=clock)
                view.receive(_encode({**shown, "recentLog": []}))  # the shell's ?recent=0
            totals = (full.total, delta.total, view.total)
            spent = [(after - start) / seconds for after, start in zip(totals, before, strict=True)]
            results[phase] = (spent[0], spent[1], spent[2])
        print(f"{'phase':28} {'full /flow':>14} {'delta /flow':>14} {'ratio':>9}   (GET /api/runs/:id?recent=0)")
        for phase, (old, new, other) in results.items():
            ratio = old / new if new else float("inf")
            sizes = f"{old / 1024:10.1f} KB/s {new / 1024:10.2f} KB/s"
            print(f"{phase:28} {sizes} {ratio:8.0f}x   ({other / 1024:.1f} KB/s)")
        between = results["between events"][1] / 1024
        verdict = "meets" if between <= 10 else "misses"
        print(f"delta poll between events: {between:.2f} KB/s ({verdict} the goal <= 10 KB/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
