"""The real-model suite needs the llama-server build and the SmolLM2 model from ``just real-model``.

Without them every test here is skipped with the reason (``./dev test`` builds them first, so in CI
they run); everything else in the suite is unaffected.
"""

from __future__ import annotations

import pytest
from tests.realmodel.llama_cache import real_model


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = real_model().missing()
    if not missing:
        return
    skip = pytest.mark.skip(reason=f"no llama-server/model in the cache ({missing[0]}); run `just real-model`")
    for item in items:
        if "tests/realmodel/" in str(item.path).replace("\\", "/") and "test_llama_cache" not in item.path.name:
            item.add_marker(skip)
