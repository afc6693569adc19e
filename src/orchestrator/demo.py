"""``orchestrator demo``: the bundled simulated model on a free loopback port, one run through it.

Works on a fresh machine with no model endpoint: the sim answers from ``sim/scripts/demo.json``, the
shipped Guild runs against it, and the terminal shows the role tree and the streamed text live.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any

import trio

from orchestrator.engine.run import StreamDelta
from orchestrator.engine.runner import RunServices
from orchestrator.llm import timeouts_from_env
from orchestrator.runlog.events import RoleFinished, RoleStart, RunEvent, ToolCallEvent
from orchestrator.sim import load_script, serve_sim

__all__ = ["demo_notes", "one_line", "run_demo", "serve_demo"]


def _script_bytes() -> bytes:
    return resources.files("orchestrator.sim").joinpath("scripts/demo.json").read_bytes()


#: The start-up note the demo's own model address produces, and the one a sim never needs.
_API_BASE_NOTE = "ORCHESTRATOR_API_BASE overrides model.apiBase"
_NO_KEY_NOTE = "model API key: not set"


def demo_notes(notes: list[str], sim_url: str) -> list[str]:
    """The start-up notes as the demo shows them: the model is the demo's own simulated one (not an override
    the user made), and the sim needs no API key."""
    shown: list[str] = []
    for note in notes:
        if note.startswith(_API_BASE_NOTE):
            shown.append(f"model: the demo's built-in simulated model at {sim_url} (model.apiBase is not used)")
        elif note != _NO_KEY_NOTE:
            shown.append(note)
    return shown


def one_line(text: str | None, limit: int = 90) -> str:
    """``text``'s first non-empty line cut to ``limit`` characters; `` …`` marks a cut or further lines, so a
    multi-line task or summary keeps the narrated role tree one line per node."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return ""
    head = lines[0]
    if len(head) > limit:
        return head[: limit - 1].rstrip() + "…"
    return head + (" …" if len(lines) > 1 else "")


class _Narrator:
    """Prints the run as it happens: role starts and ends, tool calls, streamed content."""

    def __init__(self) -> None:
        self._streaming: str | None = None

    def _end_stream(self) -> None:
        if self._streaming is not None:
            print(file=sys.stderr)
            self._streaming = None

    def event(self, event: RunEvent) -> None:
        if isinstance(event, RoleStart):
            self._end_stream()
            p = event.payload
            print(f"{'  ' * p.depth}▶ {p.role_id} starts: {one_line(p.task)}", file=sys.stderr)
        elif isinstance(event, RoleFinished):
            self._end_stream()
            p = event.payload
            print(f"{'  ' * p.depth}■ {p.role_id} {p.status}: {one_line(p.summary)}", file=sys.stderr)
        elif isinstance(event, ToolCallEvent) and event.payload.tool not in ("agent", "finish"):
            self._end_stream()
            p = event.payload
            print(f"    · {p.role} calls {p.tool} {one_line(p.arguments, 80)}", file=sys.stderr)

    def delta(self, delta: StreamDelta) -> None:
        if delta.field != "content":
            return
        if delta.reset or self._streaming != delta.role_id:
            self._end_stream()
            self._streaming = delta.role_id
            print(f"    ✎ {delta.role_id}: ", end="", file=sys.stderr)
        print(delta.text, end="", file=sys.stderr, flush=True)


async def run_demo(
    args: argparse.Namespace,
    env: Mapping[str, str],
    *,
    settings_loader: Callable[..., Awaitable[Any]],
    execute: Callable[..., Awaitable[int]],
    request_for: Callable[..., Any],
) -> int:
    script = load_script(_script_bytes())
    workspace = Path(args.workspace).resolve()
    workspace.mkdir(parents=True, exist_ok=True)
    async with trio.open_nursery() as nursery:
        base_url = await nursery.start(serve_sim, script)
        print(f"demo: simulated model at {base_url}; workspace {workspace}", file=sys.stderr)
        discovered = ("ORCHESTRATOR_MODEL", "ORCHESTRATOR_MODEL_CONTEXT_WINDOW")
        demo_env = {k: v for k, v in env.items() if k not in discovered}
        demo_env["ORCHESTRATOR_API_BASE"] = base_url
        settings = await settings_loader(args, demo_env, shown_notes=partial(demo_notes, sim_url=base_url))
        narrator = _Narrator()
        services = RunServices(timeouts=timeouts_from_env(env), on_delta=narrator.delta, log_listeners=[narrator.event])
        code = await execute(settings, workspace, request_for(args, settings, workspace), services, args.json, env)
        nursery.cancel_scope.cancel()
    return code


async def serve_demo(args: argparse.Namespace, env: Mapping[str, str], *, serve: Callable[..., Awaitable[int]]) -> int:
    """The service on the sim, in a demo workspace, with the demo task submitted; until SIGINT/SIGTERM."""
    script = load_script(_script_bytes())
    workspace = Path(args.workspace).resolve()
    workspace.mkdir(parents=True, exist_ok=True)
    args.workspace = str(workspace)
    async with trio.open_nursery() as nursery:
        base_url = await nursery.start(serve_sim, script)
        print(f"demo: simulated model at {base_url}; workspace {workspace}", file=sys.stderr)
        discovered = ("ORCHESTRATOR_MODEL", "ORCHESTRATOR_MODEL_CONTEXT_WINDOW")
        demo_env = {k: v for k, v in env.items() if k not in discovered}
        demo_env["ORCHESTRATOR_API_BASE"] = base_url
        shown = partial(demo_notes, sim_url=base_url)
        code = await serve(args, demo_env, initial_task=args.task, shown_notes=shown)
        nursery.cancel_scope.cancel()
    return code
