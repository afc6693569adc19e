"""The workflow corpus: load a workflow directory and answer content questions about it.

Only ``load_corpus`` does I/O; everything else is a pure function of the loaded ``Corpus``. Modules:
``schema`` (closed file Structs), ``model`` (loaded records), ``conditions``/``values`` (conditions and
``when``), ``loader``/``indexing`` (I/O), ``markdown`` (technique/resource text), ``techniques``,
``resources``, ``yamlload`` (fast ``CSafeLoader``-equivalent YAML).

Loading
    ``load_corpus(root) -> Corpus`` never raises for bad content (the whole real corpus loads in ~150-250 ms).
    ``Corpus.workflows`` (id → ``Workflow``, folder order; ``meta`` included with ``hidden=True``),
    ``Corpus.listed_workflows()``, ``Corpus.load_errors`` (``[LoadError{file, error, workflow_id}]``),
    ``Corpus.load_error_for(id)`` (why an on-disk workflow failed: answer ``WorkflowValidationError``),
    ``Corpus.technique_errors()`` (parses every technique); per workflow ``Workflow.activities`` (assembly
    order: activities dir by ``NN``, then borrowed/inline with new ids), ``Workflow.get_activity(id)``,
    ``Workflow.activity_load_errors`` (``[ActivityLoadError{file, activity_id, error}]``),
    ``Workflow.rules.{workflow,activity,universal}`` (resolved texts), ``Workflow.variables``
    (``VariableDecl{name, type, description, default_value, has_default, required}``),
    ``Workflow.techniques_workflow``/``techniques_activity``, ``Workflow.fragments``.

Activities
    ``Activity`` carries typed ``steps`` (``TechniqueStep``/``ActionStep``/``CheckpointStep``/``LoopStep``;
    ids derived, checkpoint refs materialised so every checkpoint has ``message``/``options``),
    ``decisions``, ``transitions``, ``triggers``, ``artifact_prefix`` (filename ``NN``), ``source_workflow``,
    ``bundle_max_chars`` (``None``/int) and ``raw`` (the plain dict ``get_activity`` echoes as YAML).
    ``Activity.flattened_steps() -> [FlatStep{step, loops}]`` (document order, enclosing loops outermost
    first), ``Activity.find_step(id)``, ``Activity.checkpoints()``, ``Activity.find_checkpoint(id)``
    (exact, else base id before ``#``); ``exits(activity) -> [{to, condition?, isDefault?}]``;
    ``step_technique_ref(step)``. ``TERMINAL_ACTIVITY`` is ``"__terminal__"``.

Conditions
    ``evaluate_condition(cond, bag)``, ``render_condition(cond)``, ``condition_variables(cond)``;
    ``parse_when(text) -> Expr`` (raises ``WhenSyntaxError`` with ``position``/``token``),
    ``evaluate_when(expr, bag)``, ``evaluate_when_text(text, bag)`` (unparseable ⇒ False),
    ``when_variables(expr) -> set[str]`` (dotted paths as written), ``render_when(expr)``; ``lookup_path``
    returns ``MISSING`` for an absent path.

Techniques
    ``resolve_technique(corpus, ref, *, workflow_id, activity_id=None, executing_workflow_id=None) ->
    ResolvedTechnique | None`` (``resolved_id``, ``key``, ``technique``, ``ancestors``, ``scopes``,
    ``technique_id``, ``namespace``); ``resolve_ref`` also answers rule refs (``ResolvedRules``);
    ``technique_payload(resolved) -> dict`` (``{id, version, capability, inputs?, protocol, outputs?, rules?,
    inherits, contracts}``, deterministic order); ``bundle_for(corpus, workflow_id, refs, core_refs) ->
    {techniques?, rules?, unresolved?}``; constants ``CORE_ORCHESTRATOR``, ``CORE_WORKER``.

Resources
    ``find_resource(corpus, resource_id, *, workflow_id) -> ResourceSlice{resource_id, id, version, body}``
    (raises ``ResourceNotFoundError``: ``Resource not found: <id> in workflow <wf>`` /
    ``Section '#<a>' not found in resource '<id>'``); ``technique_resource_refs(resolved) -> [id]``.
"""

from __future__ import annotations

from orchestrator.workflow.corpus.conditions import (
    MISSING,
    AndCondition,
    Condition,
    Expr,
    NotCondition,
    OrCondition,
    SimpleCondition,
    WhenSyntaxError,
    comparable_number,
    condition_variables,
    evaluate_condition,
    evaluate_when,
    evaluate_when_text,
    lookup_path,
    parse_when,
    render_condition,
    render_when,
    when_variables,
)
from orchestrator.workflow.corpus.loader import load_corpus
from orchestrator.workflow.corpus.model import (
    Action,
    ActionStep,
    Activity,
    ActivityLoadError,
    CheckpointEffect,
    CheckpointFragment,
    CheckpointOption,
    CheckpointStep,
    Corpus,
    Decision,
    DecisionBranch,
    FlatStep,
    LoadError,
    LoopStep,
    ProtocolBlock,
    Resource,
    Step,
    Technique,
    TechniqueBinding,
    TechniqueError,
    TechniqueInput,
    TechniqueOutput,
    TechniqueParseError,
    TechniqueStep,
    Transition,
    Trigger,
    VariableDecl,
    Workflow,
    WorkflowRules,
    exits,
    step_technique_ref,
)
from orchestrator.workflow.corpus.resources import (
    ResourceSlice,
    find_resource,
    parse_resource_id,
    technique_resource_refs,
)
from orchestrator.workflow.corpus.schema import META_WORKFLOW_ID, TERMINAL_ACTIVITY
from orchestrator.workflow.corpus.techniques import (
    CORE_ORCHESTRATOR,
    CORE_WORKER,
    ResolvedRules,
    ResolvedTechnique,
    bundle_for,
    resolve_ref,
    resolve_technique,
    technique_payload,
)
from orchestrator.workflow.corpus.validity import EXEMPT_VARIABLE_NAMES

__all__ = [
    "CORE_ORCHESTRATOR",
    "CORE_WORKER",
    "EXEMPT_VARIABLE_NAMES",
    "META_WORKFLOW_ID",
    "MISSING",
    "TERMINAL_ACTIVITY",
    "Action",
    "ActionStep",
    "Activity",
    "ActivityLoadError",
    "AndCondition",
    "CheckpointEffect",
    "CheckpointFragment",
    "CheckpointOption",
    "CheckpointStep",
    "Condition",
    "Corpus",
    "Decision",
    "DecisionBranch",
    "Expr",
    "FlatStep",
    "LoadError",
    "LoopStep",
    "NotCondition",
    "OrCondition",
    "ProtocolBlock",
    "ResolvedRules",
    "ResolvedTechnique",
    "Resource",
    "ResourceSlice",
    "SimpleCondition",
    "Step",
    "Technique",
    "TechniqueBinding",
    "TechniqueError",
    "TechniqueInput",
    "TechniqueOutput",
    "TechniqueParseError",
    "TechniqueStep",
    "Transition",
    "Trigger",
    "VariableDecl",
    "WhenSyntaxError",
    "Workflow",
    "WorkflowRules",
    "bundle_for",
    "comparable_number",
    "condition_variables",
    "evaluate_condition",
    "evaluate_when",
    "evaluate_when_text",
    "exits",
    "find_resource",
    "load_corpus",
    "lookup_path",
    "parse_resource_id",
    "parse_when",
    "render_condition",
    "render_when",
    "resolve_ref",
    "resolve_technique",
    "step_technique_ref",
    "technique_payload",
    "technique_resource_refs",
    "when_variables",
]
