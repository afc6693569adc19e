"""A Guild role calling MCP tools in a real run: the sim model scripts the calls, the fixture server answers."""

from __future__ import annotations

import json
from pathlib import Path

from tests.engine.harness import call, finish, of_type, run_task, turn
from tests.mcpclient.support import http_server, mcp_settings, stdio_server


def _outputs(requests: list[dict]) -> list[dict]:
    """Every function_call_output the model was sent, decoded, in order (deduplicated by call id)."""
    seen: dict[str, dict] = {}
    for request in requests:
        for item in request["body"]["input"]:
            if item.get("type") == "function_call_output":
                seen.setdefault(item["call_id"], json.loads(item["output"]))
    return list(seen.values())


async def test_a_role_calls_stdio_mcp_tools_with_schema_timeout_crash_and_events(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("fx__add", a=2, b=3)),
            turn("lead", call("fx__add", a="two", b=3)),
            turn("lead", call("fx__hang")),
            turn("lead", call("fx__crash")),
            turn("lead", call("fx__echo", text="x" * 500)),
            turn("lead", call("fx__secret_env")),
            turn("lead", finish("used the MCP tools")),
        ]
    }
    async with sim_for(script) as sim:
        settings = mcp_settings(
            tmp_path,
            sim.base_url,
            {"lead": ["finish", "mcp:fx/*"]},
            {"fx": stdio_server(FIXTURE_TOKEN="${FIXTURE_TOKEN}")},
            env={"FIXTURE_TOKEN": "tok-very-secret-1"},
            timeout=6,  # also bounds the wait for the restart after the crash on a busy machine
            max_chars=200,
        )
        outcome, events = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.status == "success", outcome.card
    # The model saw the server's tools, namespaced, with the server's input schemas.
    tools = {tool["name"]: tool for tool in requests[0]["body"]["tools"]}
    assert {"fx__add", "fx__echo", "fx__crash", "fx__hang", "fx__fail", "fx__secret_env", "finish"} <= set(tools)
    assert tools["fx__add"]["parameters"]["required"] == ["a", "b"]
    assert "[MCP server fx]" in tools["fx__add"]["description"]
    results = [(r["tool"], r["result"]) for r in of_type(events, "tool_result")]
    assert results[0] == ("fx__add", {"kind": "success", "data": {"total": 5}})
    assert results[1][1]["kind"] == "invalid_arguments" and results[1][1]["message"].startswith("a:")
    assert results[2][1]["kind"] == "timeout"
    assert results[3][1]["kind"] == "unavailable" and "restarted" in results[3][1]["message"]
    assert results[4][1] == {"kind": "success", "data": {"result": "x" * 500}}  # the log keeps it whole
    assert results[5][1] == {"kind": "success", "data": {"result": "token is <redacted>"}}
    assert [c["tool"] for c in of_type(events, "tool_call")][:6] == [
        "fx__add",
        "fx__add",
        "fx__hang",
        "fx__crash",
        "fx__echo",
        "fx__secret_env",
    ]
    # The conversation got the echo cut to maxToolOutputChars.
    raw_outputs = [
        item["output"]
        for item in requests[-1]["body"]["input"]
        if item.get("type") == "function_call_output" and "xxxxx" in item["output"]
    ]
    assert raw_outputs and len(raw_outputs[0]) < 500
    assert "tok-very-secret-1" not in (outcome.run_dir / "log.jsonl").read_text()


async def test_a_role_calls_a_streamable_http_server_with_a_secret_header(tmp_path: Path, sim_for) -> None:
    script = {"turns": [turn("lead", call("web__add", a=40, b=2)), turn("lead", finish("42"))]}
    secrets = tmp_path / "no-secrets"
    secrets.mkdir()
    (secrets / "web_token").write_text("header-secret-9\n")
    async with http_server(token="header-secret-9") as url, sim_for(script) as sim:
        settings = mcp_settings(
            tmp_path,
            sim.base_url,
            {"lead": ["finish", "mcp:web/add"]},
            {"web": {"url": url, "headers": {"Authorization": "Bearer ${WEB_TOKEN}"}}},
        )
        outcome, events = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.status == "success", outcome.card
    assert [t["name"] for t in requests[0]["body"]["tools"]] == ["finish", "web__add"]
    assert of_type(events, "tool_result")[0]["result"] == {"kind": "success", "data": {"total": 42}}


async def test_a_listed_tool_the_server_does_not_offer_stops_the_run_naming_both(tmp_path: Path, sim_for) -> None:
    async with sim_for({"turns": [turn("lead", finish("never"))]}) as sim:
        settings = mcp_settings(tmp_path, sim.base_url, {"lead": ["finish", "mcp:fx/nope"]}, {"fx": stdio_server()})
        outcome, events = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.status == "error" and outcome.card.error is not None
    assert outcome.card.error.kind == "unavailable"  # one of the closed card error kinds
    assert outcome.card.summary == "the run could not start its MCP tool servers"  # the problem is said once:
    message = outcome.card.error.message or ""  # in the error
    assert "`fx` does not offer a tool `nope`" in message and "role `lead`" in message
    assert "echo" in message  # what it does offer
    assert requests == []
    # the log says it too: the entry role started and ended on that card, so the run's views count it
    (finished,) = of_type(events, "role_finished")
    assert finished["status"] == "error" and finished["error"]["message"] == message
    from orchestrator.flow.search import SearchState, index_event, landmarks

    state = SearchState()
    for raw in (outcome.run_dir / "log.jsonl").read_text().splitlines():
        index_event(state, json.loads(raw))
    assert [mark.category for mark in landmarks(state)] == ["fail"]  # one problem, as the navigator counts


async def test_a_server_that_cannot_start_stops_the_run_before_the_model_is_called(tmp_path: Path, sim_for) -> None:
    async with sim_for({"turns": [turn("lead", finish("never"))]}) as sim:
        settings = mcp_settings(
            tmp_path, sim.base_url, {"lead": ["finish", "mcp:gone/*"]}, {"gone": {"command": "/nonexistent/server"}}
        )
        outcome, _ = await run_task(settings, tmp_path)
        requests = await sim.responses_requests()
    assert outcome.card.status == "error" and outcome.card.error is not None
    assert outcome.card.error.kind == "unavailable"
    assert "MCP server 'gone' could not be started" in (outcome.card.error.message or "")
    assert "(used by role `lead`)" in (outcome.card.error.message or "")
    assert requests == []


async def test_check_starts_every_declared_server_once_and_names_a_crash_and_its_roles(tmp_path: Path) -> None:
    import sys

    from orchestrator.mcpclient import check_mcp_servers

    crash = {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]}
    settings = mcp_settings(
        tmp_path,
        "http://127.0.0.1:9/v1",
        {"lead": ["finish", "mcp:fx/echo", "mcp:boom/*"], "other": ["finish", "mcp:boom/x"]},
        {"fx": stdio_server(), "boom": crash, "idle": crash},  # `idle`: declared, referenced by no role
    )
    problems = await check_mcp_servers(settings)
    assert len(problems) == 2, problems
    assert "MCP server 'boom' could not be started" in problems[0] and "(used by roles `lead`, `other`)" in problems[0]
    assert "MCP server 'idle' could not be started" in problems[1] and "(no role references it)" in problems[1]
    roles = {"lead": ["finish", "mcp:fx/echo"]}
    healthy = mcp_settings(tmp_path, "http://127.0.0.1:9/v1", roles, {"fx": stdio_server()})
    assert await check_mcp_servers(healthy) == []
