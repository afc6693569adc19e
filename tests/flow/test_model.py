"""The flow model's wire shapes: camelCase, nullable fields present as ``null``, frozen, status mapping."""

from __future__ import annotations

import msgspec
import pytest

from orchestrator.flow.model import (
    ACTIVE_STATUSES,
    MAIN_STACK,
    ROOT_ID,
    RUN_STATUSES,
    InteractionModel,
    Metrics,
    Operation,
    Participant,
    StackRecord,
    run_status,
)


def _operation(**fields: object) -> Operation:
    base: dict[str, object] = {
        "id": "op-1",
        "kind": "call",
        "stack": MAIN_STACK,
        "source": ROOT_ID,
        "destination": "role:lead-0-1",
        "started_at": "2025-01-01T00:00:00.000Z",
        "settled_at": None,
        "lifecycle": "in_flight",
        "outcome": None,
        "metrics": None,
    }
    base.update(fields)
    return Operation(**base)  # type: ignore[arg-type]


def test_an_in_flight_operation_keeps_its_nulls_on_the_wire() -> None:
    wire = msgspec.json.decode(msgspec.json.encode(_operation()))
    assert wire["settledAt"] is None and wire["outcome"] is None and wire["metrics"] is None
    assert wire["severity"] is None and wire["note"] is None and wire["subject"] is None
    assert wire["startedAt"] == "2025-01-01T00:00:00.000Z"


def test_a_participant_without_an_instance_says_null() -> None:
    wire = msgspec.json.decode(msgspec.json.encode(Participant(id=ROOT_ID, role="operator", kind="human")))
    assert wire == {"id": ROOT_ID, "role": "operator", "kind": "human", "instanceId": None}


def test_a_model_round_trips_with_camel_case_counters() -> None:
    settled = _operation(
        id="op-2",
        kind="return",
        settled_at="2025-01-01T00:00:05.000Z",
        lifecycle="settled",
        outcome="error",
        metrics=Metrics(tokens=120, cached_prompt_tokens=64, elapsed_seconds=5, elapsed_ms=4_812),
        severity="warn",
        note="exit 1",
        subject="exit 1",
    )
    model = InteractionModel(
        participants=[Participant(id="role:lead-0-1", role="lead", kind="role", instance_id="lead-0-1")],
        operations=[_operation(), settled],
        status="running",
        stacks=[StackRecord(id=MAIN_STACK, root=ROOT_ID)],
        active_stack=MAIN_STACK,
        active_participant="role:lead-0-1",
        operations_total=2,
    )
    raw = msgspec.json.encode(model)
    wire = msgspec.json.decode(raw)
    assert {"activeStack", "activeParticipant", "operationsTotal", "operationsOmitted", "totals"} <= set(wire)
    metrics = {"tokens": 120, "cachedPromptTokens": 64, "elapsedSeconds": 5, "elapsedMs": 4_812}
    assert wire["operations"][1]["metrics"] == metrics
    assert wire["operations"][1]["subject"] == "exit 1" and wire["operations"][0]["subject"] is None
    assert msgspec.json.decode(raw, type=InteractionModel) == model


def test_wire_shapes_are_frozen() -> None:
    with pytest.raises(AttributeError):
        _operation().lifecycle = "settled"  # type: ignore[misc]


@pytest.mark.parametrize("status", sorted(RUN_STATUSES))
def test_a_known_meta_status_is_its_own_run_status(status: str) -> None:
    assert run_status(status) == status


@pytest.mark.parametrize("status", [None, "", "stopped", "SUCCESS"])
def test_anything_else_is_unknown(status: str | None) -> None:
    assert run_status(status) == "unknown"


def test_active_statuses_are_run_statuses() -> None:
    assert ACTIVE_STATUSES < RUN_STATUSES
    assert "success" not in ACTIVE_STATUSES and "unknown" in ACTIVE_STATUSES
