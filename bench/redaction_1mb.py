"""What redacting one 1 MB tool output costs. Run: ``.venv/bin/python bench/redaction_1mb.py [--quick]``.

The text is 1 MB of realistic tool output: this repository's Python sources followed by its ``git log``
(commit hashes, names, subjects), repeated to 1,000,000 characters — code, paths, hex digests and URLs,
the things a redactor must leave alone. Two redactors over the same 8 realistic secret values are timed
side by side, in alternating order:

- ``values+shapes``: ``Redactor(values)`` as the engine uses it — each known value, and every
  credential shape (GitHub, ``sk-``, Slack, AWS/Google, GitLab tokens, private keys, URL credentials);
- ``values only``: ``Redactor(values, shapes=False)`` — one substring search per value, the baseline
  (what redaction cost before the shapes).

Also timed: the same text with 20 secrets planted in it (the replacing path), and the log writer's
fast check ``found_in`` on the text encoded as JSON bytes.

Prints each median (best-of blocks), the median of the per-round ratios ``values+shapes / values only``,
and the headline ``1 MB redaction: X ms (goal < 5 ms)``. Never asserts on timing; exits 0. ``--quick``
takes a second or two and only proves the bench works.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from orchestrator.config.redaction import Redactor

REPO = Path(__file__).resolve().parents[1]
SIZE = 1_000_000
GOAL_MS = 5.0
VALUES = [
    "sk-proj-6f1e0c9a2b7d4e8f9a0b1c2d3e4f5a6b",
    "kagi-0a1b2c3d4e5f6a7b8c9d",
    "Zm9vYmFyYmF6cXV4cXV1eA-token",
    "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "correct-horse-battery-staple",
    "xoxb-1234-5678-abcdefghijkl",
    "postgres://u:pa55w0rd-xyz@db.internal/app",
    "my5ql-pa55-7781",
]


def corpus() -> str:
    """1,000,000 characters of this repository's sources and history."""
    sources = "".join(path.read_text() for path in sorted((REPO / "src").rglob("*.py")))
    try:
        log = subprocess.run(
            ["git", "log", "--format=%H %an %s", "-n", "3000"], cwd=REPO, capture_output=True, text=True, check=False
        ).stdout
    except OSError:
        log = ""
    text = sources + log
    return (text * (SIZE // len(text) + 1))[:SIZE]


def _best_ms(work: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few rounds (a second or two), for ./dev test")
    args = parser.parse_args()
    rounds, repeat = (3, 3) if args.quick else (15, 10)
    text = corpus()
    step = SIZE // 20
    planted = "".join(
        text[i : i + step - 40] + " " + VALUES[i // step % len(VALUES)] + " " for i in range(0, SIZE, step)
    )
    data = msgspec.json.encode({"stdout": text})
    full, plain = Redactor(VALUES), Redactor(VALUES, shapes=False)
    assert full.redact(text) is text, "the corpus holds something the redactor changes: not a clean baseline"
    assert all(value not in full.redact(planted) for value in VALUES)
    times: dict[str, list[float]] = {"values+shapes": [], "values only": []}
    ratios = []
    for number in range(rounds):
        contenders = {"values+shapes": full, "values only": plain}
        order = list(contenders) if number % 2 == 0 else list(reversed(contenders))
        for name in order:
            redactor = contenders[name]
            times[name].append(_best_ms(lambda redactor=redactor: redactor.redact(text), repeat))
        ratios.append(times["values+shapes"][-1] / times["values only"][-1])
    replacing = _best_ms(lambda: full.redact(planted), repeat)
    check = _best_ms(lambda: full.found_in(data), repeat)
    shaped = statistics.median(times["values+shapes"])
    print(f"text: {len(text):,} characters of sources and git log; {len(VALUES)} known values; rounds: {rounds}")
    print(f"values only (baseline), 1 MB, nothing found:  {statistics.median(times['values only']):6.2f} ms")
    print(f"values+shapes, 1 MB, nothing found:           {shaped:6.2f} ms")
    print(f"values+shapes, 1 MB, 20 secrets replaced:     {replacing:6.2f} ms")
    print(f"found_in on the 1 MB encoded as JSON:         {check:6.2f} ms")
    print(f"values+shapes / values only per-round ratio: {statistics.median(ratios):.2f}x")
    print(f"1 MB redaction: {shaped:.2f} ms (goal < {GOAL_MS:g} ms)")


if __name__ == "__main__":
    main()
