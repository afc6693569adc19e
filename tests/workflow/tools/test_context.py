"""``tools/context.py``: a variable value's type checked against its declaration; a `{placeholder}` string passes."""

from __future__ import annotations

from orchestrator.workflow.tools.context import type_check


def test_type_check_and_placeholders() -> None:
    assert type_check("boolean", True) == ("boolean", False)
    assert type_check("number", "3") == ("string", True)
    assert type_check("number", "{count}") == ("string", False)
    assert type_check("array", []) == ("array", False)
    assert type_check("number", True) == ("boolean", True)
