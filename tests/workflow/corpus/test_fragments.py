"""``corpus/fragments.py``: manifests by id and folder, and fragment references resolved current → meta."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from orchestrator.workflow.corpus.fragments import ManifestFile, ManifestIndex
from orchestrator.workflow.corpus.schema import RuleRef, WorkflowDef
from orchestrator.workflow.corpus.validity import LoadFailure

_CHECKPOINT = {"message": "Go?", "options": [{"id": "yes", "label": "Yes"}]}


def _manifest(dir_name: str, workflow_id: str, fragments: dict[str, Any]) -> ManifestFile:
    raw = {"id": workflow_id, "version": "1.0.0", "title": workflow_id, "fragments": fragments}
    path = Path("/corpus") / dir_name / "workflow.yaml"
    return ManifestFile(dir_name, path, f"{dir_name}/workflow.yaml", raw, msgspec.convert(raw, WorkflowDef))


@pytest.fixture
def index() -> ManifestIndex:
    manifests = ManifestIndex()
    manifests.add(_manifest("meta", "meta", {"rules": {"shared": "from meta", "both": "meta both"}}))
    manifests.add(
        _manifest(
            "alpha-dir", "alpha", {"rules": {"both": ["alpha 1", "alpha 2"]}, "checkpoints": {"ask": _CHECKPOINT}}
        )
    )
    manifests.add(_manifest("alpha-dir", "alpha-twin", {}))
    return manifests


def test_found_by_id_then_by_folder_and_the_first_read_keeps_the_folder(index: ManifestIndex) -> None:
    alpha = index.find("alpha")
    assert alpha is not None and index.find("alpha-dir") is alpha
    assert index.find("nowhere") is None


def test_rule_refs_resolve_in_the_current_workflow_then_meta(index: ManifestIndex) -> None:
    rules = ("plain", RuleRef(ref="both"), RuleRef(ref="shared"), RuleRef(ref="meta::both"))
    assert index.resolve_rules(rules, "alpha") == ("plain", "alpha 1", "alpha 2", "from meta", "meta both")
    assert index.resolve_rules(None, "alpha") == ()


@pytest.mark.parametrize(
    ("ref", "phrase"),
    [("alpha::shared", "unresolved rule fragment 'alpha::shared'"), ("a::b::c", "malformed fragment ref")],
)
def test_a_prefixed_ref_does_not_fall_back_and_a_malformed_one_fails(
    index: ManifestIndex, ref: str, phrase: str
) -> None:
    with pytest.raises(LoadFailure, match=phrase):
        index.resolve_rules((RuleRef(ref=ref),), "alpha")


def test_checkpoint_fragments_are_copies_of_the_raw_body(index: ManifestIndex) -> None:
    body = index.checkpoint_fragment("ask", "alpha")
    assert body == _CHECKPOINT
    body["message"] = "changed"
    assert index.checkpoint_fragment("alpha::ask", "meta")["message"] == "Go?"
    with pytest.raises(LoadFailure, match=r"no fragments\.checkpoints\.ask in 'meta'"):
        index.checkpoint_fragment("ask", "meta")
