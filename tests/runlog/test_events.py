"""The run-log event schema: tags are the vocabulary's names, and a line decodes back into its Struct."""

from __future__ import annotations

import msgspec
import pytest
from tests.runlog.samples import sample_events

from orchestrator import vocabulary as names
from orchestrator.conversation import Usage
from orchestrator.runlog import events as e

MEMBERS: tuple[type[e.Event], ...] = e.RunEvent.__args__  # type: ignore[attr-defined]
DECODER = msgspec.json.Decoder(e.RunEvent)


def _tag(cls: type[e.Event]) -> str:
    return cls.__struct_config__.tag  # type: ignore[return-value]


def test_every_member_has_a_distinct_tag_and_event_types_lists_them() -> None:
    tags = [_tag(cls) for cls in MEMBERS]
    assert len(tags) == len(set(tags))
    assert frozenset(tags) == e.EVENT_TYPES


@pytest.mark.parametrize("cls", MEMBERS, ids=lambda cls: cls.__name__)
def test_each_tag_is_the_vocabulary_name_of_its_event(cls: type[e.Event]) -> None:
    constant = {value: key for key, value in vars(names).items() if key.isupper() and isinstance(value, str)}
    assert _tag(cls) in constant
    assert _tag(cls) == getattr(names, constant[_tag(cls)])


def test_a_line_is_timestamp_type_and_camel_case_payload() -> None:
    event = e.RoleNotFound(timestamp="2025-01-01T00:00:00.000Z", payload=e.RoleNotFoundPayload(role_name="ghost"))
    line = msgspec.json.encode(event)
    assert msgspec.json.decode(line) == {
        "type": "role_not_found",
        "timestamp": "2025-01-01T00:00:00.000Z",
        "payload": {"roleName": "ghost"},
    }
    assert b"null" not in line  # optional fields are omitted, never null


def test_each_sample_event_decodes_back_through_the_union() -> None:
    for event in sample_events():
        decoded = DECODER.decode(msgspec.json.encode(event))
        assert type(decoded) is type(event) and decoded == event


def test_a_union_line_selects_its_struct_by_type() -> None:
    line = (
        b'{"timestamp": "2025-01-01T00:00:00.000Z", "type": "unknown_tool",'
        b' "payload": {"role": "coder", "roleId": "coder-1-2", "tool": "fly", "message": "no such tool"}}'
    )
    event = DECODER.decode(line)
    assert isinstance(event, e.UnknownTool)
    assert event.payload == e.FailurePayload(role="coder", role_id="coder-1-2", tool="fly", message="no such tool")


def test_llm_call_payload_leaves_unset_fields_off_the_line() -> None:
    payload = e.LlmCallPayload(role="lead", role_id="lead-0-1", message_count=4, usage=Usage(prompt_tokens=7))
    wire = msgspec.json.decode(msgspec.json.encode(e.LlmCall(timestamp="t", payload=payload)))["payload"]
    assert set(wire) == {"role", "roleId", "messageCount", "usage"}


def test_an_unknown_type_or_a_wrong_payload_does_not_decode_as_a_run_event() -> None:
    with pytest.raises(msgspec.ValidationError):
        DECODER.decode(b'{"timestamp": "t", "type": "from_the_future", "payload": {}}')
    with pytest.raises(msgspec.ValidationError, match=r"\$\.payload"):
        DECODER.decode(b'{"timestamp": "t", "type": "agent_call", "payload": {"parent": "a", "child": "b"}}')
