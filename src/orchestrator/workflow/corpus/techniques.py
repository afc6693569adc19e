"""Technique addressing, inheritance, the delivered payload and bundles. Pure functions.

**Addressing.** ``[wf::]technique[::nested…]``; the first segment names a workflow only when that folder
has a ``techniques/`` directory (``wf/tech`` always names one and normalises to ``wf::tech``). Unprefixed
refs search the current workflow's folder, then ``meta``; prefixed refs only that workflow. ``g::s`` is
file ``g/s.md``, else rule ``s`` of technique ``g`` (exact name, else every rule named ``s-*``), else
unresolved. With ``activity_id``, a bare ``x`` first tries ``<activity_id>::x`` (activity-group shorthand).

**Identity.** ``resolved_id`` is the ref that hit (``review-mode-detection``, ``version-control::resolve-
host-repo``; ``wf::`` kept when the ref named a workflow); ``key`` is its bundle key (``wf/`` prefix instead).

**Inheritance.** Ancestors are the executing workflow's root ``TECHNIQUE.md`` then each containing group's
``TECHNIQUE.md`` (from the folder where the file was found), outermost first. Scope names: a root contract
is named by its folder (``work-package``), a group by ``<folder>::<group path>`` (``meta::version-control``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from orchestrator.workflow.corpus.model import Corpus, ProtocolBlock, Technique
from orchestrator.workflow.corpus.schema import META_WORKFLOW_ID

__all__ = [
    "CORE_ORCHESTRATOR",
    "CORE_WORKER",
    "ResolvedRules",
    "ResolvedTechnique",
    "bundle_for",
    "resolve_ref",
    "resolve_technique",
    "technique_payload",
]

CORE_ORCHESTRATOR: tuple[str, ...] = (
    "workflow-engine::dispatch-activity",
    "workflow-engine::evaluate-transition",
    "workflow-engine::commit-and-persist",
    "workflow-engine::handle-sub-workflow",
    "workflow-engine::compose-prompt",
    "workflow-engine::present-checkpoint-to-user",
    "workflow-engine::respond-checkpoint",
    "workflow-engine::sync-progress-status",
    "version-control::commit-submodule",
    "version-control::commit-regular-files",
    "harness-compat::spawn-agent",
    "harness-compat::continue-agent",
    "harness-compat::resolve-harness-operation",
    "harness-compat::claude-code",
    "harness-compat::cursor",
    "harness-compat::cline",
    "harness-compat::generic",
    "agent-conduct::orchestrator",
    "agent-conduct::checkpoint-discipline",
    "agent-conduct::operational-discipline",
)
"""Refs every orchestrator bundle (``get_workflow``) carries, unioned after the workflow's own."""

CORE_WORKER: tuple[str, ...] = (
    "workflow-engine::activity-worker",
    "workflow-engine::yield-checkpoint",
    "workflow-engine::resume-from-checkpoint",
    "workflow-engine::finalize-activity",
    "agent-conduct::checkpoint-discipline",
    "agent-conduct::operational-discipline",
    "agent-conduct::file-sensitivity",
    "agent-conduct::code-commentary",
)
"""Refs every worker bundle (``get_activity``) carries, unioned after the activity's own."""


class ResolvedTechnique(msgspec.Struct, frozen=True, kw_only=True):
    """A ref resolved to a technique file.

    ``namespace`` is the folder it was found in; ``workflow_id`` the executing workflow (root contract) and
    ``executing_namespace`` its folder;
    ``segments`` its path inside ``techniques/``; ``ancestors`` root contract then groups, outermost first,
    with ``scopes`` naming them in the same order.
    """

    ref: str
    resolved_id: str
    key: str
    technique: Technique
    ancestors: tuple[Technique, ...]
    scopes: tuple[str, ...]
    namespace: str
    workflow_id: str
    executing_namespace: str
    named_workflow: bool
    segments: tuple[str, ...]

    @property
    def technique_id(self) -> str:
        """The technique's id inside its folder (``g::op``), without any workflow prefix."""
        return "::".join(self.segments)


class ResolvedRules(msgspec.Struct, frozen=True, kw_only=True):
    """A ``g::s`` ref resolved to rule(s) of technique ``g`` (``owner``): ``rules`` as ``(name, text)``."""

    ref: str
    resolved_id: str
    owner: ResolvedTechnique
    rules: tuple[tuple[str, str], ...]


def _split(corpus: Corpus, ref: str) -> tuple[str | None, list[str]] | None:
    text = ref.strip()
    if "/" in text:
        head, _, rest = text.partition("/")
        if not head or "::" in head or "/" in rest or not rest:
            return None
        namespace: str | None = head
        segments = rest.split("::")
    else:
        segments = text.split("::")
        namespace = None
        if len(segments) > 1 and segments[0] in corpus.techniques:
            namespace, segments = segments[0], segments[1:]
    if not segments or any(not s for s in segments):
        return None
    return namespace, segments


def _scope_name(namespace: str, group_path: str | None) -> str:
    return namespace if group_path is None else f"{namespace}::{group_path.replace('/', '::')}"


def _build(
    corpus: Corpus, ref: str, technique: Technique, namespace: str, segments: list[str], named: bool, executing: str
) -> ResolvedTechnique:
    ancestors: list[Technique] = []
    scopes: list[str] = []
    executing_ns = corpus.namespace(executing)
    root = corpus.root_contracts.get(executing_ns)
    if root is not None and root.technique is not None:
        ancestors.append(root.technique)
        scopes.append(_scope_name(executing_ns, None))
    index = corpus.techniques.get(namespace, {})
    for depth in range(1, len(segments)):
        group_path = "/".join(segments[:depth])
        entry = index.get(group_path)
        if entry is not None and entry.technique is not None and entry.technique.is_group:
            ancestors.append(entry.technique)
            scopes.append(_scope_name(namespace, group_path))
    path_id = "::".join(segments)
    return ResolvedTechnique(
        ref=ref,
        resolved_id=f"{namespace}::{path_id}" if named else path_id,
        key=f"{namespace}/{path_id}" if named else path_id,
        technique=technique,
        ancestors=tuple(ancestors),
        scopes=tuple(scopes),
        namespace=namespace,
        workflow_id=executing,
        executing_namespace=executing_ns,
        named_workflow=named,
        segments=tuple(segments),
    )


def _lookup(
    corpus: Corpus, ref: str, namespace: str, segments: list[str], named: bool, executing: str
) -> ResolvedTechnique | ResolvedRules | None:
    index = corpus.techniques.get(namespace)
    if not index:
        return None
    entry = index.get("/".join(segments))
    if entry is not None and entry.technique is not None:
        return _build(corpus, ref, entry.technique, namespace, segments, named, executing)
    if len(segments) < 2:
        return None
    parent = index.get("/".join(segments[:-1]))
    if parent is None or parent.technique is None:
        return None
    name = segments[-1]
    rules = parent.technique.rules
    if name in rules:
        matched = ((name, rules[name]),)
    else:
        matched = tuple((n, text) for n, text in rules.items() if n.startswith(f"{name}-"))
    if not matched:
        return None
    owner = _build(corpus, ref, parent.technique, namespace, segments[:-1], named, executing)
    resolved_id = f"{namespace}::{'::'.join(segments)}" if named else "::".join(segments)
    return ResolvedRules(ref=ref, resolved_id=resolved_id, owner=owner, rules=matched)


def _resolve_plain(
    corpus: Corpus, ref: str, workflow_id: str, executing: str
) -> ResolvedTechnique | ResolvedRules | None:
    split = _split(corpus, ref)
    if split is None:
        return None
    namespace, segments = split
    if namespace is not None:
        return _lookup(corpus, ref, namespace, segments, True, executing)
    current = corpus.namespace(workflow_id)
    for candidate in dict.fromkeys((current, META_WORKFLOW_ID)):
        hit = _lookup(corpus, ref, candidate, segments, False, executing)
        if hit is not None:
            return hit
    return None


def resolve_ref(
    corpus: Corpus,
    ref: str,
    *,
    workflow_id: str,
    activity_id: str | None = None,
    executing_workflow_id: str | None = None,
) -> ResolvedTechnique | ResolvedRules | None:
    """Resolve a technique or rule ref from ``workflow_id``'s point of view; ``None`` when unresolved.

    ``executing_workflow_id`` (default ``workflow_id``) supplies the root contract. A technique whose file
    failed to parse counts as missing.
    """
    executing = executing_workflow_id or workflow_id
    if activity_id and "::" not in ref and "/" not in ref and ref.strip():
        hit = _resolve_plain(corpus, f"{activity_id}::{ref.strip()}", workflow_id, executing)
        if isinstance(hit, ResolvedTechnique):
            return msgspec.structs.replace(hit, ref=ref)
    return _resolve_plain(corpus, ref, workflow_id, executing)


def resolve_technique(
    corpus: Corpus,
    ref: str,
    *,
    workflow_id: str,
    activity_id: str | None = None,
    executing_workflow_id: str | None = None,
) -> ResolvedTechnique | None:
    """Resolve a ref to a technique file (a ref naming rules gives ``None``). See ``resolve_ref``."""
    hit = resolve_ref(
        corpus, ref, workflow_id=workflow_id, activity_id=activity_id, executing_workflow_id=executing_workflow_id
    )
    return hit if isinstance(hit, ResolvedTechnique) else None


# --------------------------------------------------------------------------------------------------
# Payload
# --------------------------------------------------------------------------------------------------


def _input_dict(entry: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": entry.id}
    if entry.description is not None:
        out["description"] = entry.description
    if entry.default is not None:
        out["default"] = entry.default
    if entry.components:
        out["components"] = dict(entry.components)
    return out


def _output_dict(entry: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": entry.id}
    if entry.description is not None:
        out["description"] = entry.description
    if entry.artifact is not None:
        out["artifact"] = entry.artifact
    if entry.audience is not None:
        out["audience"] = entry.audience
    if entry.components:
        out["components"] = dict(entry.components)
    return out


def _block_dict(block: ProtocolBlock) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if block.title is not None:
        out["title"] = block.title
    out["steps"] = list(block.steps)
    return out


def _titled(technique: Technique, title: str) -> list[ProtocolBlock]:
    return [b for b in technique.protocol if (b.title or "").strip().lower() == title]


def merged_protocol(resolved: ResolvedTechnique) -> list[ProtocolBlock]:
    """Ancestors' Initial blocks (outermost first), own blocks, ancestors' Final blocks (innermost first)."""
    initial = [b for ancestor in resolved.ancestors for b in _titled(ancestor, "initial")]
    final = [b for ancestor in reversed(resolved.ancestors) for b in _titled(ancestor, "final")]
    return [*initial, *resolved.technique.protocol, *final]


def contracts(resolved: ResolvedTechnique, *, with_rules: bool = True) -> dict[str, dict[str, Any]]:
    """Each ancestor scope's inputs/outputs/rules not overridden closer in (scopes with nothing omitted)."""
    out: dict[str, dict[str, Any]] = {}
    chain = [*resolved.ancestors, resolved.technique]
    for depth, (scope, ancestor) in enumerate(zip(resolved.scopes, resolved.ancestors, strict=True)):
        closer = chain[depth + 1 :]
        taken_inputs = {i.id for t in closer for i in t.inputs}
        taken_outputs = {o.id for t in closer for o in t.outputs}
        taken_rules = {name for t in closer for name in t.rules}
        block: dict[str, Any] = {}
        inputs = [_input_dict(i) for i in ancestor.inputs if i.id not in taken_inputs]
        outputs = [_output_dict(o) for o in ancestor.outputs if o.id not in taken_outputs]
        rules = {name: text for name, text in ancestor.rules.items() if name not in taken_rules}
        if inputs:
            block["inputs"] = inputs
        if outputs:
            block["outputs"] = outputs
        if rules and with_rules:
            block["rules"] = rules
        if block:
            out[scope] = block
    return out


def technique_payload(resolved: ResolvedTechnique, *, with_rules: bool = True) -> dict[str, Any]:
    """The delivered technique: ``{id, version, capability, inputs?, protocol, outputs?, rules?, inherits,
    contracts}`` in that key order (consumers hash its YAML, so it is deterministic).

    ``with_rules=False`` leaves out every rule (own and contract), as bundles carry rules separately.
    """
    technique = resolved.technique
    out: dict[str, Any] = {
        "id": resolved.technique_id,
        "version": technique.version,
        "capability": technique.capability,
    }
    if technique.inputs:
        out["inputs"] = [_input_dict(i) for i in technique.inputs]
    out["protocol"] = [_block_dict(b) for b in merged_protocol(resolved)]
    if technique.outputs:
        out["outputs"] = [_output_dict(o) for o in technique.outputs]
    if technique.rules and with_rules:
        out["rules"] = dict(technique.rules)
    out["inherits"] = list(resolved.scopes)
    out["contracts"] = contracts(resolved, with_rules=with_rules)
    return out


# --------------------------------------------------------------------------------------------------
# Bundles
# --------------------------------------------------------------------------------------------------


def bundle_for(
    corpus: Corpus,
    workflow_id: str,
    refs: tuple[str, ...] | list[str],
    core_refs: tuple[str, ...] | list[str],
    *,
    executing_workflow_id: str | None = None,
) -> dict[str, Any]:
    """The technique bundle ``{techniques: {key: body}, rules: [[name, text]…], unresolved: [ref]}``.

    ``refs`` then ``core_refs`` are resolved once each (dedup by ref text). Technique bodies are payloads
    without rules; every rule travels in ``rules`` once: explicitly referenced rules first, then the other
    rules of every resolved technique and of its group contracts, then the executing workflow's root
    contract rules. A rule is named ``<technique key>::<rule>`` (a group contract's ``<group>::<rule>``,
    ``<folder>/`` first when the group is outside the executing workflow and ``meta``; the root's
    ``<folder>::<rule>``). Unresolved refs are listed, never dropped. Empty buckets are omitted.
    """
    executing = executing_workflow_id or workflow_id
    techniques: dict[str, Any] = {}
    rules: list[list[str]] = []
    seen_rules: set[str] = set()
    unresolved: list[str] = []
    touched: list[tuple[str, ResolvedTechnique]] = []

    def add_rule(name: str, text: str) -> None:
        if name not in seen_rules:
            seen_rules.add(name)
            rules.append([name, text])

    for ref in dict.fromkeys([*refs, *core_refs]):
        hit = resolve_ref(corpus, ref, workflow_id=workflow_id, executing_workflow_id=executing)
        if hit is None:
            unresolved.append(ref)
        elif isinstance(hit, ResolvedTechnique):
            techniques.setdefault(hit.key, technique_payload(hit, with_rules=False))
            touched.append((hit.key, hit))
        else:
            for name, text in hit.rules:
                add_rule(f"{hit.owner.key}::{name}", text)
            touched.append((hit.owner.key, hit.owner))
    for key, resolved in touched:
        for name, text in resolved.technique.rules.items():
            add_rule(f"{key}::{name}", text)
        for ancestor in resolved.ancestors:
            if ancestor.is_group:
                group_key = ancestor.path.replace("/", "::")
                if ancestor.namespace not in (corpus.namespace(executing), META_WORKFLOW_ID):
                    group_key = f"{ancestor.namespace}/{group_key}"
                for name, text in ancestor.rules.items():
                    add_rule(f"{group_key}::{name}", text)
    executing_ns = corpus.namespace(executing)
    root = corpus.root_contracts.get(executing_ns)
    if root is not None and root.technique is not None:
        for name, text in root.technique.rules.items():
            add_rule(f"{executing_ns}::{name}", text)
    bundle: dict[str, Any] = {}
    if techniques:
        bundle["techniques"] = techniques
    if rules:
        bundle["rules"] = rules
    if unresolved:
        bundle["unresolved"] = unresolved
    return bundle
