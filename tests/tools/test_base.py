"""What every tool shares: the result constructors, ToolError's result, and the context defaults."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from orchestrator.conversation import ToolResult
from orchestrator.tools.base import ToolContext, ToolError, ToolOutcome, failure, success


def test_success_carries_the_data_and_no_message() -> None:
    result = success({"stdout": "ok", "exitCode": 0})
    assert result.kind == "success" and result.data == {"stdout": "ok", "exitCode": 0}
    assert msgspec.json.decode(msgspec.json.encode(result)) == {
        "kind": "success",
        "data": {"stdout": "ok", "exitCode": 0},
    }


def test_failure_omits_details_unless_given() -> None:
    plain = failure("timeout", "too slow")
    assert msgspec.json.decode(msgspec.json.encode(plain)) == {"kind": "timeout", "message": "too slow"}
    detailed = failure("invalid_arguments", "bad path", {"path": "/etc"})
    assert msgspec.json.decode(msgspec.json.encode(detailed))["details"] == {"path": "/etc"}


def test_a_tool_error_becomes_the_same_failure_result() -> None:
    with pytest.raises(ToolError) as info:
        raise ToolError("permission_denied", "outside the workspace", {"path": "../x"})
    assert str(info.value) == "outside the workspace"
    assert info.value.result() == failure("permission_denied", "outside the workspace", {"path": "../x"})
    assert ToolError("unavailable", "down").result() == ToolResult(kind="unavailable", message="down")


def test_an_outcome_ends_no_role_by_default() -> None:
    assert ToolOutcome(result=success(1)).terminate is None


def test_a_context_outside_a_run_has_no_ids_and_no_overrides(tmp_path: Path) -> None:
    context = ToolContext(workspace=tmp_path, timeout_seconds=30)
    assert (context.run_id, context.role_id, context.default_tool_timeout_seconds) == (None, None, None)
    assert context.env is None and context.secrets_dir is None and context.fetch_exempt_addresses == ()
    with pytest.raises(AttributeError):
        context.run_id = "run-20250101-000000"  # type: ignore[misc]
