"""One Foundry optimization step end to end against the real llama-server, SmolLM2 as both the task
model and the reflection model: the seed is evaluated, the reflection model is asked once, the child
candidate is tried, and the results folder is valid whatever the tiny model scored.

The suite is one benchmark (write a file with a given token) and ``--budget 2 --repeats 1``: the seed's
evaluation is one run, so gepa makes exactly one iteration (the parent's minibatch from the cache, one
reflection, the child's run) and stops. The token is arbitrary so that SmolLM2 practically never passes:
gepa skips reflection on a minibatch it already solves perfectly.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio
from tests.foundry.foundry_fixtures import clean_env, make_guild
from tests.helpers import REPO, write_deployment
from tests.realmodel.llama_cache import real_model
from tests.realmodel.llama_server import QWEN25, TEMPERATURE, llama_server, rewriting_relay
from tests.slowness import budget

#: the relay's cap on any answer's tokens (the reflection model asks for up to 8192, and SmolLM2 rambles on)
MAX_ANSWER_TOKENS = 160


def _capped(index: int, body: dict[str, Any]) -> dict[str, Any]:
    return {"max_output_tokens": min(int(body.get("max_output_tokens") or MAX_ANSWER_TOKENS), MAX_ANSWER_TOKENS)}


def _suite(root: Path) -> Path:
    bench = root / "suite" / "write_token"
    bench.mkdir(parents=True)
    (bench / "README.md").write_text("Write the file token.txt containing exactly Q7-ZEBRA-311.\n")
    spec = {
        "taskType": "quick_fix",
        "description": "Create the file token.txt whose only content is the line Q7-ZEBRA-311.",
        "validation": {"command": "cat token.txt", "expectedStdoutContains": "Q7-ZEBRA-311", "timeoutSeconds": 20},
    }
    (bench / "eval.json").write_text(json.dumps(spec))
    return root / "suite"


async def _orchestrator(*args: str, seconds: float) -> subprocess.CompletedProcess[bytes]:
    with trio.fail_after(seconds):
        return await trio.run_process(
            [sys.executable, "-m", "orchestrator", *args],
            env=clean_env(),
            cwd=REPO,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )


async def test_one_step_with_smollm2_as_task_and_reflection_model(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    guild = make_guild(tmp_path)
    out = tmp_path / "out"
    async with (
        llama_server(tmp_path, template=QWEN25) as server,
        rewriting_relay(server.root, _capped) as relay,
    ):
        model = {
            "name": str(real_model().model),
            "contextWindow": 8192,
            "generation": {"temperature": TEMPERATURE, "maxTokens": 128},
        }
        deployment = write_deployment(tmp_path / "deployment.json", relay.base_url, model=model)
        done = await _orchestrator(
            "foundry",
            str(suite),
            "--guild",
            str(guild),
            "--deployment",
            str(deployment),
            "--budget",
            "2",
            "--repeats",
            "1",
            "--effort",
            "quick",
            "--run-timeout",
            "60",
            "--seed",
            "0",
            "--out",
            str(out),
            "--json",
            seconds=budget(150),
        )
        stderr = done.stderr.decode(errors="replace")
        assert done.returncode == 0, f"{stderr}\n--- llama-server ---\n{server.log()}"
    summary = json.loads(done.stdout)
    assert summary == json.loads((out / "summary.json").read_text())
    assert summary["status"] == "finished" and "Traceback" not in stderr
    seed = summary["candidates"][0]
    assert seed["parent"] is None and seed["score"]["runs"] == 1, "the seed was evaluated"
    assert list((out / "cache" / seed["id"] / "write_token").glob("*.json"))
    assert list((out / "reflections").glob("*.json")), "the reflection model was asked"
    proposed = [d.name for d in (out / "cache").iterdir() if d.name != seed["id"]]
    assert len(proposed) == 1, "the reflection's candidate ran on the minibatch"
    assert summary["evaluations"] == summary["runs"] == 2 and summary["metricCalls"] >= 2
    check = await _orchestrator(
        "check", "--no-probe", "--guild", str(out / "best-guild"), "--deployment", str(deployment), seconds=budget(30)
    )
    assert check.returncode == 0, check.stderr.decode(errors="replace")
