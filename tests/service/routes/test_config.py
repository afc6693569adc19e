"""``routes.config``: ``GET/PUT /api/settings`` and ``GET /api/config`` (redacted), in-process."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import serve_script
from tests.service.inprocess import inprocess_server

ROLES = {
    "lead": ["agent", "ask_human", "finish"],
    "coder": ["run_shell", "ask_human", "finish"],
}
INVALID = {"ok": False, "error": "invalid_body"}


async def test_settings_and_config(tmp_path: Path) -> None:
    secret = "sk-very-secret-value-4711"
    env = {"ORCHESTRATOR_API_KEY": secret}
    async with serve_script({"turns": []}) as sim, inprocess_server(tmp_path, sim.base_url, ROLES, env=env) as server:
        assert await server.json("/api/settings") == {"effort": None, "logLevel": None}
        for body in ({}, {"effort": "max"}, {"logLevel": "full"}, {"effort": "quick", "logLevel": "debug"}, [1]):
            response = await server.http.put("/api/settings", json=body)
            assert (response.status_code, response.json()) == (400, INVALID), body
        response = await server.http.put("/api/settings", json={"effort": "thorough", "logLevel": "standard"})
        assert (response.status_code, response.json()) == (200, {"effort": "thorough", "logLevel": "standard"})
        assert await server.json("/api/settings") == {"effort": "thorough", "logLevel": "standard"}
        stored = server.workspace / ".orchestration" / "settings.json"
        assert json.loads(stored.read_text()) == {"effort": "thorough", "logLevel": "standard"}
        assert not [p for p in stored.parent.iterdir() if p.name.startswith(".") or p.suffix == ".tmp"]
        response = await server.http.put("/api/settings", json={"effort": "quick"})  # absent logLevel clears it
        assert (response.status_code, response.json()) == (200, {"effort": "quick", "logLevel": None})
        assert await server.json("/api/settings") == {"effort": "quick", "logLevel": None}
        response = await server.http.put("/api/settings", json={"effort": "max"})  # refused: file unchanged
        assert response.status_code == 400
        assert await server.json("/api/settings") == {"effort": "quick", "logLevel": None}

        response = await server.get("/api/config")
        assert response.status_code == 200 and secret not in response.text
        config = response.json()
        assert config["model"] == {"name": "sim", "contextWindow": 32768, "maxTokens": 4096}
        assert config["entryRole"] == "lead"
        assert set(config["roles"]) == {"lead", "coder"}
        assert config["roles"]["coder"]["tools"] == ["run_shell", "ask_human", "finish"]
        assert set(config["roles"]["lead"]) == {"tools", "label", "description", "workingLabel"}
        assert "ask_human" in config["tools"]
        assert set(config["tools"]["ask_human"]) == {
            "humanLabel",
            "humanDescription",
            "humanCallLabel",
            "humanWorkingLabel",
        }
        assert config["executor"]["maxAgentDepth"] == 8
        assert config["build"] is None  # a source checkout has no baked build info
        assert config["logging"] == {"level": None}  # this deployment sets no default level
        assert config["resumed"] is None  # this start resumed no run (the page shows no resume notice)
        for path in ("/api/settings", "/api/runs", "/api/queue", "/"):
            assert secret not in (await server.get(path)).text
