"""Workflow-server latency benchmark. Run: ``.venv/bin/python bench/mcp_calls.py`` (see bench/README.md).

Starts ``orchestrator mcp`` as a real subprocess and drives it through the official ``mcp`` client over
stdio, on the real corpus (``../shared/corpus/workflows``) when it exists, else on the project's own
``workflows/``. Prints:

- the corpus load time (in-process ``load_corpus``, median of 5; goal < 300 ms);
- the p50 and p90 client-observed latency of each tool over ``ROUNDS`` interleaved rounds, with its ratio
  to an MCP ``ping`` measured in the same rounds (the stdio transport floor: JSON-RPC framing, pipes,
  the client's and server's event loops). Goals: ``list_workflows`` < 5 ms p50, reads < 2 ms p50.

Exits 0 and never asserts on timing; 1 only when the bench itself cannot run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import yaml
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus" / "workflows"
ROUNDS = 200
WARMUP = 20

#: (workflow, planning slug, the step whose technique get_technique fetches, a resource id)
REAL = ("work-package", "bench", "detect-review-mode", "review-mode#review-comment-template")
OWN = ("code-review", "bench", None, "review-checklist")


def _text(result: Any) -> str:
    return "".join(getattr(item, "text", "") for item in result.content)


def _load_time(root: Path) -> float:
    from orchestrator.workflow.corpus import load_corpus

    times = []
    for _ in range(5):
        started = time.perf_counter()
        load_corpus(root)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def _bench(root: Path, spec: tuple[str, str, str | None, str], rounds: int, workdir: Path) -> None:
    workflow_id, slug, step, resource = spec
    workspace = workdir / "ws"
    workspace.mkdir()
    env = {
        **os.environ,
        "WORKFLOW_DIR": str(root),
        "WORKFLOW_WORKSPACE": str(workspace),
        "WORKFLOW_SERVER_KEY_DIR": str(workdir / "key"),
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "orchestrator", "mcp"], env=env)
    with (workdir / "server.log").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()

            async def call(tool: str, **args: Any) -> str:
                result = await session.call_tool(tool, args)
                text = _text(result)
                if result.is_error:
                    raise RuntimeError(f"{tool} failed: {text}")
                return text

            planning = workspace / ".engineering" / "artifacts" / "planning" / slug
            started = await call("start_session", workflow_id=workflow_id, planning_folder=str(planning))
            index = _session_index(started)
            workflow = await call("get_workflow", session_index=index)
            initial = _yaml_field(workflow, "initialActivity")
            await call("next_activity", session_index=index, activity_id=initial)
            await call("get_activity", session_index=index, context_tokens=200_000, agent_id="w1")

            reads: dict[str, Callable[[], Awaitable[Any]]] = {
                "ping (baseline)": session.send_ping,
                "discover": lambda: call("discover"),
                "list_workflows": lambda: call("list_workflows"),
                "health_check": lambda: call("health_check"),
                "get_workflow_status": lambda: call("get_workflow_status", session_index=index),
                "inspect_session": lambda: call("inspect_session", session_index=index, view="summary"),
            }
            writes: dict[str, Callable[[], Awaitable[Any]]] = {
                "get_workflow": lambda: call("get_workflow", session_index=index),
                "get_activity": lambda: call(
                    "get_activity", session_index=index, context_tokens=200_000, agent_id="w1"
                ),
                "get_resource": lambda: call("get_resource", session_index=index, resource_id=resource),
                "get_trace": lambda: call("get_trace", session_index=index),
                "record_usage": lambda: call(
                    "record_usage", session_index=index, activity=initial, usage={"input_tokens": 1}, basis="delta"
                ),
            }
            if step is not None:
                writes["get_technique"] = lambda: call("get_technique", session_index=index, step_id=step)
            print(f"client-observed over stdio, {WARMUP} warm-up rounds per phase; ratio = p50 / the phase's ping p50")
            print(f"  {'tool':<22} {'p50':>9} {'p90':>9}  {'p50 / ping':>10}  kind")
            read_p50 = await _phase(reads, rounds, "read")
            with_ping = {"ping (baseline)": session.send_ping, **writes}
            await _phase(with_ping, max(20, rounds // 4), "read + session write")
            list_p50 = read_p50["list_workflows"] * 1e3
            slowest = max(v for k, v in read_p50.items() if not k.startswith("ping")) * 1e3
            floor = read_p50["ping (baseline)"] * 1e3
            print(f"list_workflows p50: {list_p50:.2f} ms (goal < 5 ms)")
            print(f"slowest pure read p50: {slowest:.2f} ms (goal < 2 ms; the stdio ping alone: {floor:.2f} ms)")


async def _phase(contenders: dict[str, Callable[[], Awaitable[Any]]], rounds: int, kind: str) -> dict[str, float]:
    """Interleaved rounds over ``contenders`` (order alternating); prints a row each; returns the p50s."""
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for round_no in range(rounds + WARMUP):
        order = list(contenders.items())
        if round_no % 2:
            order.reverse()
        for name, run in order:
            started_at = time.perf_counter()
            await run()
            if round_no >= WARMUP:
                samples[name].append(time.perf_counter() - started_at)
    p50s = {name: statistics.median(values) for name, values in samples.items()}
    floor = p50s["ping (baseline)"]
    for name, values in samples.items():
        p90 = statistics.quantiles(values, n=10)[-1]
        label = "baseline" if name.startswith("ping") else kind
        print(f"  {name:<22} {p50s[name] * 1e3:7.2f}ms {p90 * 1e3:7.2f}ms  {p50s[name] / floor:9.2f}x  {label}")
    return p50s


def _session_index(text: str) -> str:
    return json.loads(text)["session_index"]


def _yaml_field(text: str, key: str) -> str:
    meta = text.split("\n\n---\n\n", 1)[-1]
    return yaml.safe_load(meta)[key]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"timed rounds (default {ROUNDS})")
    parser.add_argument("--own", action="store_true", help="use the project's workflows/ even if the corpus exists")
    args = parser.parse_args()
    real = CORPUS.is_dir() and not args.own
    root, spec = (CORPUS, REAL) if real else (REPO / "workflows", OWN)
    print(f"corpus: {root} ({'real public corpus' if real else 'the project’s own workflows'})")
    load = _load_time(root)
    print(f"corpus load (median of 5, in-process): {load * 1e3:.1f} ms (goal < 300 ms)")
    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as tmp:
        try:
            anyio.run(_bench, root, spec, args.rounds, Path(tmp), backend="trio")
        except Exception as exc:
            import traceback

            traceback.print_exception(exc, file=sys.stderr)
            print(f"bench failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            log = Path(tmp) / "server.log"
            if log.exists():
                print(log.read_text()[-3000:], file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
