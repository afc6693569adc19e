"""``tools/params.py``: argument validation against a closed schema; nulls dropped, the offending parameter named."""

from __future__ import annotations

import pytest

from orchestrator.workflow.errors import ParameterError
from orchestrator.workflow.tools.params import arr, integer, obj, params, string, validate_args

SCHEMA = params(
    {
        "name": string("n", min_length=1),
        "mode": string("m", enum=("a", "b")),
        "count": integer("c", exclusive_minimum=0),
        "items": arr("i", obj({"id": string("id")}, required=("id",))),
    },
    required=("name",),
    closed=True,
)


def test_validate_args_accepts_and_drops_nulls() -> None:
    assert validate_args({"name": "x", "mode": None, "count": 2}, SCHEMA) == {"name": "x", "count": 2}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({}, "Missing required parameter 'name'"),
        ({"name": ""}, "must not be empty"),
        ({"name": "x", "mode": "c"}, "'c' is not one of [a, b]"),
        ({"name": "x", "count": True}, "expected integer, got boolean"),
        ({"name": "x", "count": 0}, "must be > 0"),
        ({"name": "x", "items": [{}]}, "Missing required parameter 'items[0].id'"),
        ({"name": "x", "items": [{"id": "a", "x": 1}]}, "Unknown parameter(s) in 'items[0]': x"),
        ({"name": "x", "zzz": 1}, "Unknown parameter(s): zzz"),
    ],
)
def test_validate_args_names_the_offending_parameter(args: dict, needle: str) -> None:
    with pytest.raises(ParameterError) as caught:
        validate_args(args, SCHEMA)
    assert needle in str(caught.value) and str(caught.value).startswith("InvalidParams: ")
