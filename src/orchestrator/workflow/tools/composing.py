"""Composing step-bound technique payloads (shared by get_technique and get_activity's eager bundling).

A step binding resolves against the workflow that *authored* the activity (a borrowed activity keeps its
own technique namespace) with the activity-group shorthand (bare ``x`` in activity ``A`` tries ``A::x``
first); the root contract comes from the executing (session) workflow. A step-bound payload is the
technique payload annotated with binding provenance; its YAML is what the ledger hashes, identically for
get_technique and for a bundled step entry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from orchestrator.workflow.corpus import (
    Activity,
    Corpus,
    FlatStep,
    ResolvedTechnique,
    TechniqueBinding,
    TechniqueStep,
    Workflow,
    resolve_technique,
    step_technique_ref,
    technique_payload,
)
from orchestrator.workflow.errors import WorkflowError
from orchestrator.workflow.tools.ledger import content_hash
from orchestrator.workflow.tools.provenance import ProvenanceContext, annotate, optional_inputs, scan_producers
from orchestrator.workflow.tools.render import to_yaml

if TYPE_CHECKING:
    from orchestrator.workflow.tools.context import ServerState

__all__ = ["ComposedStep", "StepComposer", "ended_error", "not_current_error", "step_binding"]


class ComposedStep(msgspec.Struct, frozen=True, kw_only=True):
    """A step-bound technique: the payload (annotated), its YAML, hash and the UNRESOLVED warnings."""

    step_id: str
    resolved: ResolvedTechnique
    payload: dict[str, Any]
    text: str
    digest: str
    warnings: tuple[str, ...]


def not_current_error(requested: str, current: str) -> WorkflowError:
    """``activity_id`` naming something other than the session's current activity."""
    return WorkflowError(
        f"Activity '{requested}' is not the one this session is on: current activity is '{current or 'none'}'. "
        "Load the current activity, or ask the orchestrator which activity you were dispatched for.",
        code="ActivityMismatch",
    )


def ended_error(current: str) -> WorkflowError:
    """The session sits on the terminal sentinel: there is no activity to deliver."""
    return WorkflowError(
        f"No current activity: the workflow has ended (current activity '{current}'); nothing is left to load",
        code="NoCurrentActivity",
    )


def step_binding(step: TechniqueStep) -> TechniqueBinding | None:
    """The structured binding of a technique step (``None`` for a bare ``technique: ref``)."""
    return None if isinstance(step.technique, str) else step.technique


class StepComposer:
    """Resolves step bindings and composes step-bound payloads over one workflow of one corpus load.

    Everything it derives is a pure function of the corpus (composition is static and deterministic), so
    one instance per workflow is shared across calls until the corpus reloads (``for_workflow``): the
    provenance scan, each resolution and each composed step are computed once. Callers must treat the
    returned payloads as read-only.
    """

    def __init__(self, corpus: Corpus, workflow: Workflow) -> None:
        self.corpus = corpus
        self.workflow = workflow
        self._resolved: dict[tuple[str, str], ResolvedTechnique | None] = {}
        self._composed: dict[tuple[str, int], ComposedStep | None] = {}
        self._context: ProvenanceContext | None = None

    @staticmethod
    def for_workflow(state: ServerState, corpus: Corpus, workflow: Workflow) -> StepComposer:
        """The shared composer of ``workflow`` for the current corpus load."""
        return state.memo(("step-composer", workflow.id), lambda: StepComposer(corpus, workflow))

    def resolve(self, activity: Activity, step: TechniqueStep) -> ResolvedTechnique | None:
        """The technique a step binds, or ``None`` when it does not resolve."""
        memo = (activity.id, step.id)
        if memo not in self._resolved:
            self._resolved[memo] = resolve_technique(
                self.corpus,
                step_technique_ref(step),
                workflow_id=activity.source_workflow or self.workflow.id,
                activity_id=activity.id,
                executing_workflow_id=self.workflow.id,
            )
        return self._resolved[memo]

    def own_outputs(self, activity: Activity, step: TechniqueStep) -> tuple[str, ...]:
        """The bound technique's own declared output ids (empty when unresolved)."""
        resolved = self.resolve(activity, step)
        return () if resolved is None else tuple(o.id for o in resolved.technique.outputs)

    def context(self) -> ProvenanceContext:
        if self._context is None:
            self._context = scan_producers(
                self.workflow.activities, (v.name for v in self.workflow.variables), self.own_outputs
            )
        return self._context

    def compose(self, activity: Activity, flat: FlatStep) -> ComposedStep | None:
        """The step-bound payload of a technique step, or ``None`` when its technique does not resolve."""
        memo = (activity.id, id(flat.step))
        if memo not in self._composed:
            self._composed[memo] = self._compose(activity, flat)
        return self._composed[memo]

    def _compose(self, activity: Activity, flat: FlatStep) -> ComposedStep | None:
        step = flat.step
        if not isinstance(step, TechniqueStep):
            return None
        resolved = self.resolve(activity, step)
        if resolved is None:
            return None
        payload = technique_payload(resolved)
        ctx = self.context()
        position = ctx.position(activity.id, step.id)
        warnings: list[str] = []
        if position is not None:
            inputs = [*resolved.technique.inputs, *(i for a in resolved.ancestors for i in a.inputs)]
            payload, warnings = annotate(
                payload,
                ctx=ctx,
                position=position,
                binding=step_binding(step),
                optional_ids=optional_inputs(inputs),
                technique_id=resolved.resolved_id,
                step_id=step.id,
            )
        text = to_yaml(payload)
        return ComposedStep(
            step_id=step.id,
            resolved=resolved,
            payload=payload,
            text=text,
            digest=content_hash(text),
            warnings=tuple(warnings),
        )

    def artifacts(self, activity: Activity) -> list[dict[str, Any]]:
        """``[{id, name, audience?}]`` from the bound techniques' own artifact outputs (a group contract's
        shared outputs are not the step's), deduplicated by file name, in step order."""
        out: dict[str, dict[str, Any]] = {}
        for flat in activity.flattened_steps():
            if not isinstance(flat.step, TechniqueStep):
                continue
            resolved = self.resolve(activity, flat.step)
            if resolved is None:
                continue
            for output in resolved.technique.outputs:
                if output.artifact and output.artifact not in out:
                    entry: dict[str, Any] = {"id": output.id, "name": output.artifact}
                    if output.audience:
                        entry["audience"] = output.audience
                    out[output.artifact] = entry
        return list(out.values())
