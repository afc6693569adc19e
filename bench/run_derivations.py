"""What the whole-run call tree costs the run index. Run: ``.venv/bin/python bench/run_derivations.py
[--quick]`` (see bench/README.md).

One synthetic run log (``log_window.synthetic.write_synthetic_run``: a lead, workers, turns, shell calls) is
indexed by ``RunIndex.update`` with the call-tree fold (``flow/calltree.py``) and, as the baseline side
by side in the same process, with that fold switched off; rounds alternate the order and the best CPU
time of each side is compared. Then the per-request cost of the ``/tree``, ``/timeline`` and windowed
``/flow`` answers (finalize + encode) on the built index. Prints results; exits 0; never asserts on
timing. ``--quick`` uses 20,000 events and 2 rounds (seconds).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).parent))
from log_window.synthetic import write_synthetic_run

from orchestrator.service import runindex

NOW = "2099-01-01T00:00:00+00:00"


def build(run_dir: Path, with_tree: bool) -> tuple[float, runindex.RunIndex]:
    saved = runindex.fold_tree
    if not with_tree:
        runindex.fold_tree = lambda state, event: None
    try:
        start = time.process_time()
        index = runindex.RunIndex(run_dir)
        index.update()
        return time.process_time() - start, index
    finally:
        runindex.fold_tree = saved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20,000 events, 2 rounds (seconds)")
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    events, rounds = (20_000, 2) if args.quick else (args.events, args.rounds)
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        write_synthetic_run(workspace, "run-bench", events)
        run_dir = next(path.parent for path in workspace.rglob("log.jsonl"))
        best = {False: float("inf"), True: float("inf")}
        for k in range(rounds):
            for with_tree in (False, True) if k % 2 == 0 else (True, False):
                best[with_tree] = min(best[with_tree], build(run_dir, with_tree)[0])
        print(f"index build of {events:,} events (best of {rounds}, CPU):")
        print(f"  without the call-tree fold  {best[False]:.3f} s")
        print(f"  with it                     {best[True]:.3f} s")
        print(f"  ratio with/without          {best[True] / best[False]:.3f}")
        _, index = build(run_dir, True)
        encoder = msgspec.json.Encoder()
        answers = {
            "tree": lambda: index.call_tree("success", NOW),
            "timeline": lambda: index.waterfall("success", NOW),
            "flow (window 1,000)": lambda: index.model("success", NOW, window=1000),
        }
        print(f"per answer on the built index ({len(index.tree.instances)} instances):")
        for name, answer in answers.items():
            repeats = 50
            start = time.perf_counter()
            for _ in range(repeats):
                encoder.encode(answer())
            print(f"  {name:<22} {(time.perf_counter() - start) / repeats * 1000:.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
