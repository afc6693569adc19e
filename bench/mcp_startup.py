"""Workflow-server start-up benchmark: the time from spawning ``orchestrator mcp`` to its first answer.
Run: ``.venv/bin/python bench/mcp_startup.py [--quick]`` (see bench/README.md).

A start is: spawn the process, ``initialize``, ``tools/list`` answered — what an MCP client waits for
before it can show the server's tools. Over stdio the official client spawns the server; over HTTP the
child is spawned with ``--transport http --port 0``, its listening line is awaited and the client connects.
Each start is a fresh process on a fresh workspace. Side by side in the same rounds (order alternating):

- ``orchestrator mcp (stdio)``: this tree, its first answers recorded by an earlier start (the usual case:
  ``workflow/firstanswer.py`` answers ``initialize`` and ``tools/list`` while the SDK imports);
- ``orchestrator mcp (stdio, cold)``: the same with the record removed before each start (the first start
  after an install or an upgrade: served by the SDK, which records the answers);
- ``orchestrator mcp (http)``: ``--transport http`` (no record: the HTTP wire waits for the imports);
- ``bare SDK server`` (stdio): a one-tool server on the same official SDK, the floor any Python MCP server
  on this machine pays (interpreter, the SDK's imports, the handshake).

Printed: the median and best start of each, the ratio to the reference implementation's published figures
(m2ux/workflow-server, Node: 0.62 s stdio, 0.91 s HTTP; goal <= 1.0x) and to the bare SDK server measured here.
Never asserts on timing; exits 0 (1 only when the bench itself cannot run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2
import trio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.workflow.httpchild import http_token, spawn_http_server, stop_process, wait_listening  # noqa: E402

#: The reference's published time to first answer (seconds), per transport.
REFERENCE = {"stdio": 0.62, "http": 0.91}

BARE = """
from mcp.server.mcpserver import MCPServer
server = MCPServer("bare")

@server.tool()
async def echo(text: str) -> str:
    return text

server.run("stdio")
"""


def _env(work: Path) -> dict[str, str]:
    """A fresh workspace and key folder; the install folder (the record of the first answers) is shared."""
    workspace = work / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "WORKFLOW_DIR": str(REPO / "workflows"),
        "WORKFLOW_SERVER_KEY_DIR": str(work / "key"),
        "WORKFLOW_SERVER_INSTALL_DIR": str(work.parent / "install"),
    }


async def start_cold(work: Path) -> float:
    (work.parent / "install" / "cache" / "first-answers.json").unlink(missing_ok=True)
    took = await start_stdio(["-m", "orchestrator", "mcp"], work)
    return took


async def _first_answer(read, write) -> int:  # type: ignore[no-untyped-def]
    async with ClientSession(read, write) as session:
        await session.initialize()
        return len((await session.list_tools()).tools)


async def start_stdio(args: list[str], work: Path) -> float:
    """Seconds from spawn to the ``tools/list`` answer over stdio (the workspace is the cwd, no flags)."""
    env = _env(work)
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(work / "ws"))
    with (work / "stderr.log").open("w") as errlog:
        started = time.perf_counter()
        async with stdio_client(params, errlog=errlog) as (read, write):
            tools = await _first_answer(read, write)
            took = time.perf_counter() - started
    if tools == 0:
        raise RuntimeError(f"{args}: listed no tools")
    return took


async def start_http(work: Path) -> float:
    env = _env(work)
    log = work / "server.log"
    command = [sys.executable, "-m", "orchestrator", "mcp", "--transport", "http", "--port", "0"]
    started = time.perf_counter()
    proc = await trio.to_thread.run_sync(lambda: spawn_http_server(command, env, log, cwd=work / "ws"))
    try:
        url = await trio.to_thread.run_sync(wait_listening, proc, log)
        auth = {"Authorization": f"Bearer {http_token(env)}"}  # the token the server generated
        async with (
            httpx2.AsyncClient(headers=auth, timeout=httpx2.Timeout(60.0)) as client,
            streamable_http_client(url, http_client=client) as (read, write),
        ):
            await _first_answer(read, write)
            took = time.perf_counter() - started
    finally:
        await trio.to_thread.run_sync(stop_process, proc)
    return took


async def _bench(rounds: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bare = root / "bare.py"
        bare.write_text(BARE)
        contenders = {
            "orchestrator mcp (stdio)": lambda w: start_stdio(["-m", "orchestrator", "mcp"], w),
            "orchestrator mcp (stdio, cold)": start_cold,
            "orchestrator mcp (http)": start_http,
            "bare SDK server (stdio)": lambda w: start_stdio([str(bare)], w),
        }
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for warm in range(1):  # one unmeasured round: the OS file cache, the .pyc files
            for i, start in enumerate(contenders.values()):
                await start(root / f"warm-{warm}-{i}")
        for r in range(rounds):
            order = list(enumerate(contenders.items()))
            for i, (name, start) in order if r % 2 == 0 else reversed(order):
                times[name].append(await start(root / f"r{r}-{i}"))
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        print(f"{name:<32} median {medians[name]:.3f} s   best {min(values):.3f} s   ({len(values)} starts)")
    bare_median = medians["bare SDK server (stdio)"]
    for transport in ("stdio", "http"):
        ours = medians[f"orchestrator mcp ({transport})"]
        print(
            f"{transport}: orchestrator mcp / reference ({REFERENCE[transport]:.2f} s published) ratio: "
            f"{ours / REFERENCE[transport]:.2f}x (goal <= 1.0x)"
        )
    cold = medians["orchestrator mcp (stdio, cold)"]
    print(f"stdio, cold (first start after an install): / reference ratio: {cold / REFERENCE['stdio']:.2f}x")
    for name in ("orchestrator mcp (stdio)", "orchestrator mcp (stdio, cold)"):
        print(f"{name} / bare SDK server (side by side) ratio: {medians[name] / bare_median:.2f}x")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds (the bench test)")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    try:
        return trio.run(_bench, 3 if args.quick else args.rounds)
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        print(f"bench/mcp_startup.py: cannot run: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
