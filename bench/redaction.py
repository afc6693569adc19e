"""Secret-redaction cost benchmark. Run: ``.venv/bin/python bench/redaction.py [--quick]`` (see bench/README.md).

What a run pays for keeping secrets out of the log and the conversation when none is present (the
normal case). Whole runs of the real engine against the sim model (in this process, on loopback): one
role makes ``TURNS`` ``read_file`` calls on a ~16 KB source file, then finishes. Two contenders run
side by side, in alternating order:

- ``redacting``: the engine with a ``Redactor`` over 6 realistic secret values and the credential shapes
  (the tool-result boundary scan and the log writer's scan of every other event);
- ``plain``: the engine with an empty ``Redactor`` without shapes (both scans skipped) — the baseline.

Prints the per-turn medians and the median of the per-round ratios ``redacting/plain`` (goal <= 1.05),
plus the micro cost: one scan of 16 KB of encoded JSON for the 6 values. Never asserts on timing;
exits 0.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
import timeit
from functools import partial
from pathlib import Path

import msgspec
import trio

from orchestrator.config import Settings, load_settings
from orchestrator.config.secrets import Redactor
from orchestrator.engine.runner import RunRequest, RunServices, execute_run
from orchestrator.llm import LlmTimeouts
from orchestrator.sim import load_script, serve_sim

REPO = Path(__file__).resolve().parents[1]
SECRETS = [
    "sk-proj-6f1e0c9a2b7d4e8f9a0b1c2d3e4f5a6b",
    "kagi-0a1b2c3d4e5f6a7b8c9d",
    "Zm9vYmFyYmF6cXV4cXV1eA-token",
    "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "correct-horse-battery-staple",
    "xoxb-1234-5678-abcdefghijkl",
]
SOURCE = REPO / "src" / "orchestrator" / "engine" / "run.py"


def _script(turns: int) -> dict[str, object]:
    read = {"name": "read_file", "arguments": {"path": "module.py"}}
    finish = {"name": "finish", "arguments": {"status": "success", "summary": "read it all"}}
    return {"turns": [{"toolCalls": [read]} for _ in range(turns)] + [{"toolCalls": [finish]}]}


def _settings(root: Path, api_base: str) -> Settings:
    guild = root / "guild"
    (guild / "prompts").mkdir(parents=True)
    shutil.copytree(REPO / "guild" / "tools", guild / "tools")
    (guild / "prompts" / "reader.md").write_text("You are the reader.\n")
    manifests = sorted(f"tools/{p.name}" for p in (guild / "tools").glob("*.json"))
    roles = {"reader": {"systemPrompt": "prompts/reader.md", "tools": ["read_file", "finish"]}}
    (guild / "guild.json").write_text(json.dumps({"entryRole": "reader", "roles": roles, "tools": manifests}))
    deployment = {
        "model": {
            "apiBase": api_base,
            "name": "sim",
            "contextWindow": 1_000_000,
            "generation": {"temperature": 0.2, "maxTokens": 4096},
        },
        "executor": {
            "maxAgentDepth": 4,
            "defaultToolTimeoutSeconds": 30,
            "maxCompactionAttempts": 3,
            "contextPressureThreshold": 0.9,
        },
        "contextPolicy": {"maxToolOutputChars": 20_000},
    }
    (root / "deployment.json").write_text(json.dumps(deployment))
    return load_settings(guild, root / "deployment.json", {}, secrets_dir=root / "no-secrets")


async def _run(sim_root: str, settings: Settings, workspace: Path, redactor: Redactor, turns: int) -> float:
    """Seconds per turn of one whole run (the sim's script reset first)."""
    import httpx

    async with httpx.AsyncClient() as client:
        (await client.post(f"{sim_root}/_sim/script", json=_script(turns))).raise_for_status()
    services = RunServices(timeouts=LlmTimeouts(attempts=1), redactor=redactor, durable=False)
    started = time.perf_counter()
    await execute_run(settings, workspace, RunRequest(task="read module.py"), services)
    return (time.perf_counter() - started) / turns


async def bench(rounds: int, turns: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        async with trio.open_nursery() as nursery:
            base_url: str = await nursery.start(partial(serve_sim, load_script(json.dumps(_script(1)).encode())))
            settings = _settings(root, base_url)
            workspaces = {}
            for name in ("plain", "redacting"):
                workspaces[name] = root / name
                workspaces[name].mkdir()
                (workspaces[name] / "module.py").write_text(SOURCE.read_text()[:16_000])
            contenders = {"plain": Redactor(shapes=False), "redacting": Redactor(SECRETS)}
            sim_root = base_url.removesuffix("/v1")
            times: dict[str, list[float]] = {"plain": [], "redacting": []}
            ratios = []
            for name in ("plain", "redacting"):  # warm-up
                await _run(sim_root, settings, workspaces[name], contenders[name], 5)
            for number in range(rounds):
                await trio.sleep(1.01)  # run ids are second-resolution: one run per second per workspace
                order = ("plain", "redacting") if number % 2 == 0 else ("redacting", "plain")
                for name in order:
                    times[name].append(await _run(sim_root, settings, workspaces[name], contenders[name], turns))
                ratios.append(times["redacting"][-1] / times["plain"][-1])
            nursery.cancel_scope.cancel()
    redactor = Redactor(SECRETS)
    data = msgspec.json.encode({"content": SOURCE.read_text()[:16_000]})
    scan = timeit.timeit(lambda: redactor.found_in(data), number=2000) / 2000
    print(f"rounds: {rounds}, turns per run: {turns}, secrets: {len(SECRETS)}, read_file output: 16 KB")
    print(f"plain per turn (median):     {statistics.median(times['plain']) * 1e3:7.3f} ms")
    print(f"redacting per turn (median): {statistics.median(times['redacting']) * 1e3:7.3f} ms")
    print(f"one scan of 16 KB for {len(SECRETS)} values: {scan * 1e6:.1f} us")
    medians = statistics.median(times["redacting"]) / statistics.median(times["plain"])
    print(f"redacting/plain ratio of medians: {medians:.3f}")
    per_round = statistics.median(ratios)
    print(f"redacting/plain per-turn ratio (median of per-round ratios): {per_round:.3f} (goal <= 1.05)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few rounds (seconds), for ./dev test")
    args = parser.parse_args()
    rounds, turns = (3, 20) if args.quick else (9, 60)
    trio.run(bench, rounds, turns)


if __name__ == "__main__":
    main()
