"""``service/foundryruns.py``: the Foundry run id (one spelling, URL-safe) and its one resolution, which
stays inside a search folder the Foundry route lists."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from orchestrator.service.foundryruns import (
    FoundryRun,
    FoundryRuns,
    foundry_run_id,
    is_foundry_id,
    parse_foundry_id,
    run_ids,
)
from orchestrator.service.routes.common import RunFolders

RUN = "run-20260102-000001"
ID = f"foundry~benchmarks~.results~20260102-000000~abc123~bench_0~2~{RUN}"


def _search(workspace: Path, search: str = "benchmarks/.results/20260102-000000") -> Path:
    folder = workspace / search
    run_dir = folder / "runs" / "abc123" / "bench_0" / "2" / RUN
    run_dir.mkdir(parents=True)
    (run_dir / "meta.json").write_text("{}")
    (run_dir / "log.jsonl").write_text("")
    (folder / "foundry.json").write_text("{}")
    (folder / "summary.json").write_text("{}")
    return folder


def test_an_id_names_the_search_candidate_benchmark_repeat_and_run_in_one_spelling() -> None:
    run = parse_foundry_id(ID)
    assert run == FoundryRun(
        search="benchmarks/.results/20260102-000000", candidate="abc123", benchmark="bench_0", repeat=2, run=RUN
    )
    assert foundry_run_id(run) == ID and is_foundry_id(ID)
    root = parse_foundry_id(f"foundry~.results~s~abc123~bench_0~0~{RUN}")
    assert root is not None and root.search == ".results/s"
    assert parse_foundry_id(RUN) is None and not is_foundry_id(RUN)  # the service's own runs never clash
    for bad in (
        ID.replace("~2~", "~02~"),  # one spelling of the repeat
        ID.replace("~2~", "~-1~"),
        ID.replace("abc123", ".."),
        ID.replace("abc123", "."),
        ID.replace("bench_0", "a/b"),
        ID.replace("bench_0", "a%2Fb"),
        ID.replace("bench_0", ""),
        ID.replace(RUN, "run-1"),
        ID.replace(RUN, RUN + "\n"),
        ID.replace(".results", "results"),
        ID.replace("benchmarks~", "a~b~"),  # a search deeper than <suite>/.results/<stamp>
        ID.replace("benchmarks~", "..~"),
        ID.replace("benchmarks~", "..~.results~x~"),
        "foundry~",
        "Foundry" + ID[7:],
    ):
        assert parse_foundry_id(bad) is None, bad
    assert foundry_run_id(FoundryRun(search="a b/.results/s", candidate="c", benchmark="b", repeat=0, run=RUN)) is None


@given(st.text(alphabet="foundry~.results-_0123456789abc/%\\ ", max_size=80))
def test_any_text_parses_to_nothing_or_to_its_own_spelling(text: str) -> None:
    run = parse_foundry_id(text)
    assert run is None or foundry_run_id(run) == text


def test_a_run_of_a_listed_search_locates_and_nothing_else_does(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    folder = _search(workspace)
    runs = FoundryRuns(workspace)
    run_dir = folder / "runs" / "abc123" / "bench_0" / "2" / RUN
    assert runs.locate(ID) == run_dir
    assert run_ids(folder, "benchmarks/.results/20260102-000000", "abc123", "bench_0", 2) == [ID]
    assert run_ids(folder, "benchmarks/.results/20260102-000000", "..", "bench_0", 2) == []
    assert runs.locate(ID.replace(RUN, "run-20260102-000002")) is None  # no such run
    (folder / "foundry.json").unlink()  # not a search the Foundry route lists
    assert runs.locate(ID) is None
    (folder / "foundry.json").write_text("{}")
    (folder / "summary.json").unlink()
    assert runs.locate(ID) is None


def test_symlinks_out_of_the_search_folder_locate_nothing(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    folder = _search(workspace)
    outside = tmp_path / "outside" / RUN
    outside.mkdir(parents=True)
    (outside / "meta.json").write_text("{}")
    repeat = folder / "runs" / "abc123" / "bench_0" / "3"
    repeat.mkdir()
    (repeat / RUN).symlink_to(outside)  # a symlinked run folder
    runs = FoundryRuns(workspace)
    assert runs.locate(ID.replace("~2~", "~3~")) is None
    log = folder / "runs" / "abc123" / "bench_0" / "2" / RUN / "log.jsonl"
    log.unlink()
    log.symlink_to(tmp_path / "outside" / "secret.txt")  # a symlinked file, even a dangling one
    assert runs.locate(ID) is None
    log.unlink()
    log.symlink_to(folder / "foundry.json")  # one that stays inside is fine
    assert runs.locate(ID) is not None
    loop = folder / "runs" / "abc123" / "bench_0" / "4"
    loop.symlink_to(loop)
    assert runs.locate(ID.replace("~2~", "~4~")) is None


def test_run_folders_resolve_foundry_ids_in_one_place(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    root = workspace / ".orchestration" / "runs"
    (root / ID).mkdir(parents=True)  # a folder in the runs root named like one is never read
    (root / ID / "meta.json").write_text("{}")
    assert not RunFolders(root).known(ID)
    assert not RunFolders(root, FoundryRuns(workspace)).known(ID)
    folder = _search(workspace)
    folders = RunFolders(root, FoundryRuns(workspace))
    assert folders.known(ID) and folders.folder(ID) == folder / "runs" / "abc123" / "bench_0" / "2" / RUN
    assert folders.foundry_run(ID) is not None and folders.foundry_run(RUN) is None
    assert folders.folder("foundry~x") == root / "foundry~x"  # an unknown id names no run folder
