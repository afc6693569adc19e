"""Workflow-server benchmark: initialize, reads and session writes, before/after, over stdio and HTTP.
Run: ``.venv/bin/python bench/mcp_calls.py [--quick]`` (see bench/README.md).

Three servers run side by side in the same rounds, each a real ``orchestrator mcp`` subprocess driven by
the official ``mcp`` client:

- **before (stdio)**: the code at ``--baseline`` (default: the commit this branch started from, exported
  with ``git archive``) — the full ``orchestrator.cli`` import on start, the corpus loaded before serving,
  three fsynced files per session save;
- **after (stdio)** and **after (http)**: this tree — ``orchestrator mcp`` skips the service's CLI imports,
  the corpus loads while the client's ``initialize`` is answered, one fsynced file per save; HTTP is the
  stateless Streamable HTTP transport on hypercorn's trio worker.

Printed: the time from spawning a server to a finished ``initialize`` (HTTP: spawn, listen, initialize),
then p50/p90 of each read and session-writing tool (every server takes its turn in every round, order
alternating), with the after/before ratio and each server's own ``ping`` as its transport floor. On the
real corpus (``../shared/corpus/workflows``) when present, else the project's ``workflows/``.
``--quick`` (a few seconds of calls; the spawns dominate) is what the bench test runs. Exits 0 and never
asserts on timing; 1 only when the bench itself cannot run.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx2
import trio
import yaml
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the HTTP child-process helpers live with the workflow tests
from tests.workflow.httpchild import http_token, spawn_http_server, stop_process, wait_listening  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus" / "workflows"
BASELINE = "e47e4c1"  # main when issue 15 started: the "before" side

#: (workflow, the step whose technique get_technique fetches)
REAL = ("work-package", "detect-review-mode")
OWN = ("code-review", None)


def _text(result: Any) -> str:
    return "".join(getattr(item, "text", "") for item in result.content)


def export_baseline(rev: str, dest: Path) -> Path | None:
    """``src/`` at ``rev`` under ``dest`` (``git archive``); ``None`` when git or the revision is missing."""
    try:
        data = subprocess.run(
            ["git", "-C", str(REPO), "archive", rev, "src"], capture_output=True, check=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(dest, filter="data")
    return dest / "src"


class Server:
    """One server process and a client session to it, on its own workspace."""

    def __init__(self, label: str, src: Path, transport: str, root: Path, workdir: Path) -> None:
        self.label, self.src, self.transport, self.root = label, src, transport, root
        self.workdir = workdir
        self.workspace = workdir / "ws"
        self.workspace.mkdir(parents=True)
        self.env = {
            **os.environ,
            "PYTHONPATH": str(src),
            "WORKFLOW_DIR": str(root),
            "WORKFLOW_WORKSPACE": str(self.workspace),
            "WORKFLOW_SERVER_KEY_DIR": str(workdir / "key"),
        }
        self.session: ClientSession | None = None
        self.index = ""
        self.initial = ""
        self.starts = 0

    def args(self) -> list[str]:
        extra = ["--transport", "http", "--port", "0"] if self.transport == "http" else []
        return ["-m", "orchestrator", "mcp", *extra]

    async def open(self, stack: AsyncExitStack) -> float:
        """Spawn, connect and initialize; returns the seconds that took."""
        started = time.perf_counter()
        if self.transport == "stdio":
            params = StdioServerParameters(command=sys.executable, args=self.args(), env=self.env)
            errlog = stack.enter_context((self.workdir / "server.log").open("w"))
            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
        else:
            log = self.workdir / "server.log"
            proc = await trio.to_thread.run_sync(spawn_http_server, [sys.executable, *self.args()], self.env, log)
            stack.callback(stop_process, proc)
            url = await trio.to_thread.run_sync(wait_listening, proc, log)
            auth = {"Authorization": f"Bearer {http_token(self.env)}"}  # the token the server generated
            client = await stack.enter_async_context(httpx2.AsyncClient(headers=auth, timeout=httpx2.Timeout(60.0)))
            read, write = await stack.enter_async_context(streamable_http_client(url, http_client=client))
        self.session = await stack.enter_async_context(ClientSession(read, write))
        await self.session.initialize()
        return time.perf_counter() - started

    async def call(self, tool: str, **args: Any) -> str:
        assert self.session is not None
        result = await self.session.call_tool(tool, args)
        text = _text(result)
        if result.is_error:
            raise RuntimeError(f"{self.label}: {tool} failed: {text}")
        return text

    async def prepare(self, workflow_id: str) -> None:
        self.index = json.loads(await self.start_one(workflow_id))["session_index"]
        workflow = await self.call("get_workflow", session_index=self.index)
        self.initial = yaml.safe_load(workflow.split("\n\n---\n\n", 1)[-1])["initialActivity"]
        await self.call("next_activity", session_index=self.index, activity_id=self.initial)
        await self.call("get_activity", session_index=self.index, context_tokens=200_000, agent_id="w1")

    async def start_one(self, workflow_id: str) -> str:
        self.starts += 1
        folder = self.workspace / ".engineering" / "artifacts" / "planning" / f"bench-{self.starts}"
        return await self.call("start_session", workflow_id=workflow_id, planning_folder=str(folder))


SAVE_LOOP = """
import json, sys, time
from pathlib import Path
from orchestrator.workflow.session import SessionStore, load_or_create_key, new_session_file, planning_root, touch
try:
    from orchestrator.workflow.serverconfig import load_workflow_settings
except ImportError:  # the baseline revision: the module was workflow/settings.py then
    from orchestrator.workflow.settings import load_workflow_settings
work, n = Path(sys.argv[1]), int(sys.argv[2])
settings = load_workflow_settings({"WORKFLOW_WORKSPACE": str(work), "WORKFLOW_SERVER_KEY_DIR": str(work / "k"),
                                   "TMPDIR": str(work / "t")}, {})
store = SessionStore(settings, load_or_create_key(settings.key_dir))
folder = planning_root(settings) / "save-bench"
if not (folder / "session.json").exists():
    store.write(folder, new_session_file(session_index=store.root_index(folder), workflow_id="w",
                                         workflow_version="1.0.0", variables={"notes": "x" * 20000}))
out = []
for _ in range(n):
    handle = store.open_folder(folder)
    started = time.perf_counter()
    store.save(handle, touch(handle.state, now=time.time()))
    out.append(time.perf_counter() - started)
print(json.dumps(out))
"""


def save_samples(src: Path, work: Path, n: int) -> list[float]:
    """``n`` timed ``SessionStore.save`` calls (one session, ~20 KB) in a process running the code at ``src``."""
    work.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", SAVE_LOOP, str(work), str(n)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(src)},
        timeout=300,
        check=True,
    )
    return [float(x) for x in json.loads(done.stdout)]


async def _initialize_samples(make: Callable[[], Server], samples: int) -> list[float]:
    out = []
    for _ in range(samples):
        async with AsyncExitStack() as stack:
            out.append(await make().open(stack))
    return out


def _row(name: str, values: dict[str, list[float]], labels: list[str], before: str | None) -> str:
    cells = []
    for label in labels:
        data = values.get(label) or []
        if data:
            p90 = statistics.quantiles(data, n=10)[-1] if len(data) >= 2 else data[0]
            cells.append(f"{statistics.median(data) * 1e3:8.2f} / {p90 * 1e3:7.2f}")
        else:
            cells.append(f"{'n/a':>18}")
    ratio = ""
    after = values.get("after stdio")
    if before is not None and values.get(before) and after:
        ratio = f"{statistics.median(after) / statistics.median(values[before]):6.2f}x"
    return f"  {name:<22} " + "  ".join(cells) + f"  {ratio}"


async def _phase(
    servers: list[Server], tools: dict[str, Callable[[Server], Awaitable[Any]]], rounds: int, warmup: int
) -> dict[str, dict[str, list[float]]]:
    samples: dict[str, dict[str, list[float]]] = {tool: {s.label: [] for s in servers} for tool in tools}
    for round_no in range(rounds + warmup):
        order = servers if round_no % 2 == 0 else list(reversed(servers))
        for tool, run in tools.items():
            for server in order:
                started = time.perf_counter()
                await run(server)
                if round_no >= warmup:
                    samples[tool][server.label].append(time.perf_counter() - started)
    return samples


async def bench(
    root: Path, spec: tuple[str, str | None], before_src: Path | None, rounds: int, init_samples: int, workdir: Path
) -> None:
    workflow_id, step = spec
    here = REPO / "src"
    plan = [("after stdio", here, "stdio"), ("after http", here, "http")]
    if before_src is not None:
        plan.insert(0, ("before stdio", before_src, "stdio"))
    labels = [label for label, _, _ in plan]
    counter = iter(range(10_000))

    def maker(label: str, src: Path, transport: str) -> Callable[[], Server]:
        return lambda: Server(label, src, transport, root, workdir / f"{label.replace(' ', '-')}-{next(counter)}")

    init: dict[str, list[float]] = {label: [] for label in labels}
    for sample in range(init_samples):  # interleaved, order alternating: the load on the machine drifts
        for label, src, transport in plan if sample % 2 == 0 else list(reversed(plan)):
            init[label] += await _initialize_samples(maker(label, src, transport), 1)
    async with AsyncExitStack() as stack:
        servers = [maker(label, src, transport)() for label, src, transport in plan]
        for server in servers:
            init[server.label].append(await server.open(stack))
            await server.prepare(workflow_id)
        before = "before stdio" if before_src is not None else None
        header = "  ".join(f"{label + ' p50 / p90 ms':>18}" for label in labels)
        print(f"\n  {'':<22} {header}  after/before (stdio p50)")
        print(_row("initialize (spawn→ready)", init, labels, before))

        def tool(name: str, **args: Any) -> Callable[[Server], Awaitable[Any]]:
            return lambda s: s.call(name, session_index=s.index, **args)

        reads: dict[str, Callable[[Server], Awaitable[Any]]] = {
            "ping (floor)": lambda s: s.session.send_ping(),  # type: ignore[union-attr]
            "list_workflows": lambda s: s.call("list_workflows"),
            "get_workflow_status": tool("get_workflow_status"),
            "inspect_session": tool("inspect_session", view="summary"),
        }
        writes: dict[str, Callable[[Server], Awaitable[Any]]] = {
            "start_session": lambda s: s.start_one(workflow_id),
            "next_activity": lambda s: s.call(
                "next_activity", session_index=s.index, activity_id=s.initial, step_manifest=[]
            ),
            "get_activity": tool("get_activity", context_tokens=200_000, agent_id="w1"),
            "record_usage": lambda s: s.call(
                "record_usage", session_index=s.index, activity=s.initial, usage={"input_tokens": 1}, basis="delta"
            ),
        }
        if step is not None:
            writes["get_technique"] = tool("get_technique", step_id=step)
        warmup = max(2, rounds // 10)
        print("  reads")
        for name, values in (await _phase(servers, reads, rounds, warmup)).items():
            print(_row(name, values, labels, before))
        print("  session writes")
        for name, values in (await _phase(servers, writes, max(5, rounds // 4), warmup)).items():
            print(_row(name, values, labels, before))
        saves: dict[str, list[float]] = {"before stdio": [], "after stdio": []}
        for _turn in range(2 if rounds < 50 else 6):  # alternating batches, same machine, same moment
            for label, src in ([("before stdio", before_src)] if before_src else []) + [("after stdio", here)]:
                saves[label] += await trio.to_thread.run_sync(
                    save_samples, src, workdir / f"saves-{label.replace(' ', '-')}", max(5, rounds // 6)
                )
        print("  in-process (no transport)")
        print(_row("SessionStore.save", saves, labels, before))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few rounds on the project's workflows (seconds)")
    parser.add_argument("--rounds", type=int, default=120, help="timed rounds of the read phase (default 120)")
    parser.add_argument("--init", type=int, default=5, help="extra initialize samples per server (default 5)")
    parser.add_argument("--own", action="store_true", help="use the project's workflows/ even if the corpus exists")
    parser.add_argument("--baseline", default=BASELINE, help=f"git revision of the 'before' side ({BASELINE})")
    args = parser.parse_args(argv)
    rounds, init_samples = (12, 0) if args.quick else (args.rounds, args.init)
    real = CORPUS.is_dir() and not (args.own or args.quick)
    root, spec = (CORPUS, REAL) if real else (REPO / "workflows", OWN)
    print(
        f"corpus: {root} ({'the real public corpus' if real else 'the project’s own workflows'}); "
        f"{rounds} read rounds, {init_samples + 1} initialize samples per server"
    )
    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as tmp:
        before_src = export_baseline(args.baseline, Path(tmp) / "baseline")
        if before_src is None:
            print(f"(no 'before' side: git archive {args.baseline} failed)")
        else:
            print(f"before = {args.baseline} (git archive), after = this tree")
        try:
            trio.run(bench, root, spec, before_src, rounds, init_samples, Path(tmp))
        except Exception as exc:
            import traceback

            traceback.print_exception(exc, file=sys.stderr)
            print(f"bench failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            for log in Path(tmp).glob("*/server.log"):
                print(f"--- {log}\n{log.read_text()[-2000:]}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
