"""``session/probe.py``: the stored indexes in raw session bytes (the scan's fast path)."""

from __future__ import annotations

import json

from orchestrator.workflow.session.probe import stored_indexes


def test_top_level_and_embedded_children_with_their_slots() -> None:
    data = {
        "sessionIndex": "AAAAAA",
        "triggeredWorkflows": [
            {"state": {"sessionIndex": "BBBBBB", "triggeredWorkflows": [{"state": {"sessionIndex": "CCCCCC"}}]}},
            {"workflowId": "no-state"},
            {"state": {"sessionIndex": "DDDDDD"}},
        ],
    }
    assert stored_indexes(json.dumps(data).encode()) == [
        ("AAAAAA", ()),
        ("BBBBBB", (0,)),
        ("CCCCCC", (0, 0)),
        ("DDDDDD", (2,)),
    ]


def test_loose_shapes_and_garbage() -> None:
    odd = {"sessionIndex": "AAAAAA", "triggeredWorkflows": [{"state": {"sessionIndex": 7}}, "x"]}
    assert stored_indexes(json.dumps(odd).encode()) == [("AAAAAA", ()), (7, (0,))]
    assert stored_indexes(b"{not json") == [] and stored_indexes(b"[]") == []
