"""``orchestrator sim-model`` as a subprocess: port file, serving, and a clean exit on SIGTERM/SIGINT."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import trio
from tests.sim.simkit import body, events_of

ENTRY = "import sys; from orchestrator.sim.cli import main; sys.exit(main(sys.argv[1:]))"


def _command(*args: str) -> list[str]:
    return [sys.executable, "-c", ENTRY, *args]


async def _wait_for_port(port_file: Path, process: trio.Process) -> int:
    """Poll for the port file: a bounded loop of short sleeps (the CLI gives no other readiness signal)."""
    for _ in range(200):
        if port_file.exists():
            return int(port_file.read_text())
        assert process.poll() is None, "sim-model exited before listening"
        await trio.sleep(0.05)
    raise AssertionError("sim-model did not write its port file within 10 s")


async def _read_all(stream: trio.abc.ReceiveStream | None) -> str:
    assert stream is not None
    data = b""
    async for chunk in stream:
        data += chunk
    return data.decode()


@asynccontextmanager
async def _sim_process(*args: str) -> AsyncIterator[trio.Process]:
    process = await trio.lowlevel.open_process(_command(*args), stderr=subprocess.PIPE)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        with trio.move_on_after(5):
            await process.wait()


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
async def test_serves_then_exits_zero_on_signal(tmp_path: Path, stop_signal: signal.Signals) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"content": "from the cli"}]}))
    port_file = tmp_path / "run" / "port"
    port_file.parent.mkdir()
    async with _sim_process("--script", str(script), "--port", "0", "--port-file", str(port_file)) as process:
        port = await _wait_for_port(port_file, process)
        async with httpx.AsyncClient(timeout=10) as client:
            response = await client.post(f"http://127.0.0.1:{port}/v1/responses", json=body())
        final = events_of(response)[-1][1]["response"]
        assert final["output"][0]["content"][0]["text"] == "from the cli"
        process.send_signal(stop_signal)
        with trio.fail_after(10):
            assert await process.wait() == 0
        stderr = await _read_all(process.stderr)
    assert f"sim-model listening on http://127.0.0.1:{port}/v1" in stderr
    assert [p.name for p in port_file.parent.iterdir()] == ["port"]  # the temp file was renamed away


async def test_without_a_script_every_request_is_exhausted(tmp_path: Path) -> None:
    port_file = tmp_path / "port"
    async with _sim_process("--port-file", str(port_file)) as process:
        port = await _wait_for_port(port_file, process)
        async with httpx.AsyncClient(timeout=10) as client:
            response = await client.post(f"http://127.0.0.1:{port}/v1/responses", json=body("anyone?"))
        assert response.status_code == 500 and "anyone?" in response.text
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(10):
            assert await process.wait() == 0


async def test_bad_script_exits_2_naming_the_key(tmp_path: Path) -> None:
    script = tmp_path / "bad.json"
    script.write_text(json.dumps({"turns": [{"fial": {"status": 503}}]}))
    with trio.fail_after(20):
        result = await trio.run_process(_command("--script", str(script)), capture_stderr=True, check=False)
    assert result.returncode == 2
    assert "turns[0].fial" in result.stderr.decode()
