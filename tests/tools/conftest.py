"""Fixtures for the native-tool tests (helpers live in ``tests/tools/support.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.tools.support import Layout, build_layout


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    """The hostile workspace of ``support.build_layout``."""
    return build_layout(tmp_path)
