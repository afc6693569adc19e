"""Fixtures shared by every test package (helpers live in ``tests/helpers.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import packaging.version  # noqa: F401  # the PyPI package (Dask needs it), before tests/packaging can shadow it
import pytest
from hypothesis import HealthCheck, settings
from tests.helpers import serve_script

pytest_plugins = ["tests.guard"]

# Property tests must not fail because the machine is busy: no per-example deadline, no "too slow"
# health check (a test's own @settings still wins; fuzz/conftest.py sets the fuzz profiles).
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")


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
