"""``load_corpus``: read a workflow directory into a ``Corpus`` (the only I/O in this package).

Layout: ``<root>/<wf>/workflow.yaml`` (or ``.yml``; legacy ``<root>/<wf>.yaml``), activities
``<wf>/<activitiesDir>/NN-<id>.yaml``, techniques ``<wf>/techniques/**.md``, resources
``<wf>/resources/*.md``. Every folder holding ``techniques/`` or ``resources/`` is a namespace, with or
without a manifest.

Failure semantics: nothing here raises for bad content. A workflow whose manifest is unreadable, fails its
schema, declares a badly named variable, names an unresolvable rule fragment or an unresolvable activity
reference becomes a ``load_errors`` entry and is left out; an activity failing its schema, its step-id or
fragment checks, or ``id == filename id`` becomes an ``activity_load_errors`` entry of its workflow and is
left out; a technique that does not parse (on first use, or via ``Corpus.technique_errors()``) is treated as
missing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import msgspec

from orchestrator.workflow.corpus.activities import build_activity
from orchestrator.workflow.corpus.fragments import ManifestFile, ManifestIndex
from orchestrator.workflow.corpus.indexing import READ_ERRORS, error_text, index_resources, index_techniques, read_text
from orchestrator.workflow.corpus.model import (
    Activity,
    ActivityLoadError,
    Corpus,
    Fragments,
    LoadError,
    Resource,
    TechniqueEntry,
    VariableDecl,
    Workflow,
    WorkflowRules,
)
from orchestrator.workflow.corpus.schema import META_WORKFLOW_ID, WorkflowDef
from orchestrator.workflow.corpus.validity import PARSE_ERRORS, LoadFailure, check_workflow_def
from orchestrator.workflow.corpus.yamlload import load_yaml

__all__ = ["load_corpus"]

_ACTIVITY_FILE = re.compile(r"^(\d+)-(.+)\.ya?ml$")


class _Loader:
    """One load pass over a root; holds the per-pass lookups (no state outlives ``load_corpus``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root_text = str(root)
        self.load_errors: list[LoadError] = []
        self.manifests = ManifestIndex()
        self.activity_cache: dict[Path, Activity | ActivityLoadError] = {}

    def label(self, path: Path | str) -> str:
        text = str(path)
        prefix = self.root_text + os.sep
        return (text[len(prefix) :] if text.startswith(prefix) else text).replace(os.sep, "/")

    def read_manifest(self, dir_name: str, path: Path) -> None:
        label = self.label(path)
        raw: Any = None
        try:
            raw = load_yaml(read_text(path))
            if not isinstance(raw, dict):
                raise LoadFailure("manifest is not a YAML mapping")
            missing = [key for key in ("id", "title", "version") if not raw.get(key)]
            if missing:
                raise LoadFailure(f"manifest is missing required field(s): {', '.join(missing)}")
            definition = msgspec.convert(raw, WorkflowDef)
            check_workflow_def(definition)
            if definition.id in self.manifests.by_id:
                raise LoadFailure(
                    f"duplicate workflow id '{definition.id}' (also in {self.manifests.by_id[definition.id].label})"
                )
        except (*READ_ERRORS, *PARSE_ERRORS, LoadFailure) as exc:
            declared = raw.get("id") if isinstance(raw, dict) else None
            workflow_id = declared if isinstance(declared, str) and declared else dir_name
            self.load_errors.append(LoadError(label, error_text(exc), workflow_id))
            return
        self.manifests.add(ManifestFile(dir_name, path, label, raw, definition))

    # ---- activities ------------------------------------------------------------------------------

    def load_activity_file(self, path: Path, source: str) -> Activity | ActivityLoadError:
        cached = self.activity_cache.get(path)
        if cached is not None:
            return cached
        match = _ACTIVITY_FILE.match(path.name)
        prefix, file_id = (match.group(1), match.group(2)) if match else ("", path.stem)
        label = self.label(path)
        result: Activity | ActivityLoadError
        try:
            result = build_activity(
                load_yaml(read_text(path)),
                self.manifests,
                label=label,
                expected_id=file_id,
                prefix=prefix,
                source=source,
            )
        except (*READ_ERRORS, *PARSE_ERRORS, LoadFailure) as exc:
            result = ActivityLoadError(label, file_id, error_text(exc))
        self.activity_cache[path] = result
        return result

    def activities_dir(self, manifest: ManifestFile) -> Path:
        base = manifest.path.parent if manifest.path.name.startswith("workflow.") else self.root / manifest.dir_name
        return base / (manifest.definition.activities_dir or "activities")

    def assemble(self, manifest: ManifestFile) -> tuple[list[Activity], list[ActivityLoadError]]:
        definition = manifest.definition
        activities: list[Activity] = []
        errors: list[ActivityLoadError] = []
        ids: set[str] = set()

        def take(result: Activity | ActivityLoadError, *, borrowed: bool) -> None:
            if isinstance(result, ActivityLoadError):
                errors.append(result)
            elif result.id in ids:
                if not borrowed:
                    errors.append(
                        ActivityLoadError(result.source_file, result.id, f"duplicate activity id '{result.id}'")
                    )
            else:
                ids.add(result.id)
                activities.append(result)

        directory = self.activities_dir(manifest)
        files: list[tuple[int, str]] = []
        if directory.is_dir():
            for name in os.listdir(directory):
                match = _ACTIVITY_FILE.match(name)
                if match and (directory / name).is_file():
                    files.append((int(match.group(1)), name))
        local_names = {name for _, name in files}
        for _, name in sorted(files):
            take(self.load_activity_file(directory / name, definition.id), borrowed=False)
        for index, entry in enumerate(definition.activities or ()):
            if isinstance(entry, dict):
                label = f"{manifest.label}#activities[{index}]"
                try:
                    result: Activity | ActivityLoadError = build_activity(
                        entry, self.manifests, label=label, expected_id=None, prefix="", source=definition.id
                    )
                except (*PARSE_ERRORS, LoadFailure) as exc:
                    result = ActivityLoadError(label, str(entry.get("id", "")), error_text(exc))
                take(result, borrowed=True)
            elif "/" in entry:
                take(self.borrowed(entry), borrowed=True)
            elif entry in local_names or entry in ids:
                continue
            else:
                raise LoadFailure(f"activities entry '{entry}' names no file in {self.label(directory)}")
        return activities, errors

    def borrowed(self, entry: str) -> Activity | ActivityLoadError:
        other, _, file_name = entry.partition("/")
        source_manifest = self.manifests.by_dir.get(other) or self.manifests.by_id.get(other)
        if not file_name or "/" in file_name or not _ACTIVITY_FILE.match(file_name):
            raise LoadFailure(f"activities entry '{entry}' is not '<workflow>/NN-<id>.yaml'")
        if source_manifest is not None:
            path = self.activities_dir(source_manifest) / file_name
            source = source_manifest.definition.id
        else:
            path = self.root / other / "activities" / file_name
            source = other
        if not path.is_file():
            raise LoadFailure(f"activities entry '{entry}' names a missing file ({self.label(path)})")
        return self.load_activity_file(path, source)

    # ---- workflows -------------------------------------------------------------------------------

    def build_workflow(self, manifest: ManifestFile) -> Workflow:
        definition = manifest.definition
        rules = definition.rules
        workflow_rules = WorkflowRules(
            workflow=self.manifests.resolve_rules(rules.workflow if rules else None, definition.id),
            activity=self.manifests.resolve_rules(rules.activity if rules else None, definition.id),
            universal=self.manifests.resolve_rules(rules.universal if rules else None, definition.id),
        )
        fragments = definition.fragments
        rule_fragments = {
            name: (body,) if isinstance(body, str) else tuple(body)
            for name, body in ((fragments.rules or {}) if fragments else {}).items()
        }
        activities, activity_errors = self.assemble(manifest)
        variables = tuple(
            VariableDecl(
                name=v.name,
                type=v.type,
                description=v.description,
                default_value=None if v.default_value is msgspec.UNSET else v.default_value,
                has_default=v.default_value is not msgspec.UNSET,
                required=v.required,
            )
            for v in definition.variables or ()
        )
        techniques = definition.techniques
        return Workflow(
            id=definition.id,
            version=definition.version,
            title=definition.title,
            description=definition.description,
            author=definition.author,
            tags=definition.tags or (),
            initial_activity=definition.initial_activity,
            variables=variables,
            rules=workflow_rules,
            fragments=Fragments(rule_fragments, dict((fragments.checkpoints or {}) if fragments else {})),
            techniques_workflow=(techniques.workflow or ()) if techniques else (),
            techniques_activity=(techniques.activity or ()) if techniques else (),
            activities=tuple(activities),
            activity_load_errors=tuple(activity_errors),
            source_dir=str(self.root / manifest.dir_name),
            dir_name=manifest.dir_name,
            manifest_file=manifest.label,
            hidden=definition.id == META_WORKFLOW_ID,
            raw=manifest.raw,
        )


def load_corpus(root: Path | str) -> Corpus:
    """Load every workflow, technique and resource under ``root``; never raises for bad content."""
    root = Path(root)
    loader = _Loader(root)
    namespaces: list[str] = []
    legacy: list[Path] = []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as exc:
        loader.load_errors.append(LoadError(root.as_posix(), error_text(exc)))
        entries = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        path = Path(entry.path)
        if entry.is_dir():
            for manifest_name in ("workflow.yaml", "workflow.yml"):
                if (path / manifest_name).is_file():
                    loader.read_manifest(entry.name, path / manifest_name)
                    break
            if (path / "techniques").is_dir() or (path / "resources").is_dir():
                namespaces.append(entry.name)
        elif entry.is_file() and entry.name.endswith((".yaml", ".yml")):
            legacy.append(path)
    for path in legacy:
        stem = path.name.rsplit(".", 1)[0]
        if stem not in loader.manifests.by_dir:
            loader.read_manifest(stem, path)

    workflows: dict[str, Workflow] = {}
    for workflow_id, manifest in loader.manifests.by_id.items():
        try:
            workflows[workflow_id] = loader.build_workflow(manifest)
        except (*READ_ERRORS, *PARSE_ERRORS, LoadFailure) as exc:
            loader.load_errors.append(LoadError(manifest.label, error_text(exc), workflow_id))
    ordered = dict(sorted(workflows.items(), key=lambda item: (item[1].dir_name, item[0])))

    techniques: dict[str, dict[str, TechniqueEntry]] = {}
    root_contracts: dict[str, TechniqueEntry] = {}
    resources: dict[str, dict[str, Resource]] = {}
    resource_names: dict[str, dict[str, str]] = {}
    for namespace in namespaces:
        try:
            techniques_dir = os.path.join(root, namespace, "techniques")
            resources_dir = os.path.join(root, namespace, "resources")
            if os.path.isdir(techniques_dir):
                index, root_entry = index_techniques(loader.label, namespace, techniques_dir)
                techniques[namespace] = index
                if root_entry is not None:
                    root_contracts[namespace] = root_entry
            if os.path.isdir(resources_dir):
                resources[namespace], resource_names[namespace] = index_resources(
                    loader.label, namespace, resources_dir
                )
        except OSError as exc:
            loader.load_errors.append(LoadError(loader.label(root / namespace), error_text(exc)))

    return Corpus(
        root=str(root),
        workflows=ordered,
        load_errors=tuple(sorted(loader.load_errors, key=lambda e: e.file)),
        techniques=techniques,
        root_contracts=root_contracts,
        resources=resources,
        resource_names=resource_names,
        namespace_of={wf.id: wf.dir_name for wf in ordered.values()},
    )
