"""``GET /api/foundry``: the workspace's Foundry searches, newest first, through the token perimeter."""

from __future__ import annotations

import os
from pathlib import Path

from tests.foundry.foundry_fixtures import write_search
from tests.service.inprocess import inprocess_server

ROLES = {"lead": ["finish"]}


async def test_searches_are_listed_newest_first_and_broken_ones_left_out(tmp_path: Path) -> None:
    async with inprocess_server(tmp_path, "http://127.0.0.1:9/v1", ROLES) as server:
        workspace = server.workspace
        assert (await server.http.get("/api/foundry")).json() == {"searches": []}
        older = write_search(workspace / "benchmarks" / ".results" / "20260101-000000", improved=False)
        os.utime(older / "summary.json", (1_000_000, 1_000_000))
        write_search(workspace / ".results" / "20260102-000000")
        broken = workspace / "suite" / ".results" / "x"
        broken.mkdir(parents=True)
        (broken / "foundry.json").write_text("{}")
        (broken / "summary.json").write_text('{"status": ')
        reply = await server.http.get("/api/foundry")
        assert reply.status_code == 200
        searches = reply.json()["searches"]
        assert [s["path"] for s in searches] == [".results/20260102-000000", "benchmarks/.results/20260101-000000"]
        newest = searches[0]
        assert newest["improved"] is True and newest["bestScore"]["passes"] == 4
        assert newest["candidates"][1]["changed"] == ["prompt:prompts/orchestrator.md"]
        assert searches[1]["improved"] is False and "no candidate is better" in searches[1]["verdict"]
        tag = reply.headers["etag"]
        assert (await server.http.get("/api/foundry", headers={"If-None-Match": tag})).status_code == 304


async def test_the_route_needs_the_token(tmp_path: Path) -> None:
    async with inprocess_server(tmp_path, "http://127.0.0.1:9/v1", ROLES) as server:
        response = await server.app.test_client().get("/api/foundry")
        assert response.status_code == 401
