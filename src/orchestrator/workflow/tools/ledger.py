"""The reference-delivery ledger: content hashes, ledger keys, modes and unchanged markers.

Pure functions plus two small per-call trackers. The ledger lives in ``SessionFile.deliveredContent`` as
``{scope: {key: hash}}``; the *scope* is the calling context (``agent_id`` argument, else the session's
agent). A key names one whole item a response carries or replaces entire:

* ``technique:<resolvedId>`` — a composed technique (get_technique and eagerly bundled step entries);
* ``bundle:<key>`` — one worker-bundle technique in get_activity; ``bundle:rules:<hash>`` its rules list;
* ``activity_rules:<hash>`` — the activity+universal rules block of get_activity;
* ``contract:<scope>:<hash>`` — one inherited contract block;
* ``technique:provenance_note:<hash>`` — the provenance note of a step-bound technique;
* ``workflow_bundle:<hash>`` — the get_workflow orchestrator bundle;
* ``resource:<id as given>`` — a resource (anchor included).

The hash is the first 16 hex digits of SHA-256 over the delivered text. The ledger is *written* in every
mode and *consulted* only in reference mode, except that get_activity also collapses its invariant blocks
for a returning scope. Within one response, a repeated item collapses to a marker naming the earlier copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from orchestrator.workflow.session.sessionfile import SessionFile
from orchestrator.workflow.tools.context import content_hash

_JSON = msgspec.json.Encoder()

__all__ = [
    "DeliveryMode",
    "InResponse",
    "LedgerView",
    "activity_mode",
    "activity_rules_key",
    "block_hash",
    "bundle_key",
    "bundle_rules_key",
    "collapse",
    "collapse_technique",
    "content_hash",
    "contract_key",
    "delivery_scope",
    "fetch_mode",
    "is_marker",
    "merge_ledger",
    "provenance_note_key",
    "resource_key",
    "technique_key",
    "unchanged_marker",
    "workflow_bundle_key",
]

DeliveryMode = Literal["reference", "full"]


def block_hash(value: Any) -> str:
    """The content hash of a structured block (a bundle technique, a contract, a rules list), taken over its
    compact JSON encoding: deterministic, key order included, and much cheaper than rendering YAML. Blocks are
    keyed by content, so only determinism matters; whole step-bound techniques hash their YAML instead."""
    return content_hash(_JSON.encode(value).decode())


def delivery_scope(state: SessionFile, agent_id: str | None) -> str:
    """The ledger scope of a call: its ``agent_id``, else the session's agent."""
    return agent_id or state.agent_id


def _default_mode(state: SessionFile) -> DeliveryMode:
    return "reference" if state.context_mode == "persistent" else "full"


def fetch_mode(state: SessionFile, bundle: str | None, full: bool | None) -> DeliveryMode:
    """get_technique / get_resource: reference iff ``full`` is not true and ``bundle`` (default: the
    session's mode — persistent ⇒ reference, else full) is ``reference``."""
    if full:
        return "full"
    return "reference" if (bundle or _default_mode(state)) == "reference" else "full"


def activity_mode(state: SessionFile, bundle: str | None) -> DeliveryMode:
    """get_activity: ``bundle`` if given, else the session's default mode."""
    return "reference" if (bundle or _default_mode(state)) == "reference" else "full"


# ------------------------------------------------------------------------------------------- keys


def technique_key(resolved_id: str) -> str:
    return f"technique:{resolved_id}"


def bundle_key(key: str) -> str:
    return f"bundle:{key}"


def bundle_rules_key(digest: str) -> str:
    return f"bundle:rules:{digest}"


def activity_rules_key(digest: str) -> str:
    return f"activity_rules:{digest}"


def contract_key(scope: str, digest: str) -> str:
    return f"contract:{scope}:{digest}"


def provenance_note_key(digest: str) -> str:
    return f"technique:provenance_note:{digest}"


def workflow_bundle_key(digest: str) -> str:
    return f"workflow_bundle:{digest}"


def resource_key(resource_id: str) -> str:
    return f"resource:{resource_id}"


# ------------------------------------------------------------------------------------------ markers


def unchanged_marker(digest: str, *, see: str | None = None) -> dict[str, Any]:
    """``{delivery: unchanged, content_hash}``; ``see`` names the earlier copy in the same response."""
    marker: dict[str, Any] = {"delivery": "unchanged", "content_hash": digest}
    if see is not None:
        marker["see"] = see
    return marker


def is_marker(value: Any) -> bool:
    """Whether a delivered value is an unchanged marker."""
    return isinstance(value, Mapping) and value.get("delivery") == "unchanged" and "content_hash" in value


# ------------------------------------------------------------------------------------------ ledger


def merge_ledger(
    delivered: Mapping[str, Mapping[str, str]] | None, scope: str, entries: Mapping[str, str]
) -> dict[str, dict[str, str]] | None:
    """A new ``deliveredContent`` with ``entries`` merged over ``scope``'s map (``delivered`` untouched).

    Returns ``delivered`` unchanged (as a plain dict, or ``None`` when absent) if there is nothing to add.
    """
    if not entries:
        return None if delivered is None else {s: dict(m) for s, m in delivered.items()}
    out = {s: dict(m) for s, m in (delivered or {}).items()}
    out[scope] = {**out.get(scope, {}), **entries}
    return out


class LedgerView:
    """One call's view of one scope's ledger: what it held before the call, and what the call delivers.

    ``holds`` reads the ledger as it was when the call began; ``stage`` records a full delivery (written
    back with ``merge_ledger`` when the call saves). Consulting is the caller's decision (mode rules).
    """

    def __init__(self, delivered: Mapping[str, Mapping[str, str]] | None, scope: str) -> None:
        self.scope = scope
        self._prior: dict[str, str] = dict((delivered or {}).get(scope, {}))
        self.staged: dict[str, str] = {}

    def holds(self, key: str, digest: str) -> bool:
        """Whether the scope had received exactly this content under ``key`` before this call."""
        return self._prior.get(key) == digest

    def stage(self, key: str, digest: str) -> None:
        self.staged[key] = digest


class InResponse:
    """Items already placed in full in the response being composed, by ``(key, hash)`` → location."""

    def __init__(self) -> None:
        self._where: dict[tuple[str, str], str] = {}

    def earlier(self, key: str, digest: str) -> str | None:
        """The location of an earlier full copy in this response, if any."""
        return self._where.get((key, digest))

    def place(self, key: str, digest: str, where: str) -> None:
        self._where.setdefault((key, digest), where)


def collapse(
    value: Any, key: str, digest: str, *, ledger: LedgerView, consult: bool, seen: InResponse, where: str
) -> Any:
    """Deliver one whole item: a plain marker when the scope holds it (``consult``), a marker naming the
    earlier copy when this response already carries it, else ``value`` (staged in the ledger)."""
    if consult and ledger.holds(key, digest):
        return unchanged_marker(digest)
    earlier = seen.earlier(key, digest)
    if earlier is not None:
        return unchanged_marker(digest, see=earlier)
    ledger.stage(key, digest)
    seen.place(key, digest, where)
    return value


def collapse_technique(
    payload: Mapping[str, Any], *, ledger: LedgerView, consult: bool, seen: InResponse, where: str
) -> dict[str, Any]:
    """A technique payload with its shared sub-blocks (``provenance_note``, each ``contracts`` scope)
    collapsed per ``collapse``; the technique itself is decided by the caller."""
    out = dict(payload)
    note = out.get("provenance_note")
    if isinstance(note, str):
        digest = content_hash(note)
        out["provenance_note"] = collapse(
            note,
            provenance_note_key(digest),
            digest,
            ledger=ledger,
            consult=consult,
            seen=seen,
            where=f"{where}.provenance_note",
        )
    blocks = out.get("contracts")
    if isinstance(blocks, Mapping) and blocks:
        collapsed: dict[str, Any] = {}
        for scope, block in blocks.items():
            digest = block_hash(block)
            collapsed[scope] = collapse(
                block,
                contract_key(scope, digest),
                digest,
                ledger=ledger,
                consult=consult,
                seen=seen,
                where=f"{where}.contracts.{scope}",
            )
        out["contracts"] = collapsed
    return out
