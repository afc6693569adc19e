"""Engine tests run on both wire flavors of the sim: OpenAI's and llama-server's (see docs/sim-model.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from tests.helpers import serve_script

FLAVORS = ("openai", "llama-server")


@pytest.fixture(params=FLAVORS)
def flavor(request: pytest.FixtureRequest) -> str:
    """The sim flavor this test runs against."""
    return str(request.param)


@pytest.fixture
def sim_for(flavor: str) -> Callable[[Mapping[str, Any]], Any]:
    """``async with sim_for(script) as sim:`` — a fresh sim of this test's flavor (a script's own
    ``flavor.name`` wins, for tests about one flavor's ways)."""

    def serve(script: Mapping[str, Any]) -> Any:
        own = dict(script.get("flavor") or {})
        own.setdefault("name", flavor)
        return serve_script({**script, "flavor": own})

    return serve
