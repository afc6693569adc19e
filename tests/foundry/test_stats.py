"""Wilson intervals and the "clearly better" rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.foundry.stats import clears, score_of, wilson


def test_known_wilson_intervals() -> None:
    assert wilson(0, 4) == pytest.approx((0.0, 0.4899), abs=1e-4)
    assert wilson(4, 4) == pytest.approx((0.5101, 1.0), abs=1e-4)
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)


@given(st.integers(min_value=1, max_value=500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_the_interval_holds_the_mean(pair: tuple[int, int]) -> None:
    passes, runs = pair
    low, high = wilson(passes, runs)
    assert 0.0 <= low <= passes / runs <= high <= 1.0


def test_better_only_when_the_intervals_do_not_overlap() -> None:
    seed = score_of([0, 0, 0, 0])
    assert clears(score_of([1, 1, 1, 1]), seed)
    assert not clears(score_of([1, 1, 1]), score_of([0, 0, 0]))  # three runs each: the intervals overlap
    assert not clears(score_of([1, 1, 1, 0]), seed)
    assert not clears(score_of([]), seed)
    assert score_of([1, 0, 1, 1]).passes == 3 and score_of([1, 0, 1, 1]).mean == 0.75
