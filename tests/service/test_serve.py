"""``service/serve.py``: the printed links (the rest of ``serve_main`` runs in the HTTP lifecycle tests)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import trio
from tests.helpers import REPO
from tests.service.server import child_env

from orchestrator.service.serve import open_link, replay_link


def test_open_link_carries_the_token_and_opens_wildcards_through_loopback() -> None:
    assert open_link("http://127.0.0.1:8080", "tok") == "http://127.0.0.1:8080/?token=tok"
    assert open_link("http://0.0.0.0:8080", None) == "http://127.0.0.1:8080"
    assert open_link("http://[::]:81", "t") == "http://[::1]:81/?token=t"


def test_replay_link_routes_to_the_runs_replay() -> None:
    """Issue 18, problem 10: the demo's link lands on its run's replay, with or without a token."""
    run = "run-20260101-000000"
    assert (
        replay_link("http://127.0.0.1:8080/?token=tok", run) == f"http://127.0.0.1:8080/?token=tok#watch/{run}/replay"
    )
    assert replay_link("http://127.0.0.1:8080", run) == f"http://127.0.0.1:8080/#watch/{run}/replay"
    assert replay_link("http://h:1", "a/b") == "http://h:1/#watch/a%2Fb/replay"


async def test_the_demo_prints_its_links_on_stdout_and_its_notes_on_stderr(tmp_path: Path) -> None:
    """What to open goes to stdout, the start-up notes to stderr; the sim's own address is not an
    "override" the user made, and the sim's missing API key is not mentioned."""
    out_path, err_path, port_file = tmp_path / "out.txt", tmp_path / "err.txt", tmp_path / "port"
    args = ["demo", "--port", "0", "--port-file", str(port_file), "--workspace", str(tmp_path / "ws")]
    with out_path.open("wb") as out, err_path.open("wb") as err:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "orchestrator", *args], cwd=REPO, env=child_env(), stdout=out, stderr=err
        )
    try:
        with trio.fail_after(60):
            while "watch the demo run" not in out_path.read_text():
                assert process.poll() is None, err_path.read_text()
                await trio.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    stdout, stderr = out_path.read_text(), err_path.read_text()
    port = port_file.read_text().strip()
    assert f"orchestrator: open http://127.0.0.1:{port}/?token=" in stdout and "serving on" in stdout
    assert "open http" not in stderr and "serving on" not in stderr
    assert "Guild: " in stderr and "model: the demo's built-in simulated model at" in stderr
    assert "ORCHESTRATOR_API_BASE overrides" not in stderr and "model API key" not in stderr
