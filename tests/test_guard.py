"""The suite's own guard rails: the slowness factor and the deadline that cancels a hung trio test."""

from __future__ import annotations

import pytest
import trio
from tests import slowness as slowness_module
from tests.guard import DeadlineExceeded, _run_within
from tests.slowness import FACTOR_VARIABLE, MAX_FACTOR, budget, slowness


def test_the_factor_is_at_least_one_at_most_the_cap_and_scales_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slowness_module, "_load_per_core", lambda: 0.1)
    monkeypatch.setenv(FACTOR_VARIABLE, "0.4")  # a machine faster than the reference keeps the written budget
    assert slowness() == 1.0 and budget(10) == 10
    monkeypatch.setenv(FACTOR_VARIABLE, "2.5")
    assert slowness() == 2.5 and budget(10) == 25
    monkeypatch.setenv(FACTOR_VARIABLE, "50")
    assert slowness() == MAX_FACTOR
    monkeypatch.setenv(FACTOR_VARIABLE, "not a number")
    assert slowness() == 1.0
    monkeypatch.setattr(slowness_module, "_load_per_core", lambda: 3.0)  # a busy machine now counts too
    assert slowness() == 3.0


def test_a_hung_trio_function_is_cancelled_and_the_next_run_starts_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FACTOR_VARIABLE, "1")
    monkeypatch.setattr(slowness_module, "_load_per_core", lambda: 0.0)
    unwound: list[str] = []

    async def hangs() -> None:
        try:
            await trio.sleep_forever()
        finally:
            unwound.append("finally ran")

    with pytest.raises(DeadlineExceeded, match=r"did not finish within 0 s .*cancelled"):
        _run_within(0.05, "hangs")(hangs)
    assert unwound == ["finally ran"]

    async def quick() -> str:
        await trio.lowlevel.checkpoint()
        return "ok"

    assert trio.run(quick) == "ok"  # no run was left behind
    assert _run_within(5, "quick")(quick) == "ok"
