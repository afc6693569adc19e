"""SIGTERM / SIGINT during ``orchestrator run``: wind down at a safe point, or stop and resume later."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import trio
from tests.engine.harness import call, finish, turn
from tests.helpers import REPO, write_deployment, write_guild

from orchestrator.engine.runfolder import read_meta, runs_root
from orchestrator.runlog import read_events

ROLES = {"lead": ["agent", "finish"], "leaf": ["finish"]}


async def _start(args: list[str], env: dict[str, str]) -> trio.Process:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    full_env.update(env)
    return await trio.lowlevel.open_process(
        [sys.executable, "-m", "orchestrator", *args],
        env=full_env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


async def _wait_for_event(workspace: Path, predicate) -> None:
    """Poll the (only) run's log until an event satisfies ``predicate`` (30 s at most)."""
    with trio.fail_after(30):
        while True:
            runs = list(runs_root(workspace).glob("run-*")) if runs_root(workspace).exists() else []
            if runs and any(predicate(e) for e in read_events(runs[0] / "log.jsonl")):
                return
            await trio.sleep(0.05)


async def _finish(process: trio.Process) -> tuple[int, bytes, bytes]:
    """Wait (60 s at most) for the process to exit; its code and captured output."""
    out, err = bytearray(), bytearray()

    async def drain(stream, sink: bytearray) -> None:
        async for chunk in stream:
            sink.extend(chunk)

    try:
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(drain, process.stdout, out)
                nursery.start_soon(drain, process.stderr, err)
                await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    return process.returncode, bytes(out), bytes(err)


def _config(tmp_path: Path, api_base: str) -> list[str]:
    guild = write_guild(tmp_path / "guild", ROLES)
    deployment = write_deployment(tmp_path / "deployment.json", api_base)
    return ["--guild", str(guild), "--deployment", str(deployment)]


def _leaf_started(event: dict) -> bool:
    return event["type"] == "llm_call_start" and event["payload"]["role"] == "leaf"


async def test_sigterm_winds_down_at_a_safe_point_and_exits_with_the_card(tmp_path: Path, sim_for) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = {
        "turns": [
            turn("lead", call("agent", role="leaf", task="slow work")),
            turn("leaf", finish("leaf done"), content="x" * 40, chunkChars=2, chunkDelayMs=50),
            turn("lead", finish("wound down cleanly"), last="[Operator notice"),
        ]
    }
    async with sim_for(script) as sim:
        process = await _start(
            ["run", "--workspace", str(workspace), *_config(tmp_path, sim.base_url), "--json", "go"], {}
        )
        try:
            await _wait_for_event(workspace, _leaf_started)
            process.send_signal(signal.SIGTERM)
            code, out, err = await _finish(process)
        finally:
            if process.returncode is None:
                process.kill()
        requests = await sim.responses_requests()
    assert code == 0, err.decode()
    assert json.loads(out)["summary"] == "wound down cleanly"
    assert b"winding down: the run is asked to wrap up" in err
    assert b"finished during the wind-down (success)" in err
    (run_dir,) = runs_root(workspace).iterdir()
    notices = [e["payload"] for e in read_events(run_dir / "log.jsonl") if e["type"] == "operator_notice"]
    assert len(notices) == 1 and notices[0]["roleId"] == "lead-0-1"
    lead_last = requests[-1]["body"]["input"]
    assert lead_last[-2]["type"] == "function_call_output"  # the notice follows the agent call's result
    assert lead_last[-1]["content"].startswith("[Operator notice")


async def test_a_run_still_busy_after_the_wind_down_exits_130_and_resumes(tmp_path: Path, sim_for) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    stalled = {
        "turns": [
            turn("lead", call("agent", role="leaf", task="stuck work")),
            turn("leaf", finish("never"), fail={"stallBeforeHeadersMs": 60000}),
        ]
    }
    async with sim_for(stalled) as sim:
        config = _config(tmp_path, sim.base_url)
        process = await _start(
            ["run", "--workspace", str(workspace), *config, "go"], {"ORCHESTRATOR_WIND_DOWN_SECONDS": "0.5"}
        )
        try:
            await _wait_for_event(workspace, _leaf_started)
            process.send_signal(signal.SIGTERM)
            code, _, err = await _finish(process)
        finally:
            if process.returncode is None:
                process.kill()
        assert code == 130, err.decode()
        assert b"orchestrator resume" in err
        (run_dir,) = runs_root(workspace).iterdir()
        assert read_meta(run_dir).status == "running" and (run_dir / "state.json").exists()

        await sim.set_script(
            {"turns": [turn("leaf", finish("leaf finally done")), turn("lead", finish("resumed and done"))]}
        )
        resumed = await _start(["resume", "--workspace", str(workspace), *config, "--json"], {})
        code, out, err = await _finish(resumed)
    assert code == 0, err.decode()
    assert f"resuming run {run_dir.name} from its checkpoint (interrupted at ".encode() in err
    card = json.loads(out)
    assert card["summary"] == "resumed and done" and card["runId"] == run_dir.name
    events = read_events(run_dir / "log.jsonl")
    assert [e["type"] for e in events].count("run_resumed") == 1
    assert read_meta(run_dir).status == "success" and not (run_dir / "state.json").exists()


async def test_a_second_signal_stops_the_wind_down_at_once(tmp_path: Path, sim_for) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    stalled = {
        "turns": [
            turn("lead", call("agent", role="leaf", task="stuck")),
            turn("leaf", finish("never"), fail={"stallBeforeHeadersMs": 60000}),
        ]
    }
    async with sim_for(stalled) as sim:
        process = await _start(["run", "--workspace", str(workspace), *_config(tmp_path, sim.base_url), "go"], {})
        try:
            await _wait_for_event(workspace, _leaf_started)
            process.send_signal(signal.SIGINT)  # Ctrl-C: the leaf is stuck in its model call, no safe point comes
            said = await _read_until(process, b"Ctrl-C again to stop it now")  # printed at once
            assert b"winding down: the run is asked to wrap up at its next step and has up to 30 s" in said
            process.send_signal(signal.SIGINT)
            with trio.fail_after(10):  # far below the default 30 s wind-down
                code, _, err = await _finish(process)
        finally:
            if process.returncode is None:
                process.kill()
    assert code == 130
    assert b"stopping now" in err and b"`orchestrator resume` continues it" in err


async def _read_until(process: trio.Process, text: bytes) -> bytes:
    """Read the process's stderr (bounded) until it holds ``text``; what was read."""
    said = bytearray()
    with trio.fail_after(20):
        while text not in said:
            chunk = await process.stderr.receive_some()
            assert chunk, f"stderr closed before {text!r}: {bytes(said)!r}"
            said.extend(chunk)
    return bytes(said)


async def test_resume_with_nothing_to_resume_exits_zero(tmp_path: Path, sim_for) -> None:
    async with sim_for({"turns": []}) as sim:
        process = await _start(["resume", "--workspace", str(tmp_path), *_config(tmp_path, sim.base_url)], {})
        code, _, err = await _finish(process)
    assert code == 0 and b"no run to resume" in err
