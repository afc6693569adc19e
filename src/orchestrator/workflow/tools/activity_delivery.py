"""``get_activity``: the worker's payload for the current activity.

Text = YAML ops (``bundle_mode?``, ``bundle_note?``, ``techniques``, ``rules``, ``unresolved``,
``step_techniques``, ``step_techniques_note``, ``resource_refs``, ``resources_note``) + ``\\n\\n---\\n\\n`` +
YAML body (``session_index``, ``artifact_prefix``, ``activity_rules``, ``enforcement_notes?``, the raw
activity, ``artifacts``, ``batch``).

Order of checks: no current activity, ``activity_id`` mismatch, then the batch bound (refusal logs one
``batch_refused`` per scope+activity+limit and still writes the session), before anything is composed.
Invariant blocks (worker techniques, rules, activity rules) collapse to markers for a scope that holds them
in reference mode or when it is a returning scope (unless ``bundle: full``); step techniques collapse
only in reference mode. Whatever is sent in full is staged in the ledger, in every mode.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from orchestrator.workflow.corpus import (
    CORE_WORKER,
    TERMINAL_ACTIVITY,
    Activity,
    Corpus,
    ResolvedRules,
    TechniqueStep,
    Workflow,
    bundle_for,
    find_resource,
    resolve_ref,
    technique_resource_refs,
)
from orchestrator.workflow.errors import ResourceNotFoundError, WorkflowError
from orchestrator.workflow.tools.batch_bound import (
    BatchPolicy,
    BatchStanding,
    batch_refusal,
    batch_standing,
    dispatch_kind,
    prior_holder,
    refusal_already_logged,
    refusal_message,
    scope_seen,
    step_started_before,
)
from orchestrator.workflow.tools.bundling import (
    BUNDLE_NOTE,
    RESOURCES_NOTE,
    STEP_TECHNIQUES_NOTE,
    bundle_budget,
    bundle_decision,
    enforcement_notes,
    step_gate,
    step_marker,
    written_variables,
)
from orchestrator.workflow.tools.composing import StepComposer, ended_error, not_current_error
from orchestrator.workflow.tools.context import McpCall, McpReply, SessionCall
from orchestrator.workflow.tools.ledger import (
    InResponse,
    LedgerView,
    activity_mode,
    activity_rules_key,
    block_hash,
    bundle_key,
    bundle_rules_key,
    collapse,
    collapse_technique,
    delivery_scope,
    is_marker,
    merge_ledger,
    technique_key,
    unchanged_marker,
)
from orchestrator.workflow.tools.render import SEPARATOR, to_yaml

__all__ = ["activity_refs", "get_activity"]


def activity_refs(corpus: Corpus, workflow: Workflow, activity: Activity) -> list[str]:
    """The activity's technique refs as the session workflow's bundle must name them.

    A borrowed activity's bare refs that resolve in its source workflow's own folder are qualified with that
    folder (``code-review/review``), so they resolve where the activity was authored.
    """
    source = activity.source_workflow or workflow.id
    if source == workflow.id:
        return list(activity.techniques)
    folder = corpus.namespace(source)
    out: list[str] = []
    for ref in activity.techniques:
        hit = resolve_ref(corpus, ref, workflow_id=source, executing_workflow_id=workflow.id)
        named = "/" in ref or ("::" in ref and ref.split("::", 1)[0] in corpus.techniques)
        owner = hit.owner if isinstance(hit, ResolvedRules) else hit
        if owner is not None and not named and owner.namespace == folder:
            out.append(f"{folder}/{ref}")
        else:
            out.append(ref)
    return out


class _Composition:
    """The pieces of one get_activity response while it is being built."""

    def __init__(self, s: SessionCall, activity: Activity, scope: str, bundle: str | None) -> None:
        self.s = s
        self.activity = activity
        self.scope = scope
        self.workflow = s.workflow()
        self.corpus = s.call.corpus()
        self.mode = activity_mode(s.state, bundle)
        self.reference = self.mode == "reference"
        self.invariants = bundle != "full" and (self.reference or scope_seen(s.state.history, scope))
        self.explicit_mode = bundle is not None
        self.ledger = LedgerView(s.state.delivered_content, scope)
        self.seen = InResponse()
        self.composer = StepComposer.for_workflow(s.server, self.corpus, self.workflow)
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.markers = 0
        self.dispatch = "fresh"

    def _count(self, value: Any) -> Any:
        if is_marker(value):
            self.markers += 1
        elif isinstance(value, dict):
            for inner in value.values():
                self._count(inner)
        return value

    def worker_bundle(self) -> dict[str, Any]:
        """``{techniques?, rules?, unresolved?}`` of the worker bundle, collapsed per the ledger."""
        refs = [*self.workflow.techniques_activity, *activity_refs(self.corpus, self.workflow, self.activity)]
        bundle = bundle_for(self.corpus, self.workflow.id, refs, CORE_WORKER)
        out: dict[str, Any] = {}
        techniques = bundle.get("techniques") or {}
        if techniques:
            delivered: dict[str, Any] = {}
            for key, body in techniques.items():
                digest = block_hash(body)
                where = f"techniques.{key}"
                if self.invariants and self.ledger.holds(bundle_key(key), digest):
                    delivered[key] = unchanged_marker(digest)
                else:
                    delivered[key] = collapse_technique(
                        body, ledger=self.ledger, consult=self.invariants, seen=self.seen, where=where
                    )
                    self.ledger.stage(bundle_key(key), digest)
                self._count(delivered[key])
            out["techniques"] = delivered
        rules = bundle.get("rules")
        if rules:
            digest = block_hash(rules)
            out["rules"] = self._count(
                collapse(
                    rules,
                    bundle_rules_key(digest),
                    digest,
                    ledger=self.ledger,
                    consult=self.invariants,
                    seen=self.seen,
                    where="rules",
                )
            )
        if bundle.get("unresolved"):
            out["unresolved"] = list(bundle["unresolved"])
        return out

    def step_techniques(self, tally: int, context_tokens: int) -> tuple[dict[str, Any], list[str], Counter[str]]:
        """Eager bundling: ``(step_techniques, resource_refs, lazy gate counts)``; records bundling events."""
        entries: dict[str, Any] = {}
        resource_refs: dict[str, None] = {}
        lazy: Counter[str] = Counter()
        max_chars = self.activity.bundle_max_chars
        if max_chars == 0:
            return entries, [], lazy
        settings = self.s.server.settings
        budget = bundle_budget(context_tokens, settings.bundle_headroom_fraction, settings.bundle_chars_per_token)
        bag = self.s.state.variables
        written = written_variables(self.activity, lambda step: self.composer.own_outputs(self.activity, step))
        for flat in self.activity.flattened_steps():
            if not isinstance(flat.step, TechniqueStep):
                continue
            gate = step_gate(flat, bag, written)
            if gate.answer is None:
                lazy[gate.reason or "unparsed"] += 1
                continue
            if not gate.answer:
                continue
            composed = self.composer.compose(self.activity, flat)
            if composed is None:
                continue
            key = technique_key(composed.resolved.resolved_id)
            in_ledger = self.reference and self.ledger.holds(key, composed.digest)
            earlier = None if in_ledger else self.seen.earlier(key, composed.digest)
            decision = bundle_decision(
                len(composed.text),
                max_chars=max_chars,
                held=in_ledger or earlier is not None,
                tally=tally,
                budget=budget,
            )
            if decision == "skip":
                continue
            if decision == "stop":
                break
            where = f"step_techniques.{flat.step.id}"
            marker = {"marker": step_marker(flat.step.id, composed.resolved.resolved_id)}
            if decision == "held":
                entry = {**marker, **unchanged_marker(composed.digest, see=earlier)}
                self.markers += 1
                delivery = "unchanged"
            else:
                body = collapse_technique(
                    composed.payload, ledger=self.ledger, consult=self.reference, seen=self.seen, where=where
                )
                self._count(body)
                entry = {**marker, **body}
                self.ledger.stage(key, composed.digest)
                self.seen.place(key, composed.digest, where)
                tally += len(composed.text)
                delivery = "full"
            entries[flat.step.id] = entry
            for warning in composed.warnings:
                self.s.call.warn(warning)
            chars = len(composed.text) if delivery == "full" else len(to_yaml(entry))
            self._bundled_event(flat.step.id, composed.resolved.resolved_id, chars, delivery)
            for ref in technique_resource_refs(composed.resolved):
                if self._resource_ok(ref, composed.resolved.resolved_id, flat.step.id):
                    resource_refs.setdefault(ref, None)
        return entries, list(resource_refs), lazy

    def _resource_ok(self, ref: str, technique_id: str, step_id: str) -> bool:
        try:
            find_resource(self.corpus, ref, workflow_id=self.workflow.id)
        except ResourceNotFoundError as exc:
            self.s.call.warn(
                f"Unresolvable resource ref '{ref}' in technique '{technique_id}' (step '{step_id}'): {exc.message}"
            )
            return False
        return True

    def _bundled_event(self, step_id: str, technique_id: str, chars: int, delivery: str) -> None:
        self.events.append(
            (
                "technique_bundled",
                {
                    "step": step_id,
                    "data": {
                        "techniqueId": technique_id,
                        "stepId": step_id,
                        "agentId": self.scope,
                        "chars": chars,
                        "delivery": delivery,
                    },
                },
            )
        )
        already = step_started_before(self.s.state.history, self.activity.id, step_id, self.scope)
        if not already and not any(k == "step_started" and e["step"] == step_id for k, e in self.events):
            self.events.append(("step_started", {"step": step_id, "data": {"stepId": step_id, "agentId": self.scope}}))

    def activity_rules(self) -> Any:
        rules = [*self.workflow.rules.activity, *self.workflow.rules.universal]
        digest = block_hash(rules)
        return self._count(
            collapse(
                rules,
                activity_rules_key(digest),
                digest,
                ledger=self.ledger,
                consult=self.invariants,
                seen=self.seen,
                where="activity_rules",
            )
        )


def _checks(call: McpCall) -> tuple[SessionCall, Activity]:
    s = call.open(lock=True)
    current = s.state.current_activity
    if not current:
        raise WorkflowError(
            "No current activity: the orchestrator must move the session with next_activity before a worker loads one",
            code="NoCurrentActivity",
        )
    requested = call.args.get("activity_id")
    if requested is not None and requested != current:
        raise not_current_error(requested, current)
    if current == TERMINAL_ACTIVITY:
        raise ended_error(current)
    return s, s.activity(current)


def _policy(s: SessionCall) -> BatchPolicy:
    settings = s.server.settings
    return BatchPolicy(
        max_activities=settings.batch_max_activities,
        headroom_fraction=settings.batch_headroom_fraction,
        chars_per_token=settings.bundle_chars_per_token,
    )


def get_activity(call: McpCall) -> McpReply:
    """The get_activity handler (see the module docstring)."""
    s, activity = _checks(call)
    args = call.args
    context_tokens: int = int(args["context_tokens"])
    scope = delivery_scope(s.state, call.agent_id)
    policy = _policy(s)
    refusal = batch_refusal(s.state.history, s.state.agent_id, scope, activity.id, context_tokens, policy)
    if refusal is not None:
        if not refusal_already_logged(s.state.history, scope, activity.id, refusal.limit):
            s.record("batch_refused", activity=activity.id, data=refusal.event_data(scope))
        s.save()
        raise WorkflowError(refusal_message(activity.id, scope, refusal), code="BATCH_FULL")

    c = _Composition(s, activity, scope, args.get("bundle"))
    bundle = c.worker_bundle()
    bundle_text = to_yaml(bundle) if bundle else ""
    steps, resource_refs, lazy = c.step_techniques(len(bundle_text), context_tokens)
    tail: dict[str, Any] = {}
    if steps:
        tail["step_techniques"] = steps
    if any(isinstance(f.step, TechniqueStep) for f in activity.flattened_steps()):
        tail["step_techniques_note"] = STEP_TECHNIQUES_NOTE
    if resource_refs:
        tail["resource_refs"] = resource_refs
        tail["resources_note"] = RESOURCES_NOTE
    activity_rules = c.activity_rules()
    lead: dict[str, Any] = {}
    if c.reference or c.explicit_mode:
        lead["bundle_mode"] = c.mode
    if c.markers or c.reference:
        lead["bundle_note"] = BUNDLE_NOTE
    # Block-style YAML of a mapping is the concatenation of its top-level entries, so the parts are rendered
    # once each (the worker bundle's size also seeds the eager-bundling tally).
    head_text = _join(to_yaml(lead) if lead else "", bundle_text, to_yaml(tail) if tail else "")

    notes = enforcement_notes(activity)
    artifacts = c.composer.artifacts(activity)
    body: dict[str, Any] = {"session_index": s.index, "artifact_prefix": activity.artifact_prefix}
    body["activity_rules"] = activity_rules
    if notes:
        body["enforcement_notes"] = notes
    body.update(activity.raw)
    body["artifacts"] = artifacts
    prefix = head_text + SEPARATOR + to_yaml(body) + "\n"

    def standing_for(chars: int) -> BatchStanding:
        return batch_standing(
            s.state.history,
            s.state.agent_id,
            scope,
            context_tokens,
            policy,
            pending_chars=chars,
            pending_activity=activity.id,
        )

    standing = standing_for(0)
    text = ""
    for _ in range(4):  # the block's own digits are part of the size it reports: settle them
        text = prefix + to_yaml({"batch": standing.block()})
        settled = standing_for(len(text))
        if settled == standing:
            break
        standing = settled

    _commit(c, activity, text)
    meta: dict[str, Any] = {
        "artifact_prefix": activity.artifact_prefix,
        "artifacts": artifacts,
        "activity_rules": [*c.workflow.rules.activity, *c.workflow.rules.universal],
        "dispatch": c.dispatch,
        "batch": standing.block(),
    }
    if sum(lazy.values()):
        meta["lazy_gates"] = {reason: lazy.get(reason, 0) for reason in ("pending", "unbound", "unparsed")}
    if steps:
        meta["bundled_steps"] = list(steps)
    if resource_refs:
        meta["resource_refs"] = resource_refs
    if notes:
        meta["enforcement_notes"] = notes
    return s.text(text, **meta)


def _join(*parts: str) -> str:
    return "\n".join(part for part in parts if part)


def _commit(c: _Composition, activity: Activity, text: str) -> None:
    """Reload the session (last writer wins), then append the events and the ledger entries and save."""
    s = c.s
    history = s.state.history
    c.dispatch = dispatch_kind(history, c.scope)
    prior = prior_holder(history, c.scope, activity.id)
    s.reload()
    s.record(
        "activity_dispatched",
        activity=activity.id,
        data={"agentId": c.scope, "dispatch": c.dispatch, "chars": len(text)},
    )
    if prior is not None:
        s.record(
            "activity_redelivered",
            activity=activity.id,
            data={"agentId": c.scope, "priorAgentId": prior, "chars": len(text)},
        )
    for kind, fields in c.events:
        s.record(kind, activity=activity.id, step=fields["step"], data=fields["data"])  # type: ignore[arg-type]
    s.update(delivered_content=merge_ledger(s.state.delivered_content, c.scope, c.ledger.staged))
    s.save()
