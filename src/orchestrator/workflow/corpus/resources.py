"""Resource lookup and anchor slicing. Pure functions over a loaded ``Corpus``.

Ids: ``x`` (the session workflow), ``wf/x`` (at most one slash), optional ``#anchor``, a trailing ``.md``
tolerated. A resource is ``<wf>/resources/<x>.md``, else the file whose frontmatter ``name`` is ``x``.
The delivered ``id`` is the frontmatter ``name`` (else the requested id) and ``version`` the top-level
``version`` (else ``metadata.version``).
"""

from __future__ import annotations

import msgspec

from orchestrator.workflow.corpus.markdown import slice_section
from orchestrator.workflow.corpus.model import Corpus, Resource
from orchestrator.workflow.corpus.techniques import ResolvedTechnique
from orchestrator.workflow.errors import ResourceNotFoundError

__all__ = ["ResourceSlice", "find_resource", "parse_resource_id", "technique_resource_refs"]


class ResourceSlice(msgspec.Struct, frozen=True):
    """A delivered resource: ``resource_id`` as requested, ``body`` the whole text or the anchored slice."""

    resource_id: str
    id: str
    version: str | None
    body: str
    workflow_id: str
    anchor: str | None


def parse_resource_id(resource_id: str) -> tuple[str | None, str, str | None]:
    """``(workflow_or_None, id, anchor_or_None)``; the id is ``""`` when nothing usable is left."""
    base, _, anchor = resource_id.strip().partition("#")
    base = base.strip().removesuffix(".md")
    anchor = anchor.strip() or None
    if "/" in base:
        workflow, _, rest = base.partition("/")
        if not workflow or not rest or "/" in rest:
            return None, "", anchor
        return workflow, rest, anchor
    return None, base, anchor


def _lookup(corpus: Corpus, namespace: str, stem: str) -> Resource | None:
    resources = corpus.resources.get(namespace, {})
    found = resources.get(stem)
    if found is None:
        alias = corpus.resource_names.get(namespace, {}).get(stem)
        found = resources.get(alias) if alias is not None else None
    return found


def find_resource(corpus: Corpus, resource_id: str, *, workflow_id: str) -> ResourceSlice:
    """Resolve ``resource_id`` against ``workflow_id`` (or the workflow it names).

    Raises ``ResourceNotFoundError`` ``"Resource not found: <id> in workflow <wf>"`` for an unknown id and
    ``"Section '#<anchor>' not found in resource '<id>'"`` for an anchor no heading slugs to.
    """
    named, stem, anchor = parse_resource_id(resource_id)
    target = named or workflow_id
    found = _lookup(corpus, corpus.namespace(target), stem) if stem else None
    if found is None:
        raise ResourceNotFoundError(f"Resource not found: {stem or resource_id} in workflow {target}")
    body = found.body
    if anchor is not None:
        section = slice_section(body, anchor)
        if section is None:
            raise ResourceNotFoundError(f"Section '#{anchor}' not found in resource '{stem}'")
        body = section
    return ResourceSlice(
        resource_id=resource_id,
        id=found.name or stem,
        version=found.version,
        body=body,
        workflow_id=target,
        anchor=anchor,
    )


def technique_resource_refs(resolved: ResolvedTechnique) -> list[str]:
    """Resource ids linked from a resolved technique and its contracts, in order, deduplicated.

    A bare id from a file outside the executing workflow's folder is qualified ``<folder>/<id>`` so that it
    resolves where the link points; ids already naming a workflow pass through.
    """
    out: dict[str, None] = {}
    for technique in (resolved.technique, *resolved.ancestors):
        for link in technique.resource_links:
            own = technique.namespace == resolved.executing_namespace
            out.setdefault(link if "/" in link.partition("#")[0] or own else f"{technique.namespace}/{link}", None)
    return list(out)
