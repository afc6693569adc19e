"""Honest scores: a mean over repeated pass/fail runs, its 95 % Wilson interval, and "clearly better".

Every run is a pass (1) or not (0), so a score is a binomial proportion and the Wilson score interval
is the right interval even for a handful of runs and for 0 or 1 (where the normal approximation
collapses to a point). A candidate is *better* than the seed only when its interval lies wholly
above the seed's: its lower bound exceeds the seed's upper bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec

__all__ = ["Z95", "Score", "clears", "score_of", "wilson"]

#: the two-sided 95 % normal quantile
Z95 = 1.959963984540054


class Score(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """``passes`` of ``runs``; ``mean`` and the interval ``[low, high]`` (all 0 when there is no run)."""

    runs: int
    passes: int
    mean: float
    low: float
    high: float


def wilson(passes: int, runs: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``passes`` successes in ``runs`` trials (``(0, 1)`` for none)."""
    if runs <= 0:
        return 0.0, 1.0
    p = passes / runs
    denominator = 1 + z * z / runs
    centre = (p + z * z / (2 * runs)) / denominator
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / denominator
    low = 0.0 if passes == 0 else max(0.0, centre - half)  # exact at the ends, where rounding would stray
    high = 1.0 if passes == runs else min(1.0, centre + half)
    return low, high


def score_of(outcomes: Sequence[float]) -> Score:
    """The score of runs scored 1 (pass) or 0."""
    runs = len(outcomes)
    passes = sum(1 for value in outcomes if value >= 1.0)
    low, high = wilson(passes, runs)
    mean = passes / runs if runs else 0.0
    return Score(runs=runs, passes=passes, mean=round(mean, 4), low=round(low, 4), high=round(high, 4))


def clears(candidate: Score, seed: Score) -> bool:
    """Whether ``candidate`` is better than ``seed`` beyond doubt: its interval lies above the seed's."""
    return candidate.runs > 0 and seed.runs > 0 and candidate.low > seed.high
