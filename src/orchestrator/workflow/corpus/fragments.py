"""The workflow manifests of one load pass, and the fragments they declare, resolved by reference.

A rule fragment (``{ref: name}`` in a ``rules`` list) or a checkpoint fragment (``ref: name`` on a
checkpoint step) names ``name`` in the current workflow, then in ``meta``; ``workflow::name`` names one
workflow. An unresolved or malformed reference is a ``LoadFailure``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import msgspec

from orchestrator.workflow.corpus.schema import META_WORKFLOW_ID, RuleRef, WorkflowDef
from orchestrator.workflow.corpus.validity import LoadFailure

__all__ = ["ManifestFile", "ManifestIndex"]


class ManifestFile(msgspec.Struct, frozen=True):
    """One decoded workflow manifest: its folder name, file, label, raw mapping and definition."""

    dir_name: str
    path: Path
    label: str
    raw: dict[str, Any]
    definition: WorkflowDef


class ManifestIndex:
    """The manifests read so far, by workflow id and by folder name (the first one read wins a folder)."""

    def __init__(self) -> None:
        self.by_id: dict[str, ManifestFile] = {}
        self.by_dir: dict[str, ManifestFile] = {}

    def add(self, manifest: ManifestFile) -> None:
        self.by_id[manifest.definition.id] = manifest
        self.by_dir.setdefault(manifest.dir_name, manifest)

    def find(self, name: str) -> ManifestFile | None:
        """The manifest of a workflow id, else of a folder name."""
        return self.by_id.get(name) or self.by_dir.get(name)

    def fragments_of(self, workflow_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(rule_fragments, raw_checkpoint_fragments)`` of a workflow (empty when unknown)."""
        manifest = self.find(workflow_id)
        if manifest is None or manifest.definition.fragments is None:
            return {}, {}
        raw_fragments = manifest.raw.get("fragments") or {}
        raw_checkpoints = raw_fragments.get("checkpoints") or {}
        return dict(manifest.definition.fragments.rules or {}), dict(raw_checkpoints)

    @staticmethod
    def fragment_candidates(ref: str, current: str) -> tuple[list[str], str]:
        parts = ref.split("::")
        if len(parts) == 1 and parts[0]:
            return ([current] if current == META_WORKFLOW_ID else [current, META_WORKFLOW_ID]), parts[0]
        if len(parts) == 2 and all(parts):
            return [parts[0]], parts[1]
        raise LoadFailure(f"malformed fragment ref '{ref}' (expected 'name' or 'workflow::name')")

    def rule_fragment(self, ref: str, current: str) -> tuple[str, ...]:
        workflows, name = self.fragment_candidates(ref, current)
        for workflow_id in workflows:
            body = self.fragments_of(workflow_id)[0].get(name)
            if body is not None:
                return (body,) if isinstance(body, str) else tuple(body)
        looked = " or ".join(f"'{w}'" for w in workflows)
        raise LoadFailure(f"unresolved rule fragment '{ref}' (no fragments.rules.{name} in {looked})")

    def resolve_rules(self, items: tuple[str | RuleRef, ...] | None, current: str) -> tuple[str, ...]:
        out: list[str] = []
        for item in items or ():
            out.extend((item,) if isinstance(item, str) else self.rule_fragment(item.ref, current))
        return tuple(out)

    def checkpoint_fragment(self, ref: str, source: str) -> dict[str, Any]:
        workflows, name = self.fragment_candidates(ref, source)
        for workflow_id in workflows:
            body = self.fragments_of(workflow_id)[1].get(name)
            if isinstance(body, dict):
                return copy.deepcopy(body)
        looked = " or ".join(f"'{w}'" for w in workflows)
        raise LoadFailure(f"unresolved checkpoint fragment '{ref}' (no fragments.checkpoints.{name} in {looked})")
