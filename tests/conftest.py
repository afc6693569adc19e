"""Fixtures shared by every test package (helpers live in ``tests/helpers.py``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from tests.helpers import serve_script


@pytest.fixture
def sim_for() -> Callable[[Mapping[str, Any]], Any]:
    """``async with sim_for(script) as sim:`` — a fresh simulated model per block."""
    return serve_script
