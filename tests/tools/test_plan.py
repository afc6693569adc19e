"""read_plan / write_plan: the run's plan under .orchestration, reached only through these tools."""

from __future__ import annotations

from pathlib import Path

from tests.tools.support import make_ctx

from orchestrator.tools.files import read_file
from orchestrator.tools.plan import PLAN_CAP, read_plan, write_plan

RUN = "run-20250101-120000"
OTHER = "run-20241231-235959"


async def test_write_then_read_the_current_runs_plan(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, run_id=RUN)
    written = await write_plan(ctx, {"content": "# Plan\n- step one\n"})
    assert written.kind == "success" and written.data == {"runId": RUN, "bytes": 18}
    assert (tmp_path / ".orchestration" / "runs" / RUN / "plan.md").read_text() == "# Plan\n- step one\n"
    read = await read_plan(ctx, {})
    assert read.data == {"runId": RUN, "content": "# Plan\n- step one\n", "truncated": False, "total": 18}
    replaced = await write_plan(ctx, {"content": "v2"})
    assert replaced.kind == "success" and (await read_plan(ctx, {})).data["content"] == "v2"
    leftovers = [p.name for p in (tmp_path / ".orchestration" / "runs" / RUN).iterdir()]
    assert leftovers == ["plan.md"]  # the atomic write left no temp file
    # the same file stays off limits to the generic file tools
    assert (await read_file(ctx, {"path": f".orchestration/runs/{RUN}/plan.md"})).kind == "permission_denied"


async def test_outside_a_run_there_is_no_current_plan(tmp_path: Path) -> None:
    # Inside one the engine sets ``run_id`` (tests/engine/test_toolcalls.py checks that it does).
    ctx = make_ctx(tmp_path)
    assert (await write_plan(ctx, {"content": "x"})).kind == "unavailable"
    assert (await read_plan(ctx, {})).kind == "unavailable"


async def test_read_another_runs_plan_by_id(tmp_path: Path) -> None:
    other = tmp_path / ".orchestration" / "runs" / OTHER
    other.mkdir(parents=True)
    (other / "plan.md").write_text("old plan")
    result = await read_plan(make_ctx(tmp_path, run_id=RUN), {"runId": OTHER})
    assert result.kind == "success" and result.data["content"] == "old plan" and result.data["runId"] == OTHER


async def test_a_long_plan_is_capped_with_its_total(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, run_id=RUN)
    await write_plan(ctx, {"content": "p" * (PLAN_CAP + 10)})
    result = await read_plan(ctx, {})
    assert result.data["truncated"] is True and len(result.data["content"]) == PLAN_CAP
    assert result.data["total"] == PLAN_CAP + 10


async def test_plan_failures(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, run_id=RUN)
    none_yet = await read_plan(ctx, {})
    assert none_yet.kind == "unavailable" and "no run" in str(none_yet.message)
    (tmp_path / ".orchestration" / "runs" / RUN).mkdir(parents=True)
    empty_run = await read_plan(ctx, {})
    assert empty_run.kind == "unavailable" and "no plan yet" in str(empty_run.message)
    assert (await read_plan(ctx, {"runId": "run-19990101-000000"})).kind == "unavailable"
    for hostile in ("../../../outside", "..", ".hidden", "a/b", ""):
        result = await read_plan(ctx, {"runId": hostile})
        assert result.kind in ("invalid_arguments", "unavailable"), hostile
        assert hostile == "" or result.kind == "invalid_arguments"
    no_run = make_ctx(tmp_path)
    assert (await write_plan(no_run, {"content": "x"})).kind == "unavailable"
    assert (await read_plan(no_run, {})).kind == "unavailable"
    assert (await write_plan(ctx, {"content": 3})).kind == "invalid_arguments"
