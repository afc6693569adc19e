"""Fixtures shared by every test package (helpers live in ``tests/helpers.py``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from tests.helpers import serve_script


@pytest.fixture(autouse=True)
def _private_state_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test (and every process it starts) keeps the trust store and the queue-seal key in its own
    temporary state directory, never the real ``~/.local/state`` (``orchestrator.statedir``)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    monkeypatch.delenv("ORCHESTRATOR_STATE_DIR", raising=False)


@pytest.fixture
def sim_for() -> Callable[[Mapping[str, Any]], Any]:
    """``async with sim_for(script) as sim:`` — a fresh simulated model per block."""
    return serve_script
