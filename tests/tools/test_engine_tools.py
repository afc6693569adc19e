"""One run through the real engine and the sim model: a role writes a file, reads it back, and is
refused the bookkeeping folder."""

from __future__ import annotations

import json
from pathlib import Path

from tests.engine.harness import call, finish, of_type, run_task, turn
from tests.helpers import make_settings


async def test_a_model_writes_and_reads_a_file_in_the_workspace(tmp_path: Path, sim_for) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = {
        "turns": [
            turn("coder", call("write_file", path="notes/hello.txt", content="hi there\n")),
            turn("coder", call("read_file", path="notes/hello.txt"), last='"bytes":9'),
            turn("coder", call("write_file", path=".orchestration/sneaky.txt", content="x"), last="hi there"),
            turn("coder", finish("wrote and read it"), last="permission_denied"),
        ]
    }
    async with sim_for(script) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles={"coder": ["write_file", "read_file", "finish"]})
        outcome, events = await run_task(settings, workspace)
        requests = await sim.responses_requests()
    assert outcome.card.status == "success" and outcome.card.summary == "wrote and read it"
    assert (workspace / "notes" / "hello.txt").read_text() == "hi there\n"
    assert not (workspace / ".orchestration" / "sneaky.txt").exists()
    results = [(r["tool"], r["kind"]) for r in of_type(events, "tool_result")]
    assert results == [
        ("write_file", "success"),
        ("read_file", "success"),
        ("write_file", "permission_denied"),
        ("finish", "success"),
    ]
    read_output = [i for i in requests[2]["body"]["input"] if i["type"] == "function_call_output"][-1]
    assert json.loads(read_output["output"])["data"]["content"] == "hi there\n"
