"""What a replay's frames cost the server. Run: ``.venv/bin/python bench/replay.py [--quick]`` (see
bench/README.md).

One synthetic run log (``log_window.synthetic.write_synthetic_run``) is replayed four ways, frames per
CPU second each: ``replay_frames`` over the whole run in one pass; in the chunks of 50 the page asks for,
each continuing the kept ``ReplayPass`` (what ``GET /replay`` does for a page playing on); the same chunks
each folding the log from its start (a page that jumps back); and, as the baseline, refolding the prefix
of every frame from scratch (windowed like a frame), timed on evenly spaced sample frames. Prints results
and the ratios; exits 0; never asserts on timing.
``--quick``: 2,250 events (about 1,100 operations), 40 sample frames (seconds).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from log_window.synthetic import write_synthetic_run

from orchestrator.flow import FlowState, finalize, fold
from orchestrator.flow.replay import REPLAY_TAIL, ReplayPass, replay_frames
from orchestrator.runlog.reader import read_events

NOW = "2099-01-01T00:00:00+00:00"
CHUNK = 50


def creators(events: list[dict[str, Any]]) -> list[int]:
    """For each operation, the index of the event that created it."""
    state, made, found = FlowState(), 0, []
    for k, event in enumerate(events):
        fold(state, event)
        if len(state.operations) > made:
            found.extend([k] * (len(state.operations) - made))
            made = len(state.operations)
    return found


def refold(events: list[dict[str, Any]], upto: int) -> None:
    state = FlowState()
    for event in events[: upto + 1]:
        fold(state, event)
    finalize(state, "running", str(events[upto]["timestamp"]), window=REPLAY_TAIL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,250 events, 40 sample frames (seconds)")
    parser.add_argument("--events", type=int, default=8_200)
    parser.add_argument("--samples", type=int, default=120)
    args = parser.parse_args()
    count, samples = (2_250, 40) if args.quick else (args.events, args.samples)
    with tempfile.TemporaryDirectory() as tmp:
        write_synthetic_run(Path(tmp), "run-bench", count)
        events = read_events(next(Path(tmp).rglob("log.jsonl")))
    made = creators(events)
    total = len(made)

    start = time.process_time()
    frames = replay_frames(events, first=1, count=total, meta_status="success", now=NOW)
    one_pass = time.process_time() - start
    assert len(frames) == total

    start = time.process_time()
    kept = ReplayPass()
    for first in range(1, total + 1, CHUNK):
        kept.frames(events[kept.events :], first=first, count=CHUNK, meta_status="success", now=NOW)
    continued = time.process_time() - start

    start = time.process_time()
    for first in range(1, total + 1, CHUNK):
        replay_frames(events, first=first, count=CHUNK, meta_status="success", now=NOW)
    chunked = time.process_time() - start

    picks = [made[(total - 1) * i // max(1, samples - 1)] for i in range(samples)]
    start = time.process_time()
    for upto in picks:
        refold(events, upto)
    per_refold = (time.process_time() - start) / len(picks)

    fps = {
        "one pass": total / one_pass,
        "chunks, kept pass": total / continued,
        "chunks, from start": total / chunked,
        "refold each prefix": 1 / per_refold,
    }
    print(f"replay of {total:,} operations ({len(events):,} events), frames per CPU second:")
    for name, value in fps.items():
        print(f"  {name:<20} {value:>10,.0f}")
    base = fps["refold each prefix"]
    print(f"one pass vs refolding each prefix: {fps['one pass'] / base:.1f}x")
    print(f"chunks of 50 with the kept pass vs refolding each prefix: {fps['chunks, kept pass'] / base:.1f}x")
    print(f"chunks of 50 from the start vs refolding each prefix: {fps['chunks, from start'] / base:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
