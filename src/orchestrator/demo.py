"""``orchestrator demo``: the bundled simulated model on a free loopback port, one run through it.

Works on a fresh machine with no model endpoint: the sim answers from ``sim/scripts/demo.json``, the
shipped Guild runs against it, and the terminal shows the role tree and the streamed text live
(``orchestrator.narration``, as for ``orchestrator run``).
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

from orchestrator.engine.runner import RunServices
from orchestrator.llm import timeouts_from_env
from orchestrator.narration import Narrator
from orchestrator.sim import load_script, serve_sim

__all__ = ["demo_notes", "run_demo", "serve_demo"]


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
        narrator = Narrator()
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
