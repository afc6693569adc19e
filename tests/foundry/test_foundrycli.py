"""``orchestrator foundry`` as a real process: the JSON summary, ``check`` on best-guild/, bad input, and a
driver killed with SIGKILL (or interrupted with SIGINT) mid-search that ``--resume`` finishes without
running a finished evaluation again."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from tests.foundry.foundry_fixtures import clean_env, deployment, make_guild, make_suite, reflection_script
from tests.helpers import REPO, serve_script

from orchestrator.foundry.foundrycli import ProgressLine, main
from orchestrator.foundry.search import FoundryOptions, run_foundry


def _args(tmp_path: Path, suite: Path, reflection: str, out: Path, *extra: str) -> list[str]:
    guild = tmp_path / "guild"
    if not guild.exists():
        make_guild(tmp_path)
    return [
        "foundry",
        str(suite),
        "--guild",
        str(guild),
        "--deployment",
        str(deployment(tmp_path)),
        "--sim-solutions",
        "--reflection-api-base",
        reflection,
        "--out",
        str(out),
        *extra,
    ]


async def _start(args: list[str]) -> trio.Process:
    return await trio.lowlevel.open_process(
        [sys.executable, "-m", "orchestrator", *args],
        env=clean_env(),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


async def _finish(process: trio.Process, seconds: float = 90) -> tuple[int, str, str]:
    out, err = bytearray(), bytearray()

    async def drain(stream: Any, sink: bytearray) -> None:
        async for chunk in stream:
            sink.extend(chunk)

    try:
        with trio.fail_after(seconds):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(drain, process.stdout, out)
                nursery.start_soon(drain, process.stderr, err)
                await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    return process.returncode, out.decode(), err.decode()


async def _run(args: list[str]) -> tuple[int, str, str]:
    return await _finish(await _start(args))


def _cache_files(out: Path) -> dict[str, int]:
    """Each finished run's cache file and its inode (an atomic rewrite would change it)."""
    return {str(p.relative_to(out)): p.stat().st_ino for p in sorted((out / "cache").glob("*/*/*.json"))}


def _essentials(summary: dict[str, Any]) -> dict[str, Any]:
    keys = ("seedScore", "bestScore", "bestCandidate", "improved")
    return {k: summary[k] for k in keys} | {"candidates": [(c["id"], c["score"]) for c in summary["candidates"]]}


async def test_json_summary_and_best_guild_passes_check(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    out = tmp_path / "out"
    async with serve_script(reflection_script()) as reflection:
        code, stdout, stderr = await _run(
            _args(tmp_path, suite, reflection.base_url, out, "--budget", "20", "--repeats", "4", "--json")
        )
    assert code == 0, stderr
    summary = json.loads(stdout)
    assert summary == json.loads((out / "summary.json").read_text())
    assert summary["improved"] is True and summary["bestScore"]["mean"] == 1.0
    assert "evaluations · best" in stderr and "Traceback" not in stderr
    check = await _run(
        ["check", "--no-probe", "--guild", str(out / "best-guild"), "--deployment", str(deployment(tmp_path))]
    )
    assert check[0] == 0, check[2]
    assert json.loads(check[1])


def test_bad_input_gets_a_clear_error_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def foundry(*args: str) -> tuple[int, str]:
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's usage errors
            code = int(exc.code or 0)
        err = capsys.readouterr().err
        assert "Traceback" not in err
        return code, err

    empty = tmp_path / "empty"
    empty.mkdir()
    code, err = foundry(*_args(tmp_path, empty, "http://127.0.0.1:9/v1", tmp_path / "o1")[1:])
    assert code == 2 and "no benchmark folders" in err

    suite = make_suite(tmp_path)
    (suite / "bench_0" / "eval.json").write_text(json.dumps({"taskType": "x", "validation": {}}))
    code, err = foundry(*_args(tmp_path, suite, "http://127.0.0.1:9/v1", tmp_path / "o2")[1:])
    assert code == 2 and "description: required" in err and "validation.command: required" in err

    code, err = foundry("--budget", "0", str(suite))
    assert code == 2 and "must be at least 1" in err

    code, err = foundry("--resume", str(empty))
    assert code == 2 and "not a Foundry results folder" in err


async def _wait_for_runs(out: Path, count: int) -> None:
    with trio.fail_after(60):
        while True:
            if len(_cache_files(out)) >= count:
                return
            await trio.sleep(0.05)


async def test_a_killed_driver_resumes_to_the_same_summary_without_rerunning(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, delay_ms=100)
    extra = ("--budget", "16", "--repeats", "4", "--workers", "1", "--json")
    async with serve_script(reflection_script()) as reflection:
        # the search uninterrupted, for reference (in this process)
        reference = FoundryOptions(
            suite=suite,
            guild_dir=make_guild(tmp_path),
            deployment_file=deployment(tmp_path),
            env=clean_env(),
            budget=16,
            repeats=4,
            sim_solutions=True,
            reflection_api_base=reflection.base_url,
            out=tmp_path / "whole",
        )
        await run_foundry(reference)
        whole = json.loads((tmp_path / "whole" / "summary.json").read_text())

        out = tmp_path / "killed"
        process = await _start(_args(tmp_path, suite, reflection.base_url, out, *extra))
        try:
            await _wait_for_runs(out, 1)
            process.send_signal(signal.SIGKILL)
        finally:
            await _finish(process)
        before = _cache_files(out)
        assert 1 <= len(before) < 4 + 4, "killed mid-search"
        json.loads((out / "summary.json").read_text())  # never torn

        code, stdout, stderr = await _run(["foundry", "--resume", str(out), "--json"])
    assert code == 0, stderr
    resumed = json.loads(stdout)
    assert _essentials(resumed) == _essentials(whole)
    after = _cache_files(out)
    assert {k: after[k] for k in before} == before, "a finished evaluation was run again"
    assert len(after) == len(_cache_files(tmp_path / "whole"))


async def test_ctrl_c_leaves_a_resumable_state(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, delay_ms=100)
    out = tmp_path / "out"
    extra = ("--budget", "16", "--repeats", "4", "--workers", "1")
    async with serve_script(reflection_script()) as reflection:
        process = await _start(_args(tmp_path, suite, reflection.base_url, out, *extra))
        try:
            await _wait_for_runs(out, 1)
            process.send_signal(signal.SIGINT)
        finally:
            code, _, stderr = await _finish(process)
        assert code == 130, stderr
        assert "--resume" in stderr and "Traceback" not in stderr
        assert json.loads((out / "summary.json").read_text())["status"] == "interrupted"
        code, _, stderr = await _run(["foundry", "--resume", str(out)])
    assert code == 0, stderr
    assert json.loads((out / "summary.json").read_text())["status"] == "finished"


def test_the_progress_line_counts_evaluations_and_estimates_the_rest() -> None:
    stream = _Collect()
    progress = ProgressLine(40, stream)
    progress.update(0, 0.0)
    progress.update(10, 0.5)
    assert stream.lines[0] == "foundry: 0/40 evaluations · best 0.00 · ETA -"
    assert stream.lines[1].startswith("foundry: 10/40 evaluations · best 0.50 · ETA ")
    assert "ETA -" not in stream.lines[1]


class _Collect:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write(self, text: str) -> None:
        self.lines.extend(line for line in text.splitlines() if line)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def test_a_reflection_model_that_is_down_stops_with_exit_1_and_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORCHESTRATOR_LLM_BACKOFF_SECONDS", "0.01")
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    suite = make_suite(tmp_path)
    out = tmp_path / "out"
    code = main(_args(tmp_path, suite, "http://127.0.0.1:9/v1", out, "--repeats", "4", "--budget", "12")[1:])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "Traceback" not in err
    assert "the reflection model at http://127.0.0.1:9/v1 did not answer" in err
    assert f"continue with --resume {out}" in err
    assert json.loads((out / "summary.json").read_text())["status"] == "stopped"
