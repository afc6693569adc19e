"""``orchestrator foundry`` as a real process: the JSON summary, ``check`` on best-guild/, bad input, and a
driver killed with SIGKILL at random points (``FOUNDRY_KILLS`` times) or interrupted with SIGINT
mid-search that ``--resume`` finishes to the uninterrupted search's summary without running a finished
evaluation again."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from tests.foundry.foundry_fixtures import clean_env, deployment, make_guild, make_suite, reflection_script
from tests.helpers import REPO, serve_script
from tests.slowness import budget

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

    recorded = tmp_path / "recorded"  # a results folder whose search was given a budget of 12
    recorded.mkdir()
    options = {"suite": str(suite), "guild": "g", "deployment": "d", "only": [], "budget": 12, "repeats": 4}
    options |= {"seed": 0, "simSolutions": True, "effort": "standard", "runTimeout": 60.0}
    options |= {"reflectionApiBase": None, "reflectionModel": None}
    (recorded / "foundry.json").write_text(json.dumps(options))
    code, err = foundry("--resume", str(recorded), "--budget", "8")
    assert code == 2 and "--budget 8 is below the resumed search's own budget of 12" in err


async def _wait_for_runs(out: Path, count: int) -> None:
    with trio.fail_after(budget(60)):
        while True:
            if len(_cache_files(out)) >= count:
                return
            await trio.sleep(0.05)


#: SIGKILLs of the driver in the random-kill test (``just foundry-crash N`` sets it; 3 in the default suite)
KILLS = int(os.environ.get("FOUNDRY_KILLS", "3"))
#: the seed of the kill points (printed, so a failing sequence can be replayed)
KILL_SEED = int(os.environ.get("FOUNDRY_KILL_SEED", "24"))
#: summary.json fields that hold wall-clock time: none (no timestamp, duration or ETA is written there)
WALL_CLOCK_FIELDS: frozenset[str] = frozenset()


def _comparable(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k not in WALL_CLOCK_FIELDS}


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except FileNotFoundError:
        return None


async def _kill_at_random(process: trio.Process, out: Path, kind: str, target: int) -> bool:
    """SIGKILL the driver at an event: ``start`` (it has written ``foundry.json``, before any run), its
    ``target``-th ``line`` on stderr (a step of the search), or its ``target``-th newly finished ``run``
    in the cache. False when it finished first."""
    options_before = _inode(out / "foundry.json")
    runs_before = len(_cache_files(out))
    out_sink, err_sink = bytearray(), bytearray()

    async def drain(stream: Any, sink: bytearray) -> None:
        async for chunk in stream:
            sink.extend(chunk)

    def reached() -> bool:
        if kind == "start":
            return _inode(out / "foundry.json") not in (None, options_before)  # rewritten atomically
        if kind == "line":
            return err_sink.count(b"\n") >= target
        return len(_cache_files(out)) - runs_before >= target

    killed = False
    try:
        with trio.fail_after(budget(90)):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(drain, process.stdout, out_sink)
                nursery.start_soon(drain, process.stderr, err_sink)
                while process.poll() is None:
                    if reached():
                        process.send_signal(signal.SIGKILL)
                        killed = True
                        break
                    await trio.sleep(0.02)  # polling the events above, not waiting for time to pass
                await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    if not killed:
        assert process.returncode == 0, err_sink.decode(errors="replace")
    return killed


async def test_a_driver_killed_at_random_points_resumes_to_the_uninterrupted_summary(tmp_path: Path) -> None:
    """The driver is SIGKILLed ``FOUNDRY_KILLS`` times at seeded random points, resumed after each; the final
    summary.json equals an uninterrupted search's, ``evaluations`` included, and no finished run ran twice."""
    suite = make_suite(tmp_path, delay_ms=100)
    extra = ("--budget", "16", "--repeats", "4", "--workers", "1", "--json")
    rng = random.Random(KILL_SEED)
    print(f"foundry kills: {KILLS}, seed {KILL_SEED}")
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
        args = _args(tmp_path, suite, reflection.base_url, out, *extra)
        seen: dict[str, int] = {}
        kills = mid_search = 0
        finished = False
        for _attempt in range(3 * KILLS):
            if kills == KILLS:
                break
            # once the search has finished, further kills hit the resume of a finished search at its start
            kind = "start" if finished else rng.choice(["start", "line", "run"])
            target = rng.randint(1, 3) if kind == "line" else 1
            if await _kill_at_random(await _start(args), out, kind, target):
                kills += 1
                mid_search += not finished
            else:
                finished = True
            now = _cache_files(out)
            assert {k: now[k] for k in seen} == seen, "a finished evaluation was run again"
            seen = now
            if (out / "summary.json").exists():  # not yet when killed at the first start
                json.loads((out / "summary.json").read_text())  # never torn
            args = ["foundry", "--resume", str(out), "--json"]
        print(f"killed {kills} time(s), {mid_search} before the search had finished; {len(seen)} finished run(s)")
        assert kills == KILLS
        code, stdout, stderr = await _run(["foundry", "--resume", str(out), "--json"])
    assert code == 0, stderr
    resumed = json.loads(stdout)
    assert _comparable(resumed) == _comparable(whole)
    assert resumed["evaluations"] == len(_cache_files(tmp_path / "whole"))
    after = _cache_files(out)
    assert {k: after[k] for k in seen} == seen, "a finished evaluation was run again"
    assert after.keys() == _cache_files(tmp_path / "whole").keys()


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
