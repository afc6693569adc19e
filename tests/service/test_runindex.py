"""``RunIndex``: catching up chunk by chunk gives exactly the one-pass result (offsets, recentLog rows,
flow model), a partial last line waits for its newline, appends fold incrementally, and chunked appends
end in exactly ``build_model``'s model."""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.flow.fixtures import SCENARIOS
from tests.flow.logs import at, log, random_logs, start, tcall, tresult, usage
from tests.helpers import REPO

from orchestrator.flow import InteractionModel, build_model, operation_details
from orchestrator.flow.search import landmarks, parse_query, search
from orchestrator.runlog import read_events
from orchestrator.service import runindex
from orchestrator.service.logwindow import RECENT_ROWS
from orchestrator.service.runindex import RunIndex


def _events(n: int) -> list[bytes]:
    lines = [
        {"timestamp": "2026-01-01T00:00:00.000Z", "type": "role_start",
         "payload": {"role": "coder", "roleId": "coder-0-1", "depth": 0, "task": "t"}},
    ]  # fmt: skip
    for i in range(n):
        name = "read_file" if i % 2 else "run_shell"
        ts = f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}.000Z"
        lines.append(
            {"timestamp": ts, "type": "tool_call", "payload": {"role": "coder", "tool": name, "arguments": "{}"}}
        )
        lines.append(
            {
                "timestamp": ts,
                "type": "tool_result",
                "payload": {"role": "coder", "tool": name, "result": {"kind": "success"}},
            }
        )
    return [json.dumps(line).encode() + b"\n" for line in lines]


def _snapshot(index: RunIndex) -> tuple:
    model = index.model("running", "2026-01-01T01:00:00.000Z")
    return (len(index), list(index._starts), list(index.aggregate.recent), index.aggregate.count, model)


def test_chunked_catch_up_equals_one_pass_and_partial_lines_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _events(400)  # more events than RECENT_ROWS, spread over many chunks
    whole = tmp_path / "whole"
    whole.mkdir()
    (whole / "log.jsonl").write_bytes(b"".join(lines))
    one_pass = RunIndex(whole)
    assert one_pass.update() == len(lines)

    monkeypatch.setattr(runindex, "CHUNK", 1000)  # a few lines per chunk, and lines cut across chunks
    chunked_dir = tmp_path / "chunked"
    chunked_dir.mkdir()
    log = chunked_dir / "log.jsonl"
    log.write_bytes(b"".join(lines[:-1]) + lines[-1][:10])  # the last line is still being written
    chunked = RunIndex(chunked_dir)
    assert chunked.update() == len(lines) - 1
    with log.open("ab") as handle:
        handle.write(lines[-1][10:])
    assert chunked.update() == 1 and chunked.update() == 0
    assert _snapshot(chunked) == _snapshot(one_pass)
    assert len(chunked.aggregate.recent) == RECENT_ROWS
    assert chunked[len(lines) - 1]["type"] == "tool_result"


# --- the flow model: any append pattern ends where the whole-log adapter does -------------------------


def _line(event: Any) -> bytes:
    return msgspec.json.encode(event) + b"\n"


def _complete_events(data: bytes) -> list[dict[str, Any]]:
    """What ``build_model`` should see of a file holding ``data``: its complete, parsable lines only."""
    events = []
    for line in data[: data.rfind(b"\n") + 1].split(b"\n"):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("type"), str):
            events.append(event)
    return events


def _flow(model: InteractionModel) -> InteractionModel:
    """The model without the call-tree totals the index adds (``build_model`` has none)."""
    return msgspec.structs.replace(model, totals=[])


scenario_logs = st.sampled_from(SCENARIOS).map(lambda scenario: scenario.events)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(scenario_logs, random_logs), st.data())
def test_chunked_appends_end_in_the_whole_log_model(events: list[dict[str, Any]], data: st.DataObject) -> None:
    blob = b"".join(_line(e) for e in events)
    if data.draw(st.booleans(), label="corrupt line in the middle"):
        cut = data.draw(st.integers(0, len(events)))
        blob = b"".join(_line(e) for e in events[:cut]) + b'{"torn": tr\n' + b"".join(_line(e) for e in events[cut:])
    cuts = sorted(data.draw(st.lists(st.integers(0, len(blob)), max_size=8), label="cuts"))
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        path = run_dir / "log.jsonl"
        path.write_bytes(b"")
        index = RunIndex(run_dir)
        written = 0
        for cut in [*cuts, len(blob)]:
            with path.open("ab") as handle:
                handle.write(blob[written:cut])
            written = max(written, cut)
            index.update()
            so_far = _complete_events(blob[:written])
            now = at(1000)
            assert _flow(index.model("running", now)) == build_model(so_far, meta_status="running", now=now)
        whole = read_events(path)
        assert len(index) == len(whole)
        for meta in ("running", "success", None):
            assert _flow(index.model(meta, at(5))) == build_model(whole, meta_status=meta, now=at(5))
        for n in range(1, len(index.flow.details) + 1):
            assert index.details(f"op-{n}") == operation_details(whole, index.flow, f"op-{n}")


def _long_log(path: Path, turns: int) -> None:
    entries: list[Any] = [start("orchestrator")]
    for _ in range(turns):
        entries += [tcall("orchestrator", "read_file", '{"path": "a"}'), tresult("orchestrator", "read_file")]
        entries.append(usage("orchestrator", total=10))
    path.write_bytes(b"".join(_line(e) for e in log(*entries)))


def test_a_poll_folds_only_the_appended_events(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    _long_log(path, 3000)
    index = RunIndex(tmp_path)
    assert index.update() == 9001
    appended = b"".join(_line(e) for e in log(tcall("orchestrator", "x"), tresult("orchestrator", "x")))
    with path.open("ab") as handle:
        handle.write(appended)
    assert index.update() == 2
    assert index.update() == 0 and len(index) == 9003
    model = index.model("running", at(1))
    assert len(model.operations) == 1 + 2 * 3001
    assert len(index.flow.live) == 2  # the open entry call and the lingering return: finalize rebuilds only these


def test_a_missing_log_is_empty_and_a_shrunk_log_is_re_read(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    index = RunIndex(tmp_path)
    assert index.update() == 0
    path.write_bytes(b"".join(_line(e) for e in log(start("orchestrator"), start("coder", 2, 1))))
    assert index.update() == 2
    path.write_bytes(_line(log(start("planner"))[0]))
    assert index.update() == 1
    assert [p.id for p in index.model("running", at(1)).participants] == ["human:root", "role:planner:1"]


def test_unknown_operation_ids_raise_key_error(tmp_path: Path) -> None:
    (tmp_path / "log.jsonl").write_bytes(_line(log(start("orchestrator", task="Do it."))[0]))
    index = RunIndex(tmp_path)
    index.update()
    assert index.details("op-1") == "Do it."
    for bad in ("op-2", "op-0", "op-01", "x", ""):
        with pytest.raises(KeyError):
            index.details(bad)


def _search_view(index: RunIndex) -> tuple:
    state = index.search_state()
    hits = search(state, parse_query("is:problem"), limit=1000).hits + search(state, parse_query("x"), limit=1000).hits
    return state.events, list(state.op_events), hits, landmarks(state)


def test_the_search_index_is_built_lazily_then_kept_current_like_a_fresh_build(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    entries = [start("orchestrator"), tcall("orchestrator", "x", '{"path": "a/x.py"}'), tresult("orchestrator", "x")]
    failing = [
        tcall("orchestrator", "x"),
        tresult("orchestrator", "x", "timeout"),
        ("interrupt", {"trigger": "inquiry"}),
    ]
    events = log(*entries, *failing)
    path.write_bytes(b"".join(_line(e) for e in events[:3]))
    index = RunIndex(tmp_path)
    index.update()
    assert index._search is None  # nothing searched yet: no index kept
    assert _search_view(index)[0] == 3
    with path.open("ab") as handle:
        handle.write(b"".join(_line(e) for e in events[3:]))
    index.update()  # folds the new events into the search index too
    fresh = RunIndex(tmp_path)
    fresh.update()
    grown = _search_view(index)
    assert grown == _search_view(fresh)
    assert [mark.category for mark in grown[3]] == ["fail", "interrupt"]
    path.write_bytes(_line(events[0]))  # a shrunk log drops the search index with everything else
    index.update()
    assert index._search is None and _search_view(index)[0] == 1


def test_searching_a_2000_operation_run_takes_well_under_100_ms(tmp_path: Path) -> None:
    """The search index of the bench's synthetic run (~2,000 operations): each query a few ms (bound 100)."""
    spec = importlib.util.spec_from_file_location(
        "bench_synthetic_search", REPO / "bench" / "log_window" / "synthetic.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.write_synthetic_run(tmp_path, "run-x", 4_100)
    index = RunIndex(tmp_path / ".orchestration" / "runs" / "run-x")
    index.update()
    assert len(index.flow.operations) > 1_900
    state = index.search_state()
    timings = {}
    for q in ("test_step_512.py", "pytest", "no-such-text", "tool:run_shell", "is:problem"):
        began = time.perf_counter()
        page = search(state, parse_query(q))
        timings[q] = (time.perf_counter() - began) * 1000
        assert all(parse_query(q).text in hit.snippet.lower() for hit in page.hits)
    print(f"\nsearch over {len(state.entries)} indexed events: { ({q: round(ms, 2) for q, ms in timings.items()}) } ms")
    assert max(timings.values()) < 100, timings
