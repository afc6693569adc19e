"""Fixtures for the sim-model tests: sims served in-process in the test's own nursery, and an httpx client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any

import httpx
import pytest
import trio

from orchestrator.sim import parse_script, serve_sim

StartSim = Callable[[dict[str, Any]], Awaitable[str]]


@pytest.fixture
async def start_sim() -> AsyncIterator[StartSim]:
    """``base = await start_sim(script_dict)``: serve a fresh sim; all are shut down gracefully at teardown.

    Uses its own nursery (pytest-trio's ``nursery`` fixture would cancel the servers instead).
    """
    stop = trio.Event()
    async with trio.open_nursery() as nursery:

        async def start(doc: dict[str, Any]) -> str:
            script = parse_script(json.dumps(doc))
            base_url: str = await nursery.start(partial(serve_sim, script, shutdown_trigger=stop.wait))
            return base_url

        try:
            yield start
        finally:
            stop.set()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=httpx.Timeout(10.0)) as http:
        yield http
