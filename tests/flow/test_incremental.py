"""``FlowIndex``: chunked appends end in exactly ``build_model``'s model, and a poll reads only new bytes."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.flow.fixtures import SCENARIOS
from tests.flow.logs import at, log, start, tcall, tresult, usage

from orchestrator.flow import FlowIndex, build_model, operation_details
from orchestrator.runlog import read_events

ROLES = ["o", "c", "h"]


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


# --- random logs over a small vocabulary ----------------------------------------------------------

_role = st.sampled_from(ROLES)
_payloads: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "role_start": st.fixed_dictionaries(
        {"role": _role, "roleId": st.sampled_from(["o-0-1", "c-1-2", "c-1-3", "h-0-4"])}
    ),
    "role_finished": st.fixed_dictionaries(
        {"role": _role, "status": st.sampled_from(["success", "error", "needs_clarification"])},
        optional={"roleId": st.sampled_from(["o-0-1", "c-1-2", "x"])},
    ),
    "tool_call": st.fixed_dictionaries({"role": _role, "tool": st.sampled_from(["t", "u", "agent", "finish"])}),
    "tool_result": st.fixed_dictionaries(
        {
            "role": _role,
            "tool": st.sampled_from(["t", "u", "ask_human"]),
            "kind": st.sampled_from(["success", "timeout"]),
        }
    ),
    "llm_call_start": st.fixed_dictionaries({"role": _role}),
    "llm_call": st.fixed_dictionaries(
        {"role": _role, "usage": st.fixed_dictionaries({"totalTokens": st.integers(0, 9)})}
    ),
    "interrupt": st.fixed_dictionaries(
        {"trigger": st.sampled_from(["loop_check", "inquiry"])}, optional={"message": st.text(max_size=3)}
    ),
    "interrupt_resolved": st.just({"action": "continue"}),
    "observe": st.fixed_dictionaries({"role": _role, "details": st.just("x")}),
    "terminate": st.fixed_dictionaries({"role": _role}),
    "ask_human": st.fixed_dictionaries({"id": st.sampled_from(["q1", "q2"]), "question": st.just("?")}),
    "human_answer": st.fixed_dictionaries({"id": st.sampled_from(["q1", "q2"]), "answer": st.just("!")}),
    "run_resumed": st.just({"runId": "r", "resumedFrames": 1}),
    "effort_set": st.just({"effort": "quick"}),
}
_event = st.sampled_from(sorted(_payloads)).flatmap(lambda kind: st.tuples(st.just(kind), _payloads[kind]))
random_logs = st.lists(_event, max_size=40).map(lambda entries: log(*entries))
scenario_logs = st.sampled_from(SCENARIOS).map(lambda scenario: scenario.events)


def _check_well_formed(events: list[dict[str, Any]], meta: str) -> None:
    model = build_model(events, meta_status=meta, now=at(len(events)))
    participants = {p.id for p in model.participants}
    stacks = {s.id for s in model.stacks}
    in_flight: dict[str, int] = {}
    for n, op in enumerate(model.operations, 1):
        assert op.id == f"op-{n}"
        assert {op.source, op.destination} <= participants and op.stack in stacks
        assert (op.outcome is not None) == (op.kind == "return")
        assert (op.metrics is not None) == (op.kind == "call")
        assert (op.settled_at is None) == (op.lifecycle == "in_flight")
        if op.kind in ("observe", "terminate"):
            assert op.settled_at == op.started_at
        if op.lifecycle == "in_flight":
            in_flight[op.stack] = in_flight.get(op.stack, 0) + 1
    assert all(count <= 1 for count in in_flight.values()), in_flight
    if meta == "success":
        assert not in_flight
    assert model.active_stack in stacks and model.active_participant in participants


@settings(max_examples=200, deadline=None)
@given(random_logs, st.sampled_from(["running", "success"]))
def test_any_log_folds_into_a_well_formed_model(events: list[dict[str, Any]], meta: str) -> None:
    _check_well_formed(events, meta)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(scenario_logs, random_logs), st.data())
def test_chunked_appends_end_in_the_whole_log_model(events: list[dict[str, Any]], data: st.DataObject) -> None:
    blob = b"".join(_line(e) for e in events)
    if data.draw(st.booleans(), label="corrupt line in the middle"):
        cut = data.draw(st.integers(0, len(events)))
        blob = b"".join(_line(e) for e in events[:cut]) + b'{"torn": tr\n' + b"".join(_line(e) for e in events[cut:])
    cuts = sorted(data.draw(st.lists(st.integers(0, len(blob)), max_size=8), label="cuts"))
    index = FlowIndex()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.jsonl"
        path.write_bytes(b"")
        written = 0
        for cut in [*cuts, len(blob)]:
            with path.open("ab") as handle:
                handle.write(blob[written:cut])
            written = max(written, cut)
            index.update(path)
            so_far = _complete_events(blob[:written])
            now = at(1000)
            assert index.model("running", now) == build_model(so_far, meta_status="running", now=now)
        assert index.bytes_read == len(blob) and index.offset == len(blob)
        whole = read_events(path)
        for meta in ("running", "success", None):
            assert index.model(meta, at(5)) == build_model(whole, meta_status=meta, now=at(5))
        for n in range(1, len(index.state.details) + 1):
            assert index.details(f"op-{n}") == operation_details(whole, index.state, f"op-{n}")


def _long_log(path: Path, turns: int) -> None:
    entries: list[Any] = [start("orchestrator")]
    for _ in range(turns):
        entries += [tcall("orchestrator", "read_file", '{"path": "a"}'), tresult("orchestrator", "read_file")]
        entries.append(usage("orchestrator", total=10))
    path.write_bytes(b"".join(_line(e) for e in log(*entries)))


def test_a_poll_reads_only_the_appended_bytes(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    _long_log(path, 3000)
    index = FlowIndex()
    assert index.update(path) == 9001
    size = path.stat().st_size
    assert index.bytes_read == size
    appended = b"".join(_line(e) for e in log(tcall("orchestrator", "x"), tresult("orchestrator", "x")))
    with path.open("ab") as handle:
        handle.write(appended)
    assert index.update(path) == 2
    assert index.bytes_read == size + len(appended)
    assert index.update(path) == 0 and index.bytes_read == size + len(appended)
    model = index.model("running", at(1))
    assert len(model.operations) == 1 + 2 * 3001
    assert len(index.state.live) == 2  # the open entry call and the lingering return: finalize rebuilds only these


def test_a_partial_line_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    line = _line(log(start("orchestrator"))[0])
    path.write_bytes(line[:10])
    index = FlowIndex()
    assert index.update(path) == 0 and index.offset == 0 and index.read_to == 10
    with path.open("ab") as handle:
        handle.write(line[10:])
    assert index.update(path) == 1 and index.offset == len(line)
    assert index.bytes_read == len(line)  # the held tail was not read twice


def test_a_missing_log_is_empty_and_a_shrunk_log_is_re_read(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    index = FlowIndex()
    assert index.update(path) == 0
    path.write_bytes(b"".join(_line(e) for e in log(start("orchestrator"), start("coder", 2, 1))))
    assert index.update(path) == 2
    path.write_bytes(_line(log(start("planner"))[0]))
    assert index.update(path) == 1
    assert [p.id for p in index.model("running", at(1)).participants] == ["human:root", "role:planner:1"]


def test_unknown_operation_ids_raise_key_error(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(_line(log(start("orchestrator", task="Do it."))[0]))
    index = FlowIndex()
    index.update(path)
    assert index.details("op-1") == "Do it."
    for bad in ("op-2", "op-0", "op-01", "x", ""):
        with pytest.raises(KeyError):
            index.details(bad)
