"""MCP tool-source overhead benchmark. Run: ``.venv/bin/python bench/mcp_tool_calls.py [--quick]``.

The same work — counting the words of a ~2 KB text and returning ``{"words": n}`` — done two ways,
side by side in the same run, through the very callables the engine dispatches:

- ``native``: an in-process native tool (``await tool(ctx, arguments)``), the baseline;
- ``mcp stdio``: the tool served by an MCP server (this file with ``--serve``, a real subprocess on the
  official SDK, on the project's thread-free stdio wire as ``orchestrator mcp`` uses), reached through
  ``open_mcp_tools`` (``McpConnection.call``: JSON-RPC over pipes, the SDK's client session, result
  translation);
- ``mcp sdkwire``: the same server on the SDK's default stdio wire (``run_stdio_async``: worker-thread
  file wrappers), as most third-party Python servers run;
- ``mcp http``: the same server over Streamable HTTP (Hypercorn, trio worker, in this process);
- ``stdio ping``: an MCP ``ping`` on the stdio session — the SDK's own round-trip floor, which shows how
  much of the overhead is the transport and the SDK rather than our client layer.

Each call runs under a ``trio.move_on_after`` like the engine's tool budget. Rounds interleave blocks of
calls per contender (order alternating). Prints p50/p90 per call, the per-call overhead over native
(p50 difference; goal <= 2 ms on stdio) and the ratio of medians. Never asserts on timing; exits 0
(1 only when the bench itself cannot run).
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

TEXT = " ".join(f"word{i % 97}" for i in range(300))  # ~2 KB


def count_words(text: str) -> int:
    return len(text.split())


class Count(BaseModel):
    words: int


def build_server() -> Any:
    """The MCP server offering ``words`` (the same work as the native baseline)."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench")

    @server.tool()
    async def words(text: str) -> Count:
        """Count the words of a text."""
        return Count(words=count_words(text))

    return server


def serve_stdio(sdk_wire: bool) -> None:
    import anyio

    from orchestrator.workflow import stdio

    server = build_server()
    if sdk_wire:
        anyio.run(server.run_stdio_async, backend="trio")
    else:
        anyio.run(stdio.serve_stdio, server, backend="trio")


def _settings(root: Path, servers: dict[str, Any]) -> Any:
    from orchestrator.config import load_settings

    guild = root / "guild"
    (guild / "prompts").mkdir(parents=True)
    (guild / "tools").mkdir()
    (guild / "prompts" / "lead.md").write_text("You are the lead.\n")
    (guild / "tools" / "finish.json").write_text((REPO / "guild" / "tools" / "finish.json").read_text())
    tools = ["finish", *(f"mcp:{name}/words" for name in servers)]
    (guild / "guild.json").write_text(
        json.dumps(
            {
                "entryRole": "lead",
                "roles": {"lead": {"systemPrompt": "prompts/lead.md", "tools": tools}},
                "tools": ["tools/finish.json"],
            }
        )
    )
    deployment = root / "deployment.json"
    deployment.write_text(
        json.dumps(
            {
                "model": {"apiBase": "http://127.0.0.1:9/v1", "generation": {"temperature": 0, "maxTokens": 16}},
                "executor": {"maxAgentDepth": 2, "defaultToolTimeoutSeconds": 30, "maxCompactionAttempts": 1},
                "contextPolicy": {"maxToolOutputChars": 4000},
                "mcpServers": servers,
            }
        )
    )
    return load_settings(guild, deployment, {}, secrets_dir=root / "no-secrets")


def _pinger(connection: Any) -> Callable[[Any, dict[str, Any]], Awaitable[Any]]:
    """The SDK's own floor: an MCP ``ping`` round trip on the same stdio session."""
    from orchestrator.tools.base import success

    async def ping(ctx: Any, arguments: dict[str, Any]) -> Any:
        return success({}) if await connection.ping() else None

    return ping


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _bench(rounds: int, block: int, warmup: int) -> int:
    import trio
    from hypercorn.config import Config
    from hypercorn.trio import serve

    from orchestrator.conversation import ToolResult
    from orchestrator.mcpclient import open_mcp_tools
    from orchestrator.tools.base import ToolContext, success

    async def native(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        return success({"words": count_words(str(arguments["text"]))})

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        async with trio.open_nursery() as nursery:
            config = Config()
            config.bind = ["127.0.0.1:0"]
            config.accesslog = None
            config.errorlog = None
            binds = await nursery.start(serve, build_server().streamable_http_app(), config)
            servers = {
                "stdio": {"command": sys.executable, "args": [str(Path(__file__).resolve()), "--serve"]},
                "sdkwire": {"command": sys.executable, "args": [str(Path(__file__).resolve()), "--serve-sdk-wire"]},
                "http": {"url": f"{binds[0]}/mcp"},
            }
            settings = _settings(root, servers)
            async with open_mcp_tools(settings) as tools:
                if isinstance(tools, list):
                    print("mcp_tool_calls: the MCP servers did not start:", *tools, sep="\n  ", file=sys.stderr)
                    return 1
                ctx = ToolContext(workspace=root, timeout_seconds=30.0)
                contenders: dict[str, Callable[[ToolContext, dict[str, Any]], Awaitable[ToolResult]]] = {
                    "native": native,
                    "mcp stdio": tools.native_tools["stdio__words"],
                    "mcp sdkwire": tools.native_tools["sdkwire__words"],
                    "mcp http": tools.native_tools["http__words"],
                    "stdio ping": _pinger(tools.connections["stdio"]),
                }
                arguments = {"text": TEXT}
                expected = count_words(TEXT)
                for tool in contenders.values():
                    for _ in range(warmup):
                        result = await tool(ctx, arguments)
                        assert result.kind == "success" and result.data in ({"words": expected}, {}), result
                times: dict[str, list[float]] = {name: [] for name in contenders}
                names = list(contenders)
                for index in range(rounds):
                    order = names if index % 2 == 0 else names[::-1]
                    for name in order:
                        tool = contenders[name]
                        for _ in range(block):
                            start = time.perf_counter()
                            with trio.move_on_after(30):
                                await tool(ctx, arguments)
                            times[name].append(time.perf_counter() - start)
            nursery.cancel_scope.cancel()
    base = statistics.median(times["native"])
    print(f"calls per contender: {rounds * block} ({rounds} rounds x {block}), ~{len(TEXT)} chars of arguments")
    for name, samples in times.items():
        p50, p90 = statistics.median(samples), _pct(samples, 0.9)
        print(f"  {name:<11} p50 {p50 * 1e3:8.3f} ms   p90 {p90 * 1e3:8.3f} ms")
    floor = statistics.median(times["stdio ping"])
    print(
        f"the SDK's stdio round-trip floor (ping) p50: {floor * 1e3:.3f} ms; a stdio call over that floor: "
        f"{(statistics.median(times['mcp stdio']) - floor) * 1e3:.3f} ms"
    )
    for name in ("mcp stdio", "mcp sdkwire", "mcp http"):
        p50 = statistics.median(times[name])
        goal = " (goal <= 2 ms)" if name == "mcp stdio" else ""
        print(
            f"{name} overhead per call: {(p50 - base) * 1e3:.3f} ms{goal}; ratio of medians vs native: {p50 / base:.1f}"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds: fewer rounds")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-sdk-wire", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.disable(logging.INFO)  # the SDK and httpx2 log every request at INFO
    if args.serve or args.serve_sdk_wire:
        serve_stdio(sdk_wire=args.serve_sdk_wire)
        return 0
    import trio

    rounds, block, warmup = (4, 10, 5) if args.quick else (30, 20, 30)
    return trio.run(_bench, rounds, block, warmup)


if __name__ == "__main__":
    sys.exit(main())
