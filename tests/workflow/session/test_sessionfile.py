"""session.json schema and canonical bytes: the golden layout, the number rules, the closed history enum."""

from __future__ import annotations

import json
import math

import msgspec
import pytest

from orchestrator.workflow.session import (
    HISTORY_TYPES,
    ActiveCheckpoint,
    CanonicalJsonError,
    SessionFile,
    TriggeredFrom,
    TriggeredWorkflow,
    canonical_bytes,
    find_index,
    new_history,
    new_session_file,
    replace_at,
    state_at,
    touch,
    walk_children,
    walk_sessions,
    with_history,
)

T0 = 1_767_225_600.25  # 2026-01-01T00:00:00.250Z


def _child(index: str, workflow: str, *children: TriggeredWorkflow) -> TriggeredWorkflow:
    state = new_session_file(
        session_index=index, workflow_id=workflow, workflow_version="1.0.0", agent_id="worker", now=T0
    )
    state = msgspec.structs.replace(state, history=[], triggered_workflows=list(children))
    return TriggeredWorkflow(
        workflow_id=workflow,
        session_index=index,
        triggered_at="2026-01-01T00:00:00.250Z",
        triggered_from=TriggeredFrom(activity_id="start"),
        state=state,
    )


GOLDEN = """{
  "schemaVersion": 1,
  "status": "running",
  "workflowId": "wp",
  "workflowVersion": "3.44.0",
  "agentId": "orchestrator",
  "sessionIndex": "ABCDEF",
  "planningFolderPath": "/p/acc",
  "currentActivity": "",
  "currentTechnique": "",
  "condition": "",
  "activeCheckpoint": {
    "activityId": "start",
    "checkpointId": "cp",
    "yieldedAt": "2026-01-01T00:00:00.250Z"
  },
  "seq": 2,
  "ts": 1767225600,
  "startedAt": "2026-01-01T00:00:00.250Z",
  "completedActivities": [],
  "skippedActivities": [],
  "variables": {
    "a": 3,
    "b": 1.5,
    "z": null
  },
  "checkpointResponses": {},
  "history": [],
  "triggeredWorkflows": [],
  "contextMode": "persistent",
  "repo": "acme/widgets"
}"""


def test_canonical_bytes_golden_layout() -> None:
    state = SessionFile(
        session_index="ABCDEF",
        workflow_id="wp",
        workflow_version="3.44.0",
        seq=2,
        ts=1767225600,
        started_at="2026-01-01T00:00:00.250Z",
        variables={"z": None, "b": 1.5, "a": 3.0},
        active_checkpoint=ActiveCheckpoint(
            checkpoint_id="cp", activity_id="start", yielded_at="2026-01-01T00:00:00.250Z"
        ),
        repo="acme/widgets",
        context_mode="persistent",
        planning_folder_path="/p/acc",
    )
    data = canonical_bytes(state)
    assert data.decode() == GOLDEN
    assert not data.endswith(b"\n")
    assert msgspec.json.decode(data, type=SessionFile) == msgspec.structs.replace(
        state, variables={"a": 3, "b": 1.5, "z": None}
    )


def test_nested_session_keys_are_sorted_not_prioritised() -> None:
    top = new_session_file(session_index="ABCDEF", workflow_id="meta", workflow_version="1.0.0", now=T0)
    top = msgspec.structs.replace(top, triggered_workflows=[_child("BCDEFG", "wp")])
    decoded = json.loads(canonical_bytes(top))
    entry = decoded["triggeredWorkflows"][0]
    assert list(entry) == sorted(entry)
    assert list(entry["state"]) == sorted(entry["state"])
    assert next(iter(entry["state"])) == "agentId"
    assert list(decoded)[:3] == ["schemaVersion", "status", "workflowId"]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused_naming_the_path(bad: float) -> None:
    state = new_session_file(
        session_index="ABCDEF", workflow_id="wp", workflow_version="1.0.0", variables={"x": [1, bad]}
    )
    with pytest.raises(CanonicalJsonError, match=r"variables\.x\[1\]"):
        canonical_bytes(state)


def test_non_string_keys_and_foreign_types_are_refused() -> None:
    with pytest.raises(CanonicalJsonError, match="not a string"):
        canonical_bytes({"a": {1: 2}})
    with pytest.raises(CanonicalJsonError, match="set"):
        canonical_bytes({"a": {1, 2}})


def test_canonical_is_stable_through_a_round_trip() -> None:
    state = new_session_file(
        session_index="ABCDEF", workflow_id="wp", workflow_version="1.0.0", variables={"big": 1e300, "f": 0.1}, now=T0
    )
    first = canonical_bytes(state)
    again = canonical_bytes(msgspec.json.decode(first, type=SessionFile))
    assert first == again


def test_history_types_are_the_closed_32() -> None:
    assert len(HISTORY_TYPES) == 32
    event = new_history("checkpoint_response", now=T0, activity="a", data={"optionId": "x"})
    assert event.timestamp == "2026-01-01T00:00:00.250Z"
    with pytest.raises(ValueError, match="unknown history event type 'bogus'"):
        new_history("bogus")  # type: ignore[arg-type]
    raw = canonical_bytes(
        with_history(new_session_file(session_index="ABCDEF", workflow_id="w", workflow_version="1"), event)
    )
    with pytest.raises(msgspec.ValidationError, match="history"):
        msgspec.json.decode(raw.replace(b"checkpoint_response", b"checkpoint_respond"), type=SessionFile)


def test_unknown_fields_and_bad_index_are_invalid() -> None:
    raw = canonical_bytes(new_session_file(session_index="ABCDEF", workflow_id="w", workflow_version="1"))
    with pytest.raises(msgspec.ValidationError, match="surprise"):
        msgspec.json.decode(raw[:-1] + b',"surprise":1}', type=SessionFile)
    with pytest.raises(msgspec.ValidationError, match="sessionIndex"):
        msgspec.json.decode(raw.replace(b"ABCDEF", b"abcdef"), type=SessionFile)


def test_new_session_and_touch() -> None:
    state = new_session_file(
        session_index="ABCDEF", workflow_id="wp", workflow_version="1.0.0", variables={"flag": False}, now=T0
    )
    assert [e.type for e in state.history] == ["workflow_started", "variables_seeded"]
    assert state.history[1].data == {"variables": {"flag": False}}
    assert (state.seq, state.ts, state.started_at) == (0, 1767225600, "2026-01-01T00:00:00.250Z")
    later = touch(state, now=T0 + 10)
    assert (later.seq, later.ts, state.seq) == (1, 1767225610, 0)


def test_tree_walk_find_and_replace() -> None:
    top = new_session_file(session_index="AAAAAA", workflow_id="meta", workflow_version="1", now=T0)
    top = msgspec.structs.replace(
        top, triggered_workflows=[_child("BBBBBB", "one"), _child("CCCCCC", "two", _child("DDDDDD", "three"))]
    )
    assert [(p, s.session_index) for p, s in walk_sessions(top)] == [
        ((), "AAAAAA"),
        ((0,), "BBBBBB"),
        ((1,), "CCCCCC"),
        ((1, 0), "DDDDDD"),
    ]
    assert [p for p, _ in walk_children(top)] == [(0,), (1,), (1, 0)]
    assert find_index(top, "DDDDDD") == [(1, 0)]
    grandchild = state_at(top, (1, 0))
    updated = replace_at(top, (1, 0), msgspec.structs.replace(grandchild, current_activity="go"))
    assert state_at(updated, (1, 0)).current_activity == "go"
    assert state_at(top, (1, 0)).current_activity == ""  # the original is untouched
    assert state_at(updated, (0,)) is state_at(top, (0,))
    with pytest.raises(LookupError, match=r"triggeredWorkflows\.5\.state"):
        state_at(top, (5,))


def test_enum_values_are_written_as_their_base_type() -> None:
    import enum

    class Mode(str, enum.Enum):  # noqa: UP042 - str() of this kind is "Mode.FAST", not the value
        FAST = "fast"

    class Level(enum.IntEnum):
        HIGH = 3

    assert (
        canonical_bytes({"m": Mode.FAST, "l": Level.HIGH, "t": (1, 2.0)})
        == b'{\n  "l": 3,\n  "m": "fast",\n  "t": [\n    1,\n    2\n  ]\n}'
    )
