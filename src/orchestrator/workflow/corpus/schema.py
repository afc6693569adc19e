"""The corpus file schema: activity and workflow YAML as closed msgspec Structs.

Every object is closed (an unknown key is a ``msgspec.ValidationError`` naming it and its path), camelCase
in the file and snake_case in Python, and immutable. Steps are a union tagged by ``kind``; conditions are
the tagged union of ``conditions``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from orchestrator.workflow.corpus.conditions import Condition

__all__ = [
    "META_WORKFLOW_ID",
    "TERMINAL_ACTIVITY",
    "Action",
    "ActionStep",
    "ActivityDef",
    "BundleTechniques",
    "CheckpointEffect",
    "CheckpointFragment",
    "CheckpointOption",
    "CheckpointStep",
    "Decision",
    "DecisionBranch",
    "FragmentsDef",
    "LoopStep",
    "RuleRef",
    "Step",
    "TechniqueBinding",
    "TechniqueStep",
    "TechniquesDef",
    "Transition",
    "Trigger",
    "VariableDef",
    "WorkflowDef",
    "WorkflowRulesDef",
]

META_WORKFLOW_ID = "meta"
TERMINAL_ACTIVITY = "__terminal__"

Version = Annotated[str, msgspec.Meta(pattern=r"^\d+\.\d+\.\d+$")]
PositiveInt = Annotated[int, msgspec.Meta(gt=0)]


class _Closed(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", omit_defaults=True, kw_only=True
):
    """Base of every file-schema object: closed, camelCase keys, immutable."""


# --------------------------------------------------------------------------------------------------
# Activity file schema
# --------------------------------------------------------------------------------------------------


class Action(_Closed, kw_only=True):
    """An agent-executed action; the server never applies ``set``."""

    action: Literal["log", "validate", "set", "emit", "message"]
    target: str | None = None
    message: str | None = None
    value: Any = msgspec.UNSET
    description: str | None = None
    condition: Condition | None = None


class TechniqueBinding(_Closed, kw_only=True):
    """Structured step binding: input deviations (literal, bag rename or ``{template}``) and output remaps."""

    name: str
    inputs: dict[str, str | int | float | bool] | None = None
    outputs: dict[str, str] | None = None


class CheckpointEffect(_Closed, kw_only=True):
    set_variable: dict[str, Any] | None = None
    transition_to: str | None = None
    skip_activities: tuple[str, ...] | None = None
    record_reply: str | None = None


class CheckpointOption(_Closed, kw_only=True):
    id: str
    label: str
    description: str | None = None
    effect: CheckpointEffect | None = None


class _StepBase(_Closed, kw_only=True, tag_field="kind"):
    id: str = ""
    when: str | None = None
    condition: Condition | None = None
    required: bool = True


class TechniqueStep(_StepBase, kw_only=True, tag="technique"):
    technique: str | TechniqueBinding
    actions: tuple[Action, ...] | None = None


class ActionStep(_StepBase, kw_only=True, tag="action"):
    actions: tuple[Action, ...] = ()


class CheckpointStep(_StepBase, kw_only=True, tag="checkpoint"):
    """Inline body (``message`` + ``options``) or a fragment ``ref``; after load always inline."""

    ref: str | None = None
    message: str | None = None
    options: Annotated[tuple[CheckpointOption, ...], msgspec.Meta(min_length=1)] | None = None
    default_option: str | None = None
    auto_advance_ms: PositiveInt | None = None
    blocking: bool | None = None


class LoopStep(_StepBase, kw_only=True, tag="loop"):
    name: str | None = None
    loop_type: Literal["forEach", "while", "doWhile"]
    variable: str | None = None
    over: str | None = None
    break_condition: Condition | None = None
    max_iterations: PositiveInt | None = None
    steps: tuple[Step, ...]


Step = TechniqueStep | ActionStep | CheckpointStep | LoopStep


class DecisionBranch(_Closed, kw_only=True):
    id: str
    label: str
    condition: Condition | None = None
    transition_to: str | None = None
    is_default: bool = False


class Decision(_Closed, kw_only=True):
    id: str
    name: str
    description: str | None = None
    branches: Annotated[tuple[DecisionBranch, ...], msgspec.Meta(min_length=2)]


class Transition(_Closed, kw_only=True):
    to: str
    condition: Condition | None = None
    is_default: bool = False


class Trigger(_Closed, kw_only=True):
    workflow: str
    description: str | None = None
    pass_context: tuple[str, ...] = ()


class BundleTechniques(_Closed, kw_only=True):
    max_chars: Annotated[int, msgspec.Meta(ge=0)]


class ActivityDef(_Closed, kw_only=True):
    """One activity file as authored (closed object)."""

    id: str
    version: Version
    name: str
    description: str | None = None
    required: bool = True
    rules: tuple[str, ...] = ()
    outcome: tuple[str, ...] = ()
    techniques: tuple[str, ...] = ()
    bundle_techniques: BundleTechniques | None = None
    steps: tuple[Step, ...] = ()
    decisions: tuple[Decision, ...] = ()
    transitions: tuple[Transition, ...] = ()
    triggers: tuple[Trigger, ...] = ()


# --------------------------------------------------------------------------------------------------
# Workflow file schema
# --------------------------------------------------------------------------------------------------


class VariableDef(_Closed, kw_only=True):
    name: str
    type: Literal["string", "number", "boolean", "array", "object"]
    description: str | None = None
    default_value: Any = msgspec.UNSET
    required: bool | None = None


class RuleRef(_Closed, kw_only=True):
    ref: str


class WorkflowRulesDef(_Closed, kw_only=True):
    workflow: tuple[str | RuleRef, ...] | None = None
    activity: tuple[str | RuleRef, ...] | None = None
    universal: tuple[str | RuleRef, ...] | None = None


class CheckpointFragment(_Closed, kw_only=True):
    """A shared checkpoint body (``fragments.checkpoints.<name>``); it cannot itself hold a ref."""

    message: str
    options: Annotated[tuple[CheckpointOption, ...], msgspec.Meta(min_length=1)]
    default_option: str | None = None
    auto_advance_ms: PositiveInt | None = None
    blocking: bool | None = None
    condition: Condition | None = None


class FragmentsDef(_Closed, kw_only=True):
    rules: dict[str, str | tuple[str, ...]] | None = None
    checkpoints: dict[str, CheckpointFragment] | None = None


class TechniquesDef(_Closed, kw_only=True):
    workflow: tuple[str, ...] | None = None
    activity: tuple[str, ...] | None = None


class WorkflowDef(_Closed, kw_only=True):
    """``workflow.yaml`` as authored (closed object)."""

    id: str
    version: Version
    title: str
    description: str | None = None
    author: str | None = None
    tags: tuple[str, ...] | None = None
    schema_: str | None = msgspec.field(default=None, name="$schema")
    initial_activity: str | None = None
    activities_dir: str | None = None
    variables: tuple[VariableDef, ...] | None = None
    rules: WorkflowRulesDef | None = None
    fragments: FragmentsDef | None = None
    techniques: TechniquesDef | None = None
    activities: tuple[str | dict[str, Any], ...] | None = None
