"""``workflow/firstanswer.py``: the recorded first answers, through the official MCP client over stdio.

The first start records the SDK's ``initialize`` and ``tools/list`` answers; a second start answers both
from the record while it imports, then the SDK serves on — the client sees the same answers and its
calls work. Also the pure parts: the front on a pipe, the record's key, the recorder's drop.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import trio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from tests.workflow.conftest import REPO

from orchestrator.workflow.firstanswer import FirstAnswers, Recorder, front


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "PYTHONPATH": str(REPO / "src"),
        "WORKFLOW_DIR": str(REPO / "workflows"),
        "WORKFLOW_SERVER_KEY_DIR": str(home / "keys"),
        **extra,
    }


async def _session(home: Path, project: Path, **extra: str) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "orchestrator", "mcp"], env=_env(home, **extra), cwd=str(project)
    )
    with (home / "stderr.log").open("a") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            listed = await session.call_tool("list_workflows", {})
    return {
        "server": init.server_info.name,
        "instructions": init.instructions,
        "tools": [t.model_dump(by_alias=True, exclude_none=True) for t in tools.tools],
        "called": not listed.is_error and "bug-fix" in json.dumps([c.model_dump() for c in listed.content]),
    }


def test_the_second_start_answers_from_the_record_and_the_sdk_serves_on(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    record = tmp_path / ".local" / "share" / "workflow-server" / "cache" / "first-answers.json"
    first = trio.run(_session, tmp_path, project)
    assert record.is_file(), (tmp_path / "stderr.log").read_text()
    stored = json.loads(record.read_text())
    assert {"key", "protocol", "initialize", "tools"} <= set(stored)
    second = trio.run(_session, tmp_path, project)
    assert second == first and first["called"] and len(first["tools"]) >= 10
    off = trio.run(lambda: _session(tmp_path, project, WORKFLOW_SERVER_FAST_START="0"))
    assert off == first


def _answers() -> FirstAnswers:
    return FirstAnswers("k", "2025-11-25", {"serverInfo": {"name": "s"}}, {"tools": [{"name": "t"}]})


def _line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message) + "\n").encode()


def test_the_front_answers_initialize_and_tools_then_hands_the_rest_over() -> None:
    client_to_server, server_out = os.pipe(), os.pipe()
    wake = os.pipe()
    requests = (
        _line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}})
        + _line({"jsonrpc": "2.0", "method": "notifications/initialized"})
        + _line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        + _line({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "t"}})
        + b'{"jsonrpc": "2.0", "id": 4'  # half a line: the SDK reads the rest
    )
    os.write(client_to_server[1], requests)
    kept = front(_answers(), threading.Event(), wake[0], client_to_server[0], server_out[1])
    answered = [json.loads(line) for line in os.read(server_out[0], 65536).splitlines()]
    assert answered == [
        {"jsonrpc": "2.0", "id": 1, "result": {"serverInfo": {"name": "s"}}},
        {"jsonrpc": "2.0", "id": 2, "result": {"tools": [{"name": "t"}]}},
    ]
    replay = bytes(kept.replay).splitlines()
    assert [json.loads(line).get("method") for line in replay[:3]] == [
        "initialize",
        "notifications/initialized",
        "tools/call",
    ]
    assert replay[3] == b'{"jsonrpc": "2.0", "id": 4' and kept.initialize_id == 1
    for fd in (*client_to_server, *server_out, *wake):
        os.close(fd)


def test_another_protocol_version_is_left_to_the_sdk() -> None:
    pipe_in, pipe_out, wake = os.pipe(), os.pipe(), os.pipe()
    os.write(
        pipe_in[1],
        _line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2024-11-05"}}),
    )
    kept = front(_answers(), threading.Event(), wake[0], pipe_in[0], pipe_out[1])
    assert kept.initialize_id is None and b"2024-11-05" in kept.replay
    for fd in (*pipe_in, *pipe_out, *wake):
        os.close(fd)


def test_the_recorder_drops_the_replayed_initialize_answer_once_and_records_a_miss(tmp_path: Path) -> None:
    dropping = Recorder(tmp_path / "a.json", "k", drop_id=1, record=False)
    answer = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}})
    assert dropping.outgoing(answer) is None and dropping.outgoing(answer) == answer
    recording = Recorder(tmp_path / "b.json", "k")
    recording.incoming(
        json.dumps({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"protocolVersion": "v1"}})
    )
    recording.incoming(json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}))
    recording.outgoing(json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"serverInfo": {"name": "s"}}}))
    recording.outgoing(json.dumps({"jsonrpc": "2.0", "id": 8, "result": {"tools": []}}))
    stored = FirstAnswers.read(tmp_path / "b.json", "k")
    assert stored is not None and stored.protocol == "v1" and stored.tools == {"tools": []}
    assert FirstAnswers.read(tmp_path / "b.json", "another key") is None
