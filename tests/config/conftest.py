"""Fixtures for the config tests: a throwaway copy of the fixture Guild and deployment, and a real model API."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator, Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from quart import Response, request
from quart_trio import QuartTrio

from orchestrator.config import Settings, load_settings

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[2]

Json = dict[str, Any]
EditJson = Callable[[Path, Callable[[Json], object]], None]
Load = Callable[..., Settings]


@pytest.fixture
def guild_dir(tmp_path: Path) -> Path:
    """A private copy of ``fixtures/guild`` (roles lead, writer, janitor, watcher, answerer)."""
    return Path(shutil.copytree(FIXTURES / "guild", tmp_path / "guild"))


@pytest.fixture
def deployment_file(tmp_path: Path) -> Path:
    """A private copy of ``fixtures/deployment.json`` (every field set, handler roles from the guild)."""
    return Path(shutil.copy(FIXTURES / "deployment.json", tmp_path / "deployment.json"))


@pytest.fixture
def minimal_deployment_file(tmp_path: Path) -> Path:
    """A private copy of ``fixtures/deployment-minimal.json`` (no name, window, handlers or logging)."""
    return Path(shutil.copy(FIXTURES / "deployment-minimal.json", tmp_path / "deployment-minimal.json"))


@pytest.fixture
def secrets_dir(tmp_path: Path) -> Path:
    """An empty secrets directory, so the host's /run/secrets never leaks into a test."""
    path = tmp_path / "secrets"
    path.mkdir()
    return path


def _edit_json(path: Path, mutate: Callable[[Json], object]) -> None:
    document = json.loads(path.read_text())
    mutate(document)
    path.write_text(json.dumps(document))


@pytest.fixture
def edit_json() -> EditJson:
    """``edit_json(path, mutate)``: load a JSON file, let ``mutate`` change the dict in place, save it."""
    return _edit_json


@pytest.fixture
def load(guild_dir: Path, deployment_file: Path, secrets_dir: Path) -> Load:
    """``load(env=None, guild=..., deployment=...)``: ``load_settings`` on the private fixture copies."""

    def _load(
        env: Mapping[str, str] | None = None, *, guild: Path | None = None, deployment: Path | None = None
    ) -> Settings:
        return load_settings(guild or guild_dir, deployment or deployment_file, env or {}, secrets_dir=secrets_dir)

    return _load


class FakeModelApi:
    """A real OpenAI-compatible ``GET /v1/models`` endpoint whose answer each test sets."""

    def __init__(self) -> None:
        self.status = 200
        self.body: bytes = b'{"object": "list", "data": []}'
        self.authorizations: list[str | None] = []
        self.api_base = ""

    def serve_models(self, *entries: Json) -> None:
        self.status = 200
        self.body = json.dumps({"object": "list", "data": list(entries)}).encode()

    def app(self) -> QuartTrio:
        app = QuartTrio(__name__)

        @app.get("/v1/models")
        async def models() -> Response:
            self.authorizations.append(request.headers.get("Authorization"))
            return Response(self.body, status=self.status, content_type="application/json")

        return app


@pytest.fixture
async def model_api() -> AsyncIterator[FakeModelApi]:
    """A Hypercorn server on 127.0.0.1:<free port>, in our own nursery, stopped when the test ends."""
    api = FakeModelApi()
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.graceful_timeout = 0.5
    config.accesslog = None
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(partial(serve, api.app(), config, shutdown_trigger=stop.wait))
        api.api_base = f"{binds[0]}/v1"
        try:
            yield api
        finally:
            stop.set()
