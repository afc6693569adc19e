"""A prompt-sensitive benchmark suite for the Foundry, built in a test's temporary folder.

The suite's sim solutions solve a benchmark only when the orchestrator's system prompt contains
``PHRASE`` (the sim's ``expect.systemContains``); the seed Guild's prompt does not. A second sim plays
the reflection model: asked about the orchestrator's prompt, it answers with that prompt plus the phrase
in a fenced block, as gepa's default proposer expects.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.helpers import write_deployment, write_guild

if TYPE_CHECKING:
    from orchestrator.foundry.job import RunJob

PHRASE = "Always write done.txt before you finish."
#: what the reflection sim proposes when nothing should help
USELESS = "Think carefully."


def make_guild(root: Path) -> Path:
    return write_guild(root / "guild", {"orchestrator": ["run_shell", "finish"]})


def _finish(status: str, summary: str) -> dict[str, Any]:
    return {"name": "finish", "arguments": {"status": status, "summary": summary}}


def solution(phrase: str, marker: str, *, delay_ms: int = 0) -> dict[str, Any]:
    """The scripted model of one benchmark: writes ``<marker>.txt`` only when the prompt has ``phrase``."""
    slow: dict[str, Any] = {"fail": {"stallBeforeHeadersMs": delay_ms}} if delay_ms else {}
    return {
        "model": "sim-foundry",
        "contextWindow": 32768,
        "turns": [
            {
                "expect": {"systemContains": phrase, "lastInputContains": "VERIFIED-42"},
                "reusable": True,
                "toolCalls": [_finish("success", f"{marker}.txt written")],
                **slow,
            },
            {
                "expect": {"systemContains": phrase},
                "reusable": True,
                "toolCalls": [
                    {
                        "name": "run_shell",
                        "arguments": {"command": f'echo ok > {marker}.txt && echo "VERIFIED-$((6*7))"'},
                    }
                ],
                **slow,
            },
            {"reusable": True, "toolCalls": [_finish("error", "I was not told what to write")], **slow},
        ],
    }


def make_suite(root: Path, count: int = 1, *, phrase: str = PHRASE, delay_ms: int = 0) -> Path:
    """``count`` benchmarks ``bench_<i>``, each asking for ``out_<i>.txt``."""
    suite = root / "suite"
    for index in range(count):
        bench = suite / f"bench_{index}"
        bench.mkdir(parents=True)
        marker = f"out_{index}"
        (bench / "README.md").write_text(f"Write {marker}.txt.\n")
        spec = {
            "taskType": "quick_fix",
            "description": f"Write the file {marker}.txt.",
            "validation": {
                "command": f"test -f {marker}.txt && echo FILE-{index}-OK",
                "expectedStdoutContains": f"FILE-{index}-OK",
                "timeoutSeconds": 20,
            },
        }
        (bench / "eval.json").write_text(json.dumps(spec))
        (bench / "sim-solution.json").write_text(json.dumps(solution(phrase, marker, delay_ms=delay_ms)))
    return suite


def reflection_script(addition: str = PHRASE) -> dict[str, Any]:
    """The reflection model: the orchestrator's prompt plus ``addition``, in a fenced block."""
    return {
        "model": "sim-reflection",
        "turns": [
            {
                "expect": {"inputContains": "You are the orchestrator."},
                "reusable": True,
                "content": f"Here is the new instruction:\n```\nYou are the orchestrator. {addition}\n```\n",
            },
            {"reusable": True, "content": "```\nDo the task with the tools you have.\n```"},
        ],
    }


def deployment(root: Path) -> Path:
    return write_deployment(root / "deployment.json", "http://127.0.0.1:9/v1")


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    env["ORCHESTRATOR_LLM_BACKOFF_SECONDS"] = "0.01"
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def sim_job(root: Path, prompt: str) -> RunJob:
    """The Dask job of one run of ``bench_0`` of a one-benchmark suite under ``root``, the orchestrator's
    prompt ``prompt``, the model the benchmark's sim solution."""
    from orchestrator.foundry.job import RunJob, pack_tree
    from orchestrator.foundry.runner import copy_benchmark

    suite = make_suite(root)
    guild = make_guild(root)
    (guild / "prompts" / "orchestrator.md").write_text(prompt)
    bench = suite / "bench_0"
    copy = root / "copy"
    copy_benchmark(bench, copy)
    return RunJob(
        candidate="c1",
        benchmark="bench_0",
        repeat=0,
        guild_files=pack_tree(guild),
        bench_files=pack_tree(copy),
        eval_json=(bench / "eval.json").read_bytes(),
        deployment=deployment(root).read_bytes(),
        sim_script=(bench / "sim-solution.json").read_bytes(),
    )


def sim_run_archive(root: Path) -> bytes:
    """The run folder of one real run (the sim model solving ``bench_0``) as the gzipped tar a worker sends."""
    from orchestrator.foundry.job import decode_outcome, encode_job, execute_job

    outcome = decode_outcome(execute_job(encode_job(sim_job(root, f"You are the orchestrator. {PHRASE}\n"))))
    assert outcome.status == "pass" and outcome.archive, outcome.reasons
    return outcome.archive


def write_search(folder: Path, *, improved: bool = True, archive: bytes = b"") -> Path:
    """A finished Foundry results folder (``foundry.json``, ``summary.json``, ``candidates/``) scored from a real cache:
    the seed 0/4, a candidate changing the orchestrator's prompt 4/4 (or 1/4 when not ``improved``). With
    ``archive`` (``sim_run_archive``), every run has that run folder under ``runs/``."""
    from orchestrator.foundry.candidate import candidate_id
    from orchestrator.foundry.evalcache import EvalCache
    from orchestrator.foundry.job import RunOutcome
    from orchestrator.foundry.results import Lineage, build_summary, write_candidate, write_summary

    seed = {"prompt:prompts/orchestrator.md": "You are the orchestrator.\n", "tool:finish": "End your work."}
    better = seed | {"prompt:prompts/orchestrator.md": f"You are the orchestrator. {PHRASE}\n"}
    folder.mkdir(parents=True, exist_ok=True)
    cache = EvalCache(folder)
    passes = [True] * 4 if improved else [True, False, False, False]
    for candidate, results in ((seed, [False] * 4), (better, passes)):
        for repeat, passed in enumerate(results):
            cache.put(
                candidate_id(candidate),
                "bench_0",
                repeat,
                RunOutcome(status="pass" if passed else "fail", archive=archive),
            )
    summary = build_summary(
        lineage=Lineage([seed, better], [None, 0]),
        benchmarks=["bench_0"],
        repeats=4,
        cache=cache,
        problems={},
        status="finished",
        head={"suitePath": str(folder.parent.parent), "guildPath": "/guild", "budget": 20, "seed": 0},
        metric_calls=14,
    )
    write_summary(folder, summary)
    for candidate in (seed, better):
        write_candidate(folder, candidate, seed, [])
    (folder / "foundry.json").write_text("{}")
    return folder
