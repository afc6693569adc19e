"""Session state of the workflow server: sealed ``session.json`` files, indexes, roots and the trace.

Public API (everything below is re-exported here):

State (``sessionfile``) — the ``session.json`` schema, schemaVersion 1:
    ``SessionFile`` (recursive through ``TriggeredWorkflow.state``), ``ActiveCheckpoint``,
    ``AdhocCheckpoint``/``AdhocOption``, ``CheckpointResponse``/``CheckpointEffects``, ``HistoryEvent``
    (``type``: the closed ``HistoryType`` literal, names in ``HISTORY_TYPES``), ``HistoryError``,
    ``TriggeredWorkflow``/``TriggeredFrom``, ``DeclaredArtifact``, ``ParentSession``.
    Helpers: ``new_session_file(session_index=, workflow_id=, workflow_version=, agent_id=, variables=,
    now=, **fields)``, ``new_history(type, now=None, **fields)``, ``with_history(state, *events)``,
    ``touch(state, now=None)`` (seq + 1, ts), ``iso_utc(now=None)``, ``walk_sessions(top)`` /
    ``walk_children(top)`` → ``(slot path, state)``, ``find_index(top, index)``, ``state_at(top, path)``,
    ``replace_at(top, path, new_state)``. ``None`` in an optional field means "absent" on disk.

Canonical bytes and keys (``canonical``, ``keys``):
    ``canonical_bytes(value) -> bytes``,
    ``load_or_create_key(key_dir) -> bytes`` (``WorkspaceConfigError`` when unusable), ``LazyKey(key_dir)``,
    ``seal(key, data)``, ``verify_seal(key, data, token)``, ``derive_index(key, text)``,
    ``root_index(key, folder)``, ``child_index(key, top_folder, path)``, ``check_index(index)``.

Store (``store``) — ``SessionStore(settings, key, roots=None, durable=True)``:
    ``read(folder) -> SessionFile`` (seal verified first; ``SEAL_MISMATCH`` / ``NOT_FOUND``),
    ``write(folder, top, exclusive=False) -> bytes`` (never over a mismatched folder),
    ``locate(index) -> SessionHandle`` (``INVALID_INDEX`` / ``NOT_FOUND`` / ``COLLISION`` /
    ``SEAL_MISMATCH``), ``open_folder(folder) -> SessionHandle``, ``replace(handle, new_state) -> top``,
    ``save(handle, new_state) -> SessionHandle``, ``root_index(folder)``, ``child_index(top_folder, path)``,
    ``create_transient(slug=None) -> (folder, index)``, ``is_transient(index)``, ``transient_slug(index)``,
    ``promote(handle, target, top=None) -> SessionHandle`` (``FOLDER_OCCUPIED``, zero writes),
    ``search_roots()``, ``add_search_root(root)``.
    ``SessionHandle{folder, top, path, transient}`` with ``.state`` (the addressed session) and ``.index``.

Roots (``roots``, ``checkout``; the root mode itself is ``serverconfig.root_mode``, repo names
``repos.normalise_repo`` / ``repos.repo_basename``):
    ``planning_root(settings, repo=None)``, ``project_planning_root(settings,
    project_dir)``, ``projects_roots(settings)``, ``search_roots(settings)``, ``validate_slug(slug)``,
    ``dated_slug(workflow_id, now=None)``, ``next_free_slug(root, base)``,
    ``check_new_planning_folder(folder, root) -> slug`` (``PLANNING_FOLDER_OUTSIDE_ROOT``),
    ``to_host_path(path, settings)``,
    ``to_server_path(path, settings)``, ``derive_checkout(working_directory, projects_roots=()) ->
    CheckoutFacts{checkout, origin_url, target_repo, host_repo_path, component_path, is_monorepo,
    project_dir}`` (``.variables()`` gives the bag entries).

Trace (``trace``) — ``TraceStore(key, capacity=1000)``:
    ``append(index, event) -> warning | None``, ``events(index, agent_id=None)``, ``sessions()``,
    ``take_segment(index)``, ``take_since_cursor(index)``, ``token_for(index, act, now=None)``,
    ``decode_token(token)``; module functions ``new_trace_event(...)``, ``encode_token(key, payload)``,
    ``decode_token(key, token)`` (``TraceTokenError``); Structs ``TraceEvent``, ``TracePayload``.

All store/roots failures are ``orchestrator.workflow.errors`` classes (``SessionStoreError`` with a
``code``, ``ParameterError``, ``WorkspaceConfigError``).
"""

from orchestrator.workflow.session.canonical import SESSION_KEY_ORDER, CanonicalJsonError, canonical_bytes
from orchestrator.workflow.session.checkout import CheckoutFacts, derive_checkout
from orchestrator.workflow.session.keys import (
    LazyKey,
    check_index,
    child_index,
    derive_index,
    load_or_create_key,
    root_index,
    seal,
    verify_seal,
)
from orchestrator.workflow.session.roots import (
    check_new_planning_folder,
    dated_slug,
    next_free_slug,
    planning_root,
    project_planning_root,
    projects_roots,
    search_roots,
    to_host_path,
    to_server_path,
    validate_slug,
)
from orchestrator.workflow.session.sealed import SEAL_FILE, SESSION_FILE
from orchestrator.workflow.session.sessionfile import (
    HISTORY_TYPES,
    ActiveCheckpoint,
    AdhocCheckpoint,
    AdhocOption,
    CheckpointEffects,
    CheckpointResponse,
    DeclaredArtifact,
    HistoryError,
    HistoryEvent,
    HistoryType,
    ParentSession,
    SessionFile,
    SlotPath,
    TriggeredFrom,
    TriggeredWorkflow,
    find_index,
    iso_utc,
    new_history,
    new_session_file,
    replace_at,
    state_at,
    touch,
    walk_children,
    walk_sessions,
    with_history,
)
from orchestrator.workflow.session.store import SessionHandle, SessionStore
from orchestrator.workflow.session.trace import (
    TraceEvent,
    TracePayload,
    TraceSegment,
    TraceStore,
    TraceTokenError,
    decode_token,
    encode_token,
    new_trace_event,
)

__all__ = [
    "HISTORY_TYPES",
    "SEAL_FILE",
    "SESSION_FILE",
    "SESSION_KEY_ORDER",
    "ActiveCheckpoint",
    "AdhocCheckpoint",
    "AdhocOption",
    "CanonicalJsonError",
    "CheckoutFacts",
    "CheckpointEffects",
    "CheckpointResponse",
    "DeclaredArtifact",
    "HistoryError",
    "HistoryEvent",
    "HistoryType",
    "LazyKey",
    "ParentSession",
    "SessionFile",
    "SessionHandle",
    "SessionStore",
    "SlotPath",
    "TraceEvent",
    "TracePayload",
    "TraceSegment",
    "TraceStore",
    "TraceTokenError",
    "TriggeredFrom",
    "TriggeredWorkflow",
    "canonical_bytes",
    "check_index",
    "check_new_planning_folder",
    "child_index",
    "dated_slug",
    "decode_token",
    "derive_checkout",
    "derive_index",
    "encode_token",
    "find_index",
    "iso_utc",
    "load_or_create_key",
    "new_history",
    "new_session_file",
    "new_trace_event",
    "next_free_slug",
    "planning_root",
    "project_planning_root",
    "projects_roots",
    "replace_at",
    "root_index",
    "seal",
    "search_roots",
    "state_at",
    "to_host_path",
    "to_server_path",
    "touch",
    "validate_slug",
    "verify_seal",
    "walk_children",
    "walk_sessions",
    "with_history",
]
