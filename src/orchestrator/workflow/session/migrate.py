"""Legacy planning folders (``workflow-state.json``) become sealed sessions on first touch.

Servers before the ``session.json`` format kept a folder's state in ``workflow-state.json``: a JSON object
whose ``state`` member holds the position and the bag (``workflowId``, ``workflowVersion``,
``currentActivity``, ``variables``, ``completedActivities``, ``skippedActivities``,
``checkpointResponses`` as ``{key: optionId}`` or ``{key: {optionId, respondedAt}}``, ``startedAt``,
``status``), optionally a top-level ``startedAt`` and an embedded ``sessionToken``; beside it a
``.session-token`` holding ``base64url(JSON payload).hexsignature`` whose payload names the workflow
(``wf``), its version (``v``), the agent (``aid``) and the activity (``act``).

``legacy_session`` turns those into a ``SessionFile`` (pure: bytes in, value out). The old token's
signature is not checked — it was made with the old server's key — so its payload only fills ids the
envelope lacks; the new file is sealed with this server's key. History is not carried over (the old
event shapes do not fit the closed event set); one ``workflow_started`` event with
``data.migratedFrom`` records where the session came from.

``migrate_folder`` does the I/O: it keeps the old files (``workflow-state.json.migrated``,
``.session-token.legacy``) so nothing is lost, and writes the new pair with an exclusive create, so two
servers migrating the same folder at once produce one session.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from orchestrator.workflow.errors import SessionStoreError
from orchestrator.workflow.session.fsio import write_private
from orchestrator.workflow.session.sessionfile import (
    CheckpointResponse,
    SessionFile,
    iso_utc,
    new_history,
)

if TYPE_CHECKING:
    from orchestrator.workflow.session.store import SessionStore

__all__ = ["LEGACY_BACKUP_SUFFIX", "LEGACY_FILE", "LEGACY_TOKEN_BACKUP", "legacy_session", "migrate_folder"]

LEGACY_FILE = "workflow-state.json"
LEGACY_BACKUP_SUFFIX = ".migrated"
LEGACY_TOKEN_BACKUP = ".session-token.legacy"
_VERSION = re.compile(r"\d+\.\d+\.\d+")
_STATUSES = frozenset({"running", "completed", "aborted"})


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def legacy_token_payload(token: str) -> dict[str, Any]:
    """The JSON payload of an old ``b64url.signature`` token (signature not checked); ``{}`` if unreadable."""
    body, dot, _ = token.strip().rpartition(".")
    if not dot:
        return {}
    try:
        decoded = msgspec.json.decode(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (binascii.Error, ValueError, msgspec.DecodeError):
        return {}
    return decoded if isinstance(decoded, dict) else {}


def _responses(value: Any) -> dict[str, CheckpointResponse]:
    out: dict[str, CheckpointResponse] = {}
    if not isinstance(value, dict):
        return out
    for key, item in value.items():
        if isinstance(item, str) and item:
            out[key] = CheckpointResponse(option_id=item, responded_at=iso_utc(0))
        elif isinstance(item, dict) and _text(item.get("optionId")):
            at = _text(item.get("respondedAt")) or iso_utc(0)
            out[key] = CheckpointResponse(option_id=item["optionId"], responded_at=at)
    return out


def legacy_session(
    envelope_bytes: bytes, token_text: str | None, *, session_index: str, folder: str, now: float
) -> SessionFile:
    """The ``SessionFile`` an old folder's files describe. Raises ``SessionStoreError("MIGRATION_FAILED")``
    naming the file and the fix when the envelope is not a JSON object or names no workflow."""
    where = f"{folder}/{LEGACY_FILE}"
    try:
        envelope = msgspec.json.decode(envelope_bytes)
    except msgspec.DecodeError as exc:
        raise SessionStoreError(
            "MIGRATION_FAILED",
            f"legacy {where} is not valid JSON ({exc}); it was left untouched. Restore it "
            "from a backup, or move it aside and start a new session.",
        ) from None
    if not isinstance(envelope, dict):
        raise SessionStoreError(
            "MIGRATION_FAILED",
            f"legacy {where} is not a JSON object; it was left untouched. Restore it from a "
            "backup, or move it aside and start a new session.",
        )
    state = envelope.get("state") if isinstance(envelope.get("state"), dict) else {}
    token = token_text if token_text and "." in token_text else _text(envelope.get("sessionToken"))
    payload = legacy_token_payload(token) if token else {}
    workflow_id = _text(state.get("workflowId")) or _text(payload.get("wf"))
    if workflow_id is None:
        raise SessionStoreError(
            "MIGRATION_FAILED",
            f"legacy {where} names no workflow (state.workflowId) and its token carries "
            "none; it was left untouched. Start a new session for this folder.",
        )
    version = _text(state.get("workflowVersion")) or _text(payload.get("v")) or "0.0.0"
    status = state.get("status") if state.get("status") in _STATUSES else "running"
    variables = state.get("variables") if isinstance(state.get("variables"), dict) else {}
    started = _text(state.get("startedAt")) or _text(envelope.get("startedAt")) or iso_utc(now)
    return SessionFile(
        session_index=session_index,
        workflow_id=workflow_id,
        workflow_version=version if _VERSION.fullmatch(version) else "0.0.0",
        agent_id=_text(payload.get("aid")) or "orchestrator",
        status=status,
        current_activity=_text(state.get("currentActivity")) or _text(payload.get("act")) or "",
        seq=0,
        ts=int(now),
        started_at=started,
        variables=dict(variables),
        completed_activities=_strings(state.get("completedActivities")),
        skipped_activities=_strings(state.get("skippedActivities")),
        checkpoint_responses=_responses(state.get("checkpointResponses")),
        history=[new_history("workflow_started", now=now, data={"migratedFrom": LEGACY_FILE})],
        planning_folder_path=folder,
    )


def migrate_folder(store: SessionStore, folder: Path, *, now: float | None = None) -> bool:
    """Migrate ``folder`` if it holds ``workflow-state.json`` and no ``session.json``; returns whether it did.

    ``store`` is the ``SessionStore`` (it computes the index and writes the sealed pair). The old token is
    copied to ``.session-token.legacy`` before the seal replaces it, and the envelope is renamed to
    ``workflow-state.json.migrated`` after the new pair is written: every byte of the old folder survives.
    """
    legacy = folder / LEGACY_FILE
    if not legacy.is_file() or os.path.lexists(folder / "session.json"):
        return False
    stamp = time.time() if now is None else now
    token_path = folder / ".session-token"
    try:
        token_bytes = token_path.read_bytes()
    except FileNotFoundError:
        token_bytes = None
    real = os.path.realpath(folder)
    top = legacy_session(
        legacy.read_bytes(),
        token_bytes.decode("utf-8", "replace") if token_bytes is not None else None,
        session_index=store.root_index(folder),
        folder=real,
        now=stamp,
    )
    if token_bytes is not None and not (folder / LEGACY_TOKEN_BACKUP).exists():
        write_private(folder / LEGACY_TOKEN_BACKUP, token_bytes)
    try:
        store.write(folder, top, exclusive=True)
    except SessionStoreError as exc:
        if exc.code == "FOLDER_OCCUPIED":  # another server migrated it a moment ago
            return False
        raise
    os.replace(legacy, folder / (LEGACY_FILE + LEGACY_BACKUP_SUFFIX))
    return True
