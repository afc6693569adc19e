"""Fixtures shared by every test package (helpers live in ``tests/helpers.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from tests.helpers import serve_script


@pytest.fixture(autouse=True, scope="session")
def _private_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every test (and every process it starts, module-scoped servers included) keeps the trust store and
    the queue-seal key in a temporary state directory, never the real ``~/.local/state``
    (``orchestrator.statedir``). Both are keyed by a workspace's path, and every test has its own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
        patch.delenv("ORCHESTRATOR_STATE_DIR", raising=False)
        yield


@pytest.fixture
def sim_for() -> Callable[[Mapping[str, Any]], Any]:
    """``async with sim_for(script) as sim:`` — a fresh simulated model per block."""
    return serve_script
