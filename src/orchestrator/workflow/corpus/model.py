"""The loaded corpus as frozen msgspec Structs.

``Corpus``/``Workflow``/``Activity`` plus the technique and resource records are what the loader builds:
rules resolved, fragments materialised, step ids derived, activities assembled. Step, checkpoint and
decision types come from ``schema`` (re-exported here). Everything is immutable by convention (frozen
Structs; containers inside are never mutated after load).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from orchestrator.workflow.corpus.conditions import render_condition
from orchestrator.workflow.corpus.schema import (
    META_WORKFLOW_ID,
    TERMINAL_ACTIVITY,
    Action,
    ActionStep,
    ActivityDef,
    BundleTechniques,
    CheckpointEffect,
    CheckpointFragment,
    CheckpointOption,
    CheckpointStep,
    Decision,
    DecisionBranch,
    LoopStep,
    Step,
    TechniqueBinding,
    TechniqueStep,
    Transition,
    Trigger,
    WorkflowDef,
)

__all__ = [
    "META_WORKFLOW_ID",
    "TERMINAL_ACTIVITY",
    "Action",
    "ActionStep",
    "Activity",
    "ActivityDef",
    "ActivityLoadError",
    "BundleTechniques",
    "CheckpointEffect",
    "CheckpointFragment",
    "CheckpointOption",
    "CheckpointStep",
    "Corpus",
    "Decision",
    "DecisionBranch",
    "FlatStep",
    "Fragments",
    "LoadError",
    "LoopStep",
    "ProtocolBlock",
    "Resource",
    "Step",
    "Technique",
    "TechniqueBinding",
    "TechniqueEntry",
    "TechniqueError",
    "TechniqueInput",
    "TechniqueOutput",
    "TechniqueParseError",
    "TechniqueStep",
    "Transition",
    "Trigger",
    "VariableDecl",
    "Workflow",
    "WorkflowDef",
    "WorkflowRules",
    "exits",
    "step_technique_ref",
]

# --------------------------------------------------------------------------------------------------
# Loaded model
# --------------------------------------------------------------------------------------------------


class LoadError(msgspec.Struct, frozen=True, omit_defaults=True):
    """A workflow that failed to load (``list_workflows.load_errors``); ``file`` is root-relative.

    ``workflow_id`` is the id the manifest declares (else its folder name) when known, so a lookup of a
    workflow that failed can answer ``WorkflowValidationError`` rather than not-found.
    """

    file: str
    error: str
    workflow_id: str | None = None


class ActivityLoadError(msgspec.Struct, frozen=True):
    """An activity excluded from its workflow (``get_workflow.activity_load_errors``)."""

    file: str
    activity_id: str
    error: str


class TechniqueError(msgspec.Struct, frozen=True):
    """A technique file that failed to parse; the technique is treated as missing."""

    file: str
    error: str


class VariableDecl(msgspec.Struct, frozen=True):
    """A declared workflow variable; ``has_default`` distinguishes a falsy default from none."""

    name: str
    type: str
    description: str | None
    default_value: Any
    has_default: bool
    required: bool | None


class WorkflowRules(msgspec.Struct, frozen=True):
    """Resolved rule texts: refs replaced by fragment text, list fragments spliced."""

    workflow: tuple[str, ...] = ()
    activity: tuple[str, ...] = ()
    universal: tuple[str, ...] = ()


class Fragments(msgspec.Struct, frozen=True):
    rules: dict[str, tuple[str, ...]] = msgspec.field(default_factory=dict)
    checkpoints: dict[str, CheckpointFragment] = msgspec.field(default_factory=dict)


class FlatStep(msgspec.Struct, frozen=True):
    """A step in document order with the chain of enclosing loops (outermost first)."""

    step: Step
    loops: tuple[LoopStep, ...]


def step_technique_ref(step: TechniqueStep) -> str:
    """The technique reference a technique step binds (bare string or ``binding.name``)."""
    return step.technique if isinstance(step.technique, str) else step.technique.name


class Activity(msgspec.Struct, frozen=True, kw_only=True):
    """A loaded activity. Step ids are derived, checkpoint refs materialised (steps carry inline bodies).

    ``raw`` is the activity as a plain dict in file order, with derived step ids inserted and each
    checkpoint ``ref`` replaced by the fragment body — what ``get_activity`` echoes as YAML.
    ``artifact_prefix`` is the filename ``NN`` ("" for an inline activity); ``source_workflow`` is the
    workflow whose file defined it (differs from the owner for borrowed activities).
    """

    id: str
    version: str
    name: str
    description: str | None
    required: bool
    rules: tuple[str, ...]
    outcome: tuple[str, ...]
    techniques: tuple[str, ...]
    bundle_max_chars: int | None
    steps: tuple[Step, ...]
    decisions: tuple[Decision, ...]
    transitions: tuple[Transition, ...]
    triggers: tuple[Trigger, ...]
    artifact_prefix: str
    source_workflow: str
    source_file: str
    raw: dict[str, Any]

    def flattened_steps(self) -> list[FlatStep]:
        """Every step in document order, descending into loop bodies (a loop precedes its body)."""
        out: list[FlatStep] = []

        def walk(steps: tuple[Step, ...], loops: tuple[LoopStep, ...]) -> None:
            for step in steps:
                out.append(FlatStep(step, loops))
                if isinstance(step, LoopStep):
                    walk(step.steps, (*loops, step))

        walk(self.steps, ())
        return out

    def find_step(self, step_id: str) -> FlatStep | None:
        """The first step (document order, any scope) with this id."""
        for flat in self.flattened_steps():
            if flat.step.id == step_id:
                return flat
        return None

    def checkpoints(self) -> list[CheckpointStep]:
        """Every checkpoint step, document order (loop bodies included)."""
        return [f.step for f in self.flattened_steps() if isinstance(f.step, CheckpointStep)]

    def find_checkpoint(self, checkpoint_id: str) -> CheckpointStep | None:
        """Exact id first, else a checkpoint whose base id (before ``#``) matches."""
        checkpoints = self.checkpoints()
        for cp in checkpoints:
            if cp.id == checkpoint_id:
                return cp
        base = checkpoint_id.split("#", 1)[0]
        for cp in checkpoints:
            if cp.id.split("#", 1)[0] == base:
                return cp
        return None


def exits(activity: Activity) -> list[dict[str, Any]]:
    """The activity's exits: transitions, then decision branches, then checkpoint ``transitionTo`` options.

    Deduplicated by ``to`` (first wins). Each is ``{to, condition?, isDefault?}``; conditions are rendered
    text and a checkpoint exit's condition is ``checkpoint:<cp>:<opt>``.
    """
    out: list[dict[str, Any]] = []
    seen: set[str] = set()

    def add(to: str, condition: str | None, is_default: bool) -> None:
        if to in seen:
            return
        seen.add(to)
        entry: dict[str, Any] = {"to": to}
        if condition is not None:
            entry["condition"] = condition
        if is_default:
            entry["isDefault"] = True
        out.append(entry)

    for transition in activity.transitions:
        rendered = render_condition(transition.condition) if transition.condition is not None else None
        add(transition.to, rendered, transition.is_default)
    for decision in activity.decisions:
        for branch in decision.branches:
            if branch.transition_to:
                rendered = render_condition(branch.condition) if branch.condition is not None else None
                add(branch.transition_to, rendered, branch.is_default)
    for checkpoint in activity.checkpoints():
        for option in checkpoint.options or ():
            if option.effect is not None and option.effect.transition_to:
                add(option.effect.transition_to, f"checkpoint:{checkpoint.id}:{option.id}", False)
    return out


class Workflow(msgspec.Struct, frozen=True, kw_only=True):
    """A loaded workflow. ``activities`` are in assembly order (directory by ``NN``, then borrowed).

    ``dir_name`` is the folder under the corpus root (technique/resource namespace); ``hidden`` is true
    for ``meta``.
    """

    id: str
    version: str
    title: str
    description: str | None
    author: str | None
    tags: tuple[str, ...]
    initial_activity: str | None
    variables: tuple[VariableDecl, ...]
    rules: WorkflowRules
    fragments: Fragments
    techniques_workflow: tuple[str, ...]
    techniques_activity: tuple[str, ...]
    activities: tuple[Activity, ...]
    activity_load_errors: tuple[ActivityLoadError, ...]
    source_dir: str
    dir_name: str
    manifest_file: str
    hidden: bool
    raw: dict[str, Any]

    def get_activity(self, activity_id: str) -> Activity | None:
        for activity in self.activities:
            if activity.id == activity_id:
                return activity
        return None

    def variable(self, name: str) -> VariableDecl | None:
        for decl in self.variables:
            if decl.name == name:
                return decl
        return None


# --------------------------------------------------------------------------------------------------
# Techniques and resources
# --------------------------------------------------------------------------------------------------


class TechniqueInput(msgspec.Struct, frozen=True, omit_defaults=True):
    id: str
    description: str | None = None
    default: str | None = None
    components: dict[str, str] | None = None
    optional: bool = False


class TechniqueOutput(msgspec.Struct, frozen=True, omit_defaults=True):
    id: str
    description: str | None = None
    artifact: str | None = None
    audience: str | None = None
    components: dict[str, str] | None = None


class ProtocolBlock(msgspec.Struct, frozen=True, omit_defaults=True):
    title: str | None = None
    steps: tuple[str, ...] = ()


class Technique(msgspec.Struct, frozen=True, kw_only=True):
    """A parsed technique markdown file. Identity comes from its path only.

    ``path`` is relative to the namespace's ``techniques/`` without ``.md`` (``g/op``; ``g`` for a group's
    ``TECHNIQUE.md``; ``TECHNIQUE`` for the root contract). ``resource_links`` are the resource ids its
    rewritten links name, in order of appearance.
    """

    namespace: str
    path: str
    file: str
    version: str
    capability: str
    inputs: tuple[TechniqueInput, ...]
    outputs: tuple[TechniqueOutput, ...]
    protocol: tuple[ProtocolBlock, ...]
    rules: dict[str, str]
    resource_links: tuple[str, ...]
    is_group: bool


class TechniqueParseError(ValueError):
    """A technique file outside the format; the message names the file and the problem."""


class TechniqueEntry:
    """One indexed technique file, parsed on first use (memoised; parsing is pure, the text was read at load).

    ``technique`` is ``None`` when the file failed to parse or read; ``error`` then says why.
    """

    __slots__ = ("_parser", "_result", "_text", "file", "is_group", "namespace", "path")

    def __init__(
        self,
        *,
        namespace: str,
        path: str,
        file: str,
        is_group: bool,
        text: str | None,
        parser: Callable[[str], Technique] | None,
        error: str | None = None,
    ) -> None:
        self.namespace = namespace
        self.path = path
        self.file = file
        self.is_group = is_group
        self._text = text
        self._parser = parser
        self._result: Technique | str | None = error

    def _resolve(self) -> Technique | str:
        if self._result is None:
            assert self._text is not None and self._parser is not None
            try:
                self._result = self._parser(self._text)
            except TechniqueParseError as exc:
                self._result = str(exc)
            self._text = None
            self._parser = None
        return self._result

    @property
    def technique(self) -> Technique | None:
        result = self._resolve()
        return result if isinstance(result, Technique) else None

    @property
    def error(self) -> str | None:
        result = self._resolve()
        return result if isinstance(result, str) else None

    def __repr__(self) -> str:
        return f"TechniqueEntry({self.namespace}:{self.path})"


class Resource(msgspec.Struct, frozen=True):
    """A resource markdown file: ``body`` has the frontmatter stripped."""

    namespace: str
    stem: str
    file: str
    name: str | None
    version: str | None
    body: str


class Corpus(msgspec.Struct, frozen=True, kw_only=True):
    """A whole workflow directory, loaded. ``workflows`` includes ``meta`` (flagged hidden).

    ``techniques``/``resources`` are indexed per namespace (folder name): ``techniques[ns][path]`` and
    ``resources[ns][stem]``; ``resource_names[ns][name]`` maps frontmatter names to stems.
    ``root_contracts[ns]`` is the namespace's ``techniques/TECHNIQUE.md`` entry. Technique files are read at
    load and parsed on first use; ``technique_errors()`` parses them all.
    """

    root: str
    workflows: dict[str, Workflow]
    load_errors: tuple[LoadError, ...]
    techniques: dict[str, dict[str, TechniqueEntry]]
    root_contracts: dict[str, TechniqueEntry]
    resources: dict[str, dict[str, Resource]]
    resource_names: dict[str, dict[str, str]]
    namespace_of: dict[str, str]

    def technique_errors(self) -> list[TechniqueError]:
        """Every technique file that fails to parse (parses all; each such technique counts as missing)."""
        entries = [*self.root_contracts.values(), *(e for index in self.techniques.values() for e in index.values())]
        return [TechniqueError(e.file, e.error) for e in entries if e.error is not None]

    def listed_workflows(self) -> list[Workflow]:
        """Workflows shown by ``list_workflows`` (``meta`` excluded), in folder order."""
        return [wf for wf in self.workflows.values() if not wf.hidden]

    def get_workflow(self, workflow_id: str) -> Workflow | None:
        return self.workflows.get(workflow_id)

    def load_error_for(self, workflow_id: str) -> LoadError | None:
        """Why a workflow that is on disk failed to load (``None`` if it loaded or is unknown)."""
        if workflow_id in self.workflows:
            return None
        return next((e for e in self.load_errors if e.workflow_id == workflow_id), None)

    def namespace(self, workflow_id: str) -> str:
        """The folder holding a workflow's techniques/resources (its id when unknown)."""
        return self.namespace_of.get(workflow_id, workflow_id)
