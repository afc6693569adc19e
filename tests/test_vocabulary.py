"""``orchestrator.vocabulary``: the names are the log's tags, and the JSON type names."""

from __future__ import annotations

import math

import pytest

from orchestrator import vocabulary
from orchestrator.runlog.events import EVENT_TYPES


def test_every_log_event_type_is_a_vocabulary_name() -> None:
    names = {
        value
        for key, value in vars(vocabulary).items()
        if key.isupper() and not key.startswith("DEFAULT_") and isinstance(value, str)
    }
    assert names >= EVENT_TYPES
    assert names - EVENT_TYPES == {vocabulary.TERMINATE}  # read by the views, written by nothing yet


def test_tiers_and_levels() -> None:
    assert vocabulary.EFFORT_TIERS == ("quick", "standard", "thorough")
    assert vocabulary.LOG_LEVELS == ("full", "standard")
    assert vocabulary.STOP_ORIGINS == ("api", "mcp", "ui")


def test_interlude_actions() -> None:
    """``interrupt_resolved.action``; issue 25: ``compacted`` only when the target's history shrank."""
    assert vocabulary.INTERLUDE_ACTIONS == ("compacted", "failed", "continue", "redirect", "abort", "answered")


@pytest.mark.parametrize(
    ("value", "plain", "with_integer"),
    [
        (None, "null", "null"),
        (True, "boolean", "boolean"),
        (3, "number", "integer"),
        (3.0, "number", "integer"),
        (3.5, "number", "number"),
        (math.inf, "number", "number"),
        ("x", "string", "string"),
        ([1], "array", "array"),
        ((1,), "array", "array"),
        ({"a": 1}, "object", "object"),
        ({1}, "set", "set"),
    ],
)
def test_json_type(value: object, plain: str, with_integer: str) -> None:
    assert vocabulary.json_type(value) == plain
    assert vocabulary.json_type(value, integer=True) == with_integer
