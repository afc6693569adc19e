"""``corpus/validity.py``: values a definition carries are plain JSON data; variable names follow the rule."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from orchestrator.workflow.corpus.schema import ActivityDef, WorkflowDef
from orchestrator.workflow.corpus.validity import (
    EXEMPT_VARIABLE_NAMES,
    LoadFailure,
    check_activity_values,
    check_workflow_def,
)


def _workflow(**fields: Any) -> WorkflowDef:
    return msgspec.convert({"id": "w", "version": "1.0.0", "title": "W", **fields}, WorkflowDef)


def test_well_named_variables_with_json_defaults_pass() -> None:
    check_workflow_def(_workflow(variables=[{"name": "target_path", "type": "string", "defaultValue": "a"}]))
    check_workflow_def(
        _workflow(variables=[{"name": name, "type": "string"} for name in sorted(EXEMPT_VARIABLE_NAMES)])
    )


@pytest.mark.parametrize("name", ["Bad-Name", "summary2", "single", "two__under"])
def test_badly_named_variables_fail_naming_the_variable(name: str) -> None:
    with pytest.raises(LoadFailure, match=f"variable name '{name}'"):
        check_workflow_def(_workflow(variables=[{"name": name, "type": "string"}]))


@pytest.mark.parametrize(
    ("value", "phrase"),
    [(float("nan"), "a non-finite number"), ({1: "x"}, "a mapping with a non-string key"), ({"d": b"x"}, "bytes")],
)
def test_non_json_defaults_fail_saying_why(value: Any, phrase: str) -> None:
    definition = _workflow(variables=[{"name": "some_value", "type": "object"}])
    variable = msgspec.structs.replace(definition.variables[0], default_value=value)  # type: ignore[index]
    with pytest.raises(LoadFailure, match="variable 'some_value' defaultValue is") as caught:
        check_workflow_def(msgspec.structs.replace(definition, variables=(variable,)))
    assert phrase in str(caught.value)


def test_activity_values_are_checked_inside_loops() -> None:
    activity = msgspec.convert(
        {
            "id": "a",
            "version": "1.0.0",
            "name": "A",
            "steps": [
                {
                    "kind": "loop",
                    "id": "l",
                    "loopType": "while",
                    "steps": [
                        {"kind": "action", "id": "x", "actions": [{"action": "set", "target": "t", "value": 1}]},
                    ],
                },
            ],
        },
        ActivityDef,
    )
    check_activity_values(activity.steps)
    loop = activity.steps[0]
    action = loop.steps[0]  # type: ignore[attr-defined]
    bad_action = msgspec.structs.replace(action.actions[0], value=float("inf"))
    bad = msgspec.structs.replace(loop, steps=(msgspec.structs.replace(action, actions=(bad_action,)),))
    with pytest.raises(LoadFailure, match="step 'x' action value is a non-finite number"):
        check_activity_values((bad,))
