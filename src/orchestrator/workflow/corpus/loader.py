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

import copy
import math
import os
import re
from pathlib import Path
from typing import Any

import msgspec
import yaml

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
from orchestrator.workflow.corpus.schema import (
    META_WORKFLOW_ID,
    ActivityDef,
    CheckpointStep,
    LoopStep,
    RuleRef,
    TechniqueStep,
    WorkflowDef,
)
from orchestrator.workflow.corpus.yamlload import load_yaml

__all__ = ["EXEMPT_VARIABLE_NAMES", "load_corpus"]

_QUALIFIED_NAME = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+$")
# Bare single words a variable may still be named (plural collections, mirrors of external field names,
# the cross-workflow dispatch name, discriminators), as the reference corpus's identifier rule allows.
# fmt: off
EXEMPT_VARIABLE_NAMES = frozenset(
    (
        "requirements", "features", "exclusions", "dimensions", "tasks", "results", "submodules", "paths", "fields",
        "filters", "stats", "effects", "substitutions", "findings", "assumptions", "subsystems", "transitions",
        "options", "branches", "agents", "changes", "failures", "items", "files", "gaps", "outcomes", "body", "query",
        "repo", "owner", "number", "title", "branch", "diff", "limit", "name", "sha", "url", "head", "base", "ref",
        "labels", "path", "cursor", "cql", "jql", "description", "assignee", "depth", "direction", "summary", "state",
        "target", "adr", "type", "mode", "kind",
    )
)
# fmt: on
_ACTIVITY_FILE = re.compile(r"^(\d+)-(.+)\.ya?ml$")
_PARSE_ERRORS = (yaml.YAMLError, RecursionError, msgspec.ValidationError)


class _Failure(Exception):
    """A load-time problem with one workflow or activity; the message is user-facing."""


def _json_problem(value: Any) -> str | None:
    """Why ``value`` is not plain JSON data (finite numbers, string keys), or ``None``."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else "a non-finite number"
    if isinstance(value, list):
        return next((p for p in map(_json_problem, value) if p), None)
    if isinstance(value, dict):
        if any(not isinstance(k, str) for k in value):
            return "a mapping with a non-string key"
        return next((p for p in map(_json_problem, value.values()) if p), None)
    return f"a YAML {type(value).__name__} (quote it to make a string)"


def _require_json(value: Any, where: str) -> None:
    problem = _json_problem(value)
    if problem is not None:
        raise _Failure(f"{where} is {problem}; values must be plain JSON data")


def _check_options(options: Any, where: str) -> None:
    for option in options or ():
        if option.effect is not None and option.effect.set_variable is not None:
            _require_json(option.effect.set_variable, f"{where} option '{option.id}' setVariable")


def _check_activity_values(steps: Any) -> None:
    for step in steps:
        where = f"step '{step.id}'"
        for action in getattr(step, "actions", None) or ():
            if action.value is not msgspec.UNSET:
                _require_json(action.value, f"{where} action value")
        if isinstance(step, CheckpointStep):
            _check_options(step.options, where)
        elif isinstance(step, TechniqueStep) and not isinstance(step.technique, str):
            _require_json(step.technique.inputs, f"{where} technique inputs")
        elif isinstance(step, LoopStep):
            _check_activity_values(step.steps)


class _Manifest(msgspec.Struct, frozen=True):
    dir_name: str
    path: Path
    label: str
    raw: dict[str, Any]
    definition: WorkflowDef


class _Loader:
    """One load pass over a root; holds the per-pass lookups (no state outlives ``load_corpus``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root_text = str(root)
        self.load_errors: list[LoadError] = []
        self.manifests: dict[str, _Manifest] = {}
        self.by_dir: dict[str, _Manifest] = {}
        self.activity_cache: dict[Path, Activity | ActivityLoadError] = {}

    def label(self, path: Path | str) -> str:
        text = str(path)
        prefix = self.root_text + os.sep
        return (text[len(prefix) :] if text.startswith(prefix) else text).replace(os.sep, "/")

    # ---- manifests -------------------------------------------------------------------------------

    def read_manifest(self, dir_name: str, path: Path) -> None:
        label = self.label(path)
        raw: Any = None
        try:
            raw = load_yaml(read_text(path))
            if not isinstance(raw, dict):
                raise _Failure("manifest is not a YAML mapping")
            missing = [key for key in ("id", "title", "version") if not raw.get(key)]
            if missing:
                raise _Failure(f"manifest is missing required field(s): {', '.join(missing)}")
            definition = msgspec.convert(raw, WorkflowDef)
            for name, fragment in ((definition.fragments.checkpoints or {}) if definition.fragments else {}).items():
                _check_options(fragment.options, f"checkpoint fragment '{name}'")
            for variable in definition.variables or ():
                if variable.default_value is not msgspec.UNSET:
                    _require_json(variable.default_value, f"variable '{variable.name}' defaultValue")
                if not (_QUALIFIED_NAME.match(variable.name) or variable.name in EXEMPT_VARIABLE_NAMES):
                    raise _Failure(
                        f"variable name '{variable.name}' must be snake_case with at least two words "
                        "(or an exempt bare word)"
                    )
            if definition.id in self.manifests:
                raise _Failure(
                    f"duplicate workflow id '{definition.id}' (also in {self.manifests[definition.id].label})"
                )
        except (*READ_ERRORS, *_PARSE_ERRORS, _Failure) as exc:
            declared = raw.get("id") if isinstance(raw, dict) else None
            workflow_id = declared if isinstance(declared, str) and declared else dir_name
            self.load_errors.append(LoadError(label, error_text(exc), workflow_id))
            return
        manifest = _Manifest(dir_name, path, label, raw, definition)
        self.manifests[definition.id] = manifest
        self.by_dir.setdefault(dir_name, manifest)

    def fragments_of(self, workflow_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(rule_fragments, raw_checkpoint_fragments)`` of a workflow (empty when unknown)."""
        manifest = self.manifests.get(workflow_id) or self.by_dir.get(workflow_id)
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
        raise _Failure(f"malformed fragment ref '{ref}' (expected 'name' or 'workflow::name')")

    def rule_fragment(self, ref: str, current: str) -> tuple[str, ...]:
        workflows, name = self.fragment_candidates(ref, current)
        for workflow_id in workflows:
            body = self.fragments_of(workflow_id)[0].get(name)
            if body is not None:
                return (body,) if isinstance(body, str) else tuple(body)
        looked = " or ".join(f"'{w}'" for w in workflows)
        raise _Failure(f"unresolved rule fragment '{ref}' (no fragments.rules.{name} in {looked})")

    def resolve_rules(self, items: tuple[str | RuleRef, ...] | None, current: str) -> tuple[str, ...]:
        out: list[str] = []
        for item in items or ():
            out.extend((item,) if isinstance(item, str) else self.rule_fragment(item.ref, current))
        return tuple(out)

    # ---- activities ------------------------------------------------------------------------------

    def checkpoint_fragment(self, ref: str, source: str) -> dict[str, Any]:
        workflows, name = self.fragment_candidates(ref, source)
        for workflow_id in workflows:
            body = self.fragments_of(workflow_id)[1].get(name)
            if isinstance(body, dict):
                return copy.deepcopy(body)
        looked = " or ".join(f"'{w}'" for w in workflows)
        raise _Failure(f"unresolved checkpoint fragment '{ref}' (no fragments.checkpoints.{name} in {looked})")

    def materialise(self, step: dict[str, Any], source: str) -> dict[str, Any]:
        step_id = step.get("id")
        if "ref" not in step:
            if step.get("message") is None or step.get("options") is None:
                raise _Failure(f"checkpoint '{step_id}' declares neither a fragment ref nor message and options")
            return step
        local = [key for key in ("message", "options", "defaultOption", "autoAdvanceMs") if key in step]
        if local:
            raise _Failure(f"checkpoint '{step_id}' declares ref '{step['ref']}' and body field(s) {', '.join(local)}")
        body = self.checkpoint_fragment(str(step["ref"]), source)
        for key in ("condition", "blocking"):
            if key in body and key in step:
                raise _Failure(f"checkpoint '{step_id}' declares {key} but fragment '{step['ref']}' already has one")
        out: dict[str, Any] = {}
        for key, value in step.items():
            if key == "ref":
                out.update(body)
            else:
                out[key] = value
        return out

    def process_steps(self, steps: list[Any], scope: str, source: str) -> list[dict[str, Any]]:
        seen: set[str] = set()
        out: list[dict[str, Any]] = []
        for position, original in enumerate(steps, start=1):
            step = dict(original)
            kind = step.get("kind")
            step_id = step.get("id")
            if not step_id:
                technique = step.get("technique")
                name = technique.get("name") if isinstance(technique, dict) else technique
                derived = name.split("::")[-1] if kind == "technique" and isinstance(name, str) else ""
                if not derived:
                    raise _Failure(f"{scope}: step {position} ({kind}) has no id; only technique steps derive one")
                step_id = derived
                step = {
                    **{k: v for k, v in step.items() if k == "kind"},
                    "id": derived,
                    **{k: v for k, v in step.items() if k not in ("kind", "id")},
                }
            if step_id in seen:
                raise _Failure(f"{scope}: duplicate step id '{step_id}'")
            seen.add(step_id)
            if kind == "checkpoint":
                step = self.materialise(step, source)
            elif kind == "loop":
                step["steps"] = self.process_steps(list(step.get("steps") or ()), f"loop '{step_id}' steps", source)
            out.append(step)
        return out

    def build_activity(self, raw: Any, *, label: str, expected_id: str | None, prefix: str, source: str) -> Activity:
        if not isinstance(raw, dict):
            raise _Failure("activity is not a YAML mapping")
        definition = msgspec.convert(raw, ActivityDef)
        if expected_id is not None and definition.id != expected_id:
            raise _Failure(f"activity id '{definition.id}' does not match the filename id '{expected_id}'")
        processed = dict(raw)
        if "steps" in processed:
            processed["steps"] = self.process_steps(list(raw["steps"]), "top-level steps", source)
        final = msgspec.convert(processed, ActivityDef)
        _check_activity_values(final.steps)
        return Activity(
            id=final.id,
            version=final.version,
            name=final.name,
            description=final.description,
            required=final.required,
            rules=final.rules,
            outcome=final.outcome,
            techniques=final.techniques,
            bundle_max_chars=final.bundle_techniques.max_chars if final.bundle_techniques else None,
            steps=final.steps,
            decisions=final.decisions,
            transitions=final.transitions,
            triggers=final.triggers,
            artifact_prefix=prefix,
            source_workflow=source,
            source_file=label,
            raw=processed,
        )

    def load_activity_file(self, path: Path, source: str) -> Activity | ActivityLoadError:
        cached = self.activity_cache.get(path)
        if cached is not None:
            return cached
        match = _ACTIVITY_FILE.match(path.name)
        prefix, file_id = (match.group(1), match.group(2)) if match else ("", path.stem)
        label = self.label(path)
        result: Activity | ActivityLoadError
        try:
            result = self.build_activity(
                load_yaml(read_text(path)), label=label, expected_id=file_id, prefix=prefix, source=source
            )
        except (*READ_ERRORS, *_PARSE_ERRORS, _Failure) as exc:
            result = ActivityLoadError(label, file_id, error_text(exc))
        self.activity_cache[path] = result
        return result

    def activities_dir(self, manifest: _Manifest) -> Path:
        base = manifest.path.parent if manifest.path.name.startswith("workflow.") else self.root / manifest.dir_name
        return base / (manifest.definition.activities_dir or "activities")

    def assemble(self, manifest: _Manifest) -> tuple[list[Activity], list[ActivityLoadError]]:
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
                    result: Activity | ActivityLoadError = self.build_activity(
                        entry, label=label, expected_id=None, prefix="", source=definition.id
                    )
                except (*_PARSE_ERRORS, _Failure) as exc:
                    result = ActivityLoadError(label, str(entry.get("id", "")), error_text(exc))
                take(result, borrowed=True)
            elif "/" in entry:
                take(self.borrowed(entry), borrowed=True)
            elif entry in local_names or entry in ids:
                continue
            else:
                raise _Failure(f"activities entry '{entry}' names no file in {self.label(directory)}")
        return activities, errors

    def borrowed(self, entry: str) -> Activity | ActivityLoadError:
        other, _, file_name = entry.partition("/")
        source_manifest = self.by_dir.get(other) or self.manifests.get(other)
        if not file_name or "/" in file_name or not _ACTIVITY_FILE.match(file_name):
            raise _Failure(f"activities entry '{entry}' is not '<workflow>/NN-<id>.yaml'")
        if source_manifest is not None:
            path = self.activities_dir(source_manifest) / file_name
            source = source_manifest.definition.id
        else:
            path = self.root / other / "activities" / file_name
            source = other
        if not path.is_file():
            raise _Failure(f"activities entry '{entry}' names a missing file ({self.label(path)})")
        return self.load_activity_file(path, source)

    # ---- workflows -------------------------------------------------------------------------------

    def build_workflow(self, manifest: _Manifest) -> Workflow:
        definition = manifest.definition
        rules = definition.rules
        workflow_rules = WorkflowRules(
            workflow=self.resolve_rules(rules.workflow if rules else None, definition.id),
            activity=self.resolve_rules(rules.activity if rules else None, definition.id),
            universal=self.resolve_rules(rules.universal if rules else None, definition.id),
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
        if stem not in loader.by_dir:
            loader.read_manifest(stem, path)

    workflows: dict[str, Workflow] = {}
    for workflow_id, manifest in loader.manifests.items():
        try:
            workflows[workflow_id] = loader.build_workflow(manifest)
        except (*READ_ERRORS, *_PARSE_ERRORS, _Failure) as exc:
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
