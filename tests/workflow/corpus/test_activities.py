"""``corpus/activities.py``: step ids derived and checked per scope, checkpoint fragments put in place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from orchestrator.workflow.corpus.activities import build_activity, materialise, process_steps
from orchestrator.workflow.corpus.fragments import ManifestFile, ManifestIndex
from orchestrator.workflow.corpus.schema import CheckpointStep, TechniqueStep, WorkflowDef
from orchestrator.workflow.corpus.validity import LoadFailure

_ASK = {"message": "Go?", "options": [{"id": "yes", "label": "Yes"}], "blocking": True}


@pytest.fixture
def manifests() -> ManifestIndex:
    raw = {"id": "meta", "version": "1.0.0", "title": "M", "fragments": {"checkpoints": {"ask": _ASK}}}
    index = ManifestIndex()
    index.add(
        ManifestFile(
            "meta", Path("/c/meta/workflow.yaml"), "meta/workflow.yaml", raw, msgspec.convert(raw, WorkflowDef)
        )
    )
    return index


def test_a_ref_is_replaced_by_the_fragment_body_in_its_place(manifests: ManifestIndex) -> None:
    step = {"kind": "checkpoint", "id": "c", "ref": "ask", "condition": None}
    assert list(materialise(step, "alpha", manifests)) == ["kind", "id", "message", "options", "blocking", "condition"]
    inline = {"kind": "checkpoint", "id": "c", **_ASK}
    assert materialise(inline, "alpha", manifests) is inline


@pytest.mark.parametrize(
    ("step", "phrase"),
    [
        ({"kind": "checkpoint", "id": "c"}, "neither a fragment ref nor message and options"),
        ({"kind": "checkpoint", "id": "c", "ref": "ask", "message": "x"}, "and body field(s) message"),
        ({"kind": "checkpoint", "id": "c", "ref": "ask", "blocking": False}, "declares blocking but fragment"),
    ],
)
def test_checkpoint_bodies_come_from_one_place(manifests: ManifestIndex, step: dict[str, Any], phrase: str) -> None:
    with pytest.raises(LoadFailure) as caught:
        materialise(step, "alpha", manifests)
    assert phrase in str(caught.value)


def test_technique_steps_derive_their_id_and_ids_are_unique_per_scope(manifests: ManifestIndex) -> None:
    steps = [
        {"kind": "technique", "technique": "meta::review-code"},
        {"kind": "loop", "id": "l", "loopType": "while", "steps": [{"kind": "action", "id": "review-code"}]},
    ]
    out = process_steps(steps, "top-level steps", "alpha", manifests)
    assert list(out[0]) == ["kind", "id", "technique"] and out[0]["id"] == "review-code"
    with pytest.raises(LoadFailure, match="step 2 \\(action\\) has no id"):
        process_steps([{"kind": "action", "id": "a"}, {"kind": "action"}], "top-level steps", "alpha", manifests)
    with pytest.raises(LoadFailure, match="loop 'l' steps: duplicate step id 'x'"):
        process_steps(
            [
                {
                    "kind": "loop",
                    "id": "l",
                    "loopType": "while",
                    "steps": [{"kind": "action", "id": "x"}, {"kind": "action", "id": "x"}],
                }
            ],
            "top-level steps",
            "alpha",
            manifests,
        )


def test_build_activity_checks_the_filename_id_and_keeps_the_processed_raw(manifests: ManifestIndex) -> None:
    raw = {
        "id": "intake",
        "version": "1.0.0",
        "name": "Intake",
        "steps": [{"kind": "technique", "technique": "scan"}, {"kind": "checkpoint", "id": "c", "ref": "ask"}],
    }
    activity = build_activity(
        raw, manifests, label="a/01-intake.yaml", expected_id="intake", prefix="01", source="alpha"
    )
    first, second = activity.steps
    assert isinstance(first, TechniqueStep) and first.id == "scan"
    assert isinstance(second, CheckpointStep) and second.message == "Go?" and second.blocking is True
    assert (activity.artifact_prefix, activity.source_workflow, activity.source_file) == (
        "01",
        "alpha",
        "a/01-intake.yaml",
    )
    assert activity.raw["steps"][1]["message"] == "Go?" and "ref" not in activity.raw["steps"][1]
    with pytest.raises(LoadFailure, match="activity id 'intake' does not match the filename id 'other'"):
        build_activity(raw, manifests, label="x", expected_id="other", prefix="", source="alpha")
    with pytest.raises(LoadFailure, match="not a YAML mapping"):
        build_activity(["x"], manifests, label="x", expected_id=None, prefix="", source="alpha")
