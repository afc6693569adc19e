"""``start_session`` and ``dispatch_child``: opening, resuming, bootstrapping and embedding sessions.

start_session, in order: a relative ``planning_folder`` fails; a folder holding ``session.json`` resumes
(seal verified, drift applied in at most one write); an unknown workflow fails; ``meta`` without
``working_directory`` becomes a transient (temp folder, in-process index); anything else is durable under
its planning root (from ``working_directory``'s project, else the configured root), in the named folder
(which must sit directly under that root) or the next free ``YYYY-MM-DD-<workflow>`` folder. A fresh
durable ``meta`` start either opens its client in the same call or answers a ``decision`` and writes nothing.

dispatch_child appends a child at ``<parent>.triggeredWorkflows.N.state``; a transient parent is promoted
to a planning folder first (``FOLDER_OCCUPIED`` with zero writes when that folder already holds a session).
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import msgspec

from orchestrator.workflow.corpus.model import META_WORKFLOW_ID, Workflow
from orchestrator.workflow.errors import ParameterError, SessionStoreError, WorkflowNotFoundError
from orchestrator.workflow.repos import normalise_repo
from orchestrator.workflow.session.checkout import CheckoutFacts, derive_checkout
from orchestrator.workflow.session.migrate import migrate_folder
from orchestrator.workflow.session.roots import (
    check_new_planning_folder,
    check_working_directory,
    dated_slug,
    ensure_planning_folder,
    is_within,
    next_free_slug,
    planning_root,
    project_planning_root,
    projects_roots,
    to_server_path,
    validate_slug,
    working_roots,
    writable_roots,
)
from orchestrator.workflow.session.sealed import SESSION_FILE, revision_of
from orchestrator.workflow.session.sessionfile import new_session_file, touch
from orchestrator.workflow.session.store import SessionHandle
from orchestrator.workflow.tools.bootstrap import match_client, resume_phrases, states_resume_intent
from orchestrator.workflow.tools.context import (
    MAX_PARENT_DEPTH,
    McpCall,
    McpReply,
    ServerState,
    SessionCall,
    ToolSpec,
)
from orchestrator.workflow.tools.params import AGENT_ID, SESSION_INDEX, boolean, params, string
from orchestrator.workflow.tools.seeding import embed_child, seed_bag

__all__ = ["DISPATCH_CHILD", "START_SESSION"]

EXECUTION_PATH = "agent"
LEXICON = ("meta", "resume-intent-lexicon")


# ------------------------------------------------------------------------------------------ shared


def _repo_arg(args: dict[str, Any]) -> str | None:
    raw = args.get("repo")
    return normalise_repo(raw) if raw else None


def _repo_mismatch(given: str, bound: str, what: str) -> SessionStoreError:
    return SessionStoreError("REPO_MISMATCH", f"repo '{given}' does not match {what} '{bound}'")


def _workflow(state: ServerState, workflow_id: str) -> Workflow:
    workflow = state.corpus().get_workflow(workflow_id)
    if workflow is None:
        raise WorkflowNotFoundError(f"Workflow not found: {workflow_id}")
    return workflow


def _workflow_summary(workflow: Workflow) -> dict[str, Any]:
    return {
        "id": workflow.id,
        "version": workflow.version,
        "title": workflow.title,
        "description": workflow.description or "",
    }


# ------------------------------------------------------------------------------------ start_session


def _resume_fallback(state: ServerState, folder: Path) -> Path | None:
    """The one folder named like ``folder`` holding a session anywhere under the search roots, if unique."""
    slug = folder.name
    if not slug or slug in (".", ".."):
        return None
    found: list[Path] = []
    for root in state.store.search_roots():
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") or d == ".engineering"]
            if Path(dirpath).name == slug and SESSION_FILE in filenames:
                found.append(Path(dirpath))
    unique = {os.path.realpath(p): p for p in found}
    return next(iter(unique.values())) if len(unique) == 1 else None


def _resume(call: McpCall, handle: SessionHandle, repo: str | None, *, migrated: bool = False) -> McpReply:
    args = call.args
    s = call.adopt(handle)
    workflow = s.workflow()
    before = s.state
    agent = args.get("agent_id") or "orchestrator"
    if s.state.agent_id != agent:
        s.update(agent_id=agent)
    if not s.transient:
        real = os.path.realpath(s.folder)
        if s.state.planning_folder_path != real:
            s.update(planning_folder_path=real)
        host = s.planning_folder_path
        if "planning_folder_path" in s.state.variables and s.state.variables["planning_folder_path"] != host:
            s.update(variables={**s.state.variables, "planning_folder_path": host})
    mode = args.get("context_mode")
    if mode is not None:
        if s.state.context_mode != mode:
            s.update(context_mode=mode)
        ledger = s.state.delivered_content or {}
        if mode == "fresh" and agent in ledger:
            s.update(delivered_content={k: v for k, v in ledger.items() if k != agent} or None)
    request = args.get("user_request")
    if request is not None and s.state.variables.get("user_request") != request:
        s.update(variables={**s.state.variables, "user_request": request})
    if repo is not None:
        if s.state.repo is None:
            s.update(repo=repo)
        elif s.state.repo != repo:
            raise _repo_mismatch(repo, s.state.repo, "the session's bound repo")
    if workflow.version != s.state.workflow_version:
        missing = {d.name: copy.deepcopy(d.default_value) for d in workflow.variables if d.has_default}
        s.update(
            workflow_version=workflow.version,
            variables={**{k: v for k, v in missing.items() if k not in s.state.variables}, **s.state.variables},
        )
    if s.state != before:
        s.save()
    payload = _session_payload(s, workflow, **({"migrated": True} if migrated else {}))
    return s.json(payload)


def _session_payload(s: SessionCall, workflow: Workflow, **extra: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"workflow": _workflow_summary(workflow), "session_index": s.index}
    slug = s.planning_folder.name if s.planning_folder is not None else s.server.store.transient_slug(s.index)
    payload["planning_slug"] = slug or ""  # always present; "" for a transient with no folder chosen yet
    if s.planning_folder_path is not None:
        payload["planning_folder_path"] = s.planning_folder_path
    if s.state.repo:
        payload["repo"] = s.state.repo
    elif s.transient:
        payload["repo_unbound"] = True
    if s.state.context_mode:
        payload["context_mode"] = s.state.context_mode
    payload["execution_path"] = EXECUTION_PATH
    payload.update(extra)
    return payload


def _checkout(state: ServerState, working_directory: str) -> CheckoutFacts:
    path = working_directory
    if os.path.isabs(path):
        path = to_server_path(path, state.settings)
        check_working_directory(path, state.settings)  # before anything looks at the path
    return derive_checkout(path, projects_roots(state.settings))


def _saved_sessions(state: ServerState, root: Path) -> list[dict[str, Any]]:
    """Sessions stored directly under a planning root (resume candidates); unreadable ones are skipped."""
    out: list[dict[str, Any]] = []
    try:
        children = sorted(p for p in root.iterdir() if (p / SESSION_FILE).is_file())
    except OSError:
        return out
    for folder in children:
        try:
            top = state.store.read(folder)
        except SessionStoreError:
            continue
        clients = [entry.workflow_id for entry in top.triggered_workflows]
        out.append(
            {
                "planning_slug": folder.name,
                "planning_folder": state.host_path(os.path.realpath(folder)),
                "session_index": top.session_index,
                "workflow_id": top.workflow_id,
                "clients": clients,
                "status": top.status,
            }
        )
    return out


def _lexicon_phrases(state: ServerState) -> list[str]:
    namespace, stem = LEXICON
    resource = state.corpus().resources.get(namespace, {}).get(stem)
    return resume_phrases(resource.body) if resource is not None else []


def start_session(call: McpCall) -> McpReply:
    state, args = call.state, call.args
    settings = state.settings
    repo = _repo_arg(args)
    folder: Path | None = None
    if "planning_folder" in args:
        raw = args["planning_folder"]
        if not os.path.isabs(raw):
            raise ParameterError(f"planning_folder '{raw}' must be an absolute path")
        folder = Path(to_server_path(raw, settings))
        # Only folders where sessions live are looked at: elsewhere the answer is the new-folder refusal
        # below, whatever is on the disk there (a refusal never tells what exists outside the roots).
        session_roots = state.store.search_roots()
        if is_within(folder, [*session_roots, *working_roots(settings), settings.tmp_dir]):
            migrated = is_within(folder, session_roots) and migrate_folder(state.store, folder, now=state.now())
            if (folder / SESSION_FILE).exists():
                return _resume(call, state.store.open_folder(folder), repo, migrated=migrated)
        moved = _resume_fallback(state, folder)
        if moved is not None:
            return _resume(call, state.store.open_folder(moved), repo)

    workflow_id = args.get("workflow_id") or META_WORKFLOW_ID
    workflow = _workflow(state, workflow_id)
    facts: CheckoutFacts | None = None
    if "working_directory" in args:
        facts = _checkout(state, args["working_directory"])
        if repo is not None and facts.target_repo is not None and repo != facts.target_repo:
            raise _repo_mismatch(repo, facts.target_repo, "the origin of working_directory")
        repo = facts.target_repo or repo
    elif repo is None and settings.repo is not None:
        repo = settings.repo

    if facts is not None:
        root = project_planning_root(settings, facts.project_dir)
    elif workflow_id == META_WORKFLOW_ID:
        root = None
    else:
        root = planning_root(settings, repo)

    named_slug: str | None = None
    if folder is not None:
        check_root = root if root is not None else planning_root(settings, repo)
        named_slug = check_new_planning_folder(folder, check_root)

    if root is None:
        return _start_transient(call, workflow, repo, named_slug)
    assert root is not None
    client_id: str | None = None
    if workflow_id == META_WORKFLOW_ID:
        outcome = _bootstrap_choice(call, root)
        if isinstance(outcome, McpReply):
            return outcome
        client_id = outcome
    slug = named_slug or next_free_slug(root, dated_slug(client_id or workflow_id, state.now()))
    target = root / slug
    return _create_durable(call, workflow, target, repo, facts, client_id)


def _bootstrap_choice(call: McpCall, root: Path) -> str | McpReply:
    """The client workflow id for a fresh durable meta start, or the ``decision`` result (nothing written)."""
    state, args = call.state, call.args
    request = args.get("user_request")
    workflow = _workflow(state, META_WORKFLOW_ID)
    if not args.get("fresh") and states_resume_intent(request, _lexicon_phrases(state)):
        decision = {
            "kind": "resume_intent",
            "candidates": _saved_sessions(state, root),
            "recommendation": "the request asks to resume earlier work: retry with planning_folder set to the "
            "candidate to continue, or pass fresh: true to open new work",
            "retry_with": ["user_request", "target_workflow_id", "planning_folder", "fresh"],
        }
    else:
        catalog = state.corpus().listed_workflows()
        match = match_client(request, catalog, args.get("target_workflow_id"))
        if match.workflow_id is not None:
            return match.workflow_id
        decision = match.decision or {}
    payload = {"workflow": _workflow_summary(workflow), "decision": decision, "execution_path": EXECUTION_PATH}
    return call.json(payload, {"validation": call.validation()})


def _start_transient(call: McpCall, workflow: Workflow, repo: str | None, slug: str | None) -> McpReply:
    state, args = call.state, call.args
    folder, index = state.store.create_transient(slug)
    top = new_session_file(
        session_index=index,
        workflow_id=workflow.id,
        workflow_version=workflow.version,
        agent_id=args.get("agent_id") or "orchestrator",
        variables=seed_bag(workflow, user_request=args.get("user_request")),
        now=state.now(),
        repo=repo,
        context_mode=args.get("context_mode"),
    )
    data = state.store.write(folder, top, exclusive=True)
    s = call.adopt(SessionHandle(folder=folder, top=top, transient=True, revision=revision_of(data)))
    return s.json(_session_payload(s, workflow))


def _create_durable(
    call: McpCall,
    workflow: Workflow,
    target: Path,
    repo: str | None,
    facts: CheckoutFacts | None,
    client_id: str | None,
) -> McpReply:
    state, args = call.state, call.args
    allowed = writable_roots(state.settings, facts.project_dir if facts is not None else None)
    ensure_planning_folder(target, target.parent, allowed)  # created, then re-checked by its real path
    index = state.store.root_index(target)
    real = os.path.realpath(target)
    bag_facts: dict[str, Any] = {"planning_folder_path": state.host_path(real)}
    if facts is not None:
        bag_facts.update(facts.variables())
        bag_facts["host_repo_path"] = state.host_path(facts.host_repo_path)
    top = new_session_file(
        session_index=index,
        workflow_id=workflow.id,
        workflow_version=workflow.version,
        agent_id=args.get("agent_id") or "orchestrator",
        variables=seed_bag(workflow, user_request=args.get("user_request"), facts=bag_facts),
        now=state.now(),
        planning_folder_path=real,
        repo=repo,
        context_mode=args.get("context_mode"),
    )
    client: dict[str, Any] | None = None
    if client_id is not None:
        child_wf = _workflow(state, client_id)
        top, child = embed_child(
            state,
            top,
            top_folder=target,
            parent_path=(),
            workflow=child_wf,
            agent_id="orchestrator",
            context_mode=None,
            planning_folder_path=real,
        )
        top = msgspec.structs.replace(
            top,
            variables={
                **top.variables,
                "target_workflow_id": child_wf.id,
                "client_session_index": child.session_index,
                "client_initial_activity": child_wf.initial_activity or "",
            },
        )
        client = {
            "session_index": child.session_index,
            "workflow_id": child_wf.id,
            "initialActivity": child_wf.initial_activity,
            "planning_folder_path": state.host_path(real),
        }
    data = state.store.write(target, top, exclusive=True)
    if facts is not None:
        state.store.add_search_root(target.parent)
    s = call.adopt(SessionHandle(folder=target, top=top, revision=revision_of(data)))
    extra = {"client": client} if client is not None else {}
    return s.json(_session_payload(s, workflow, **extra))


# ------------------------------------------------------------------------------------ dispatch_child


def dispatch_child(call: McpCall) -> McpReply:
    state, args = call.state, call.args
    s = call.open()
    workflow = _workflow(state, args["workflow_id"])
    repo = _repo_arg(args)
    parent = s.state
    if repo is not None and parent.repo is not None and parent.repo != repo:
        raise _repo_mismatch(repo, parent.repo, "the parent session's repo")
    repo = parent.repo or repo
    agent = args.get("agent_id") or "worker"
    mode = args.get("context_mode")
    if s.depth + 1 > MAX_PARENT_DEPTH:
        call.warn(f"Parent chain depth {s.depth + 1} exceeds the supported maximum of {MAX_PARENT_DEPTH}")

    if s.transient:
        root = planning_root(state.settings, repo or state.settings.repo)
        slug = args.get("planning_slug") or state.store.transient_slug(s.index)
        slug = validate_slug(slug) if slug else next_free_slug(root, dated_slug(workflow.id, state.now()))
        target = root / slug
        ensure_planning_folder(target, root, writable_roots(state.settings))  # re-checked by its real path
        real = os.path.realpath(target)
        moved = msgspec.structs.replace(
            parent,
            planning_folder_path=real,
            repo=repo,
            variables={**parent.variables, "planning_folder_path": state.host_path(real)},
        )
        new_parent, child = embed_child(
            state,
            moved,
            top_folder=target,
            parent_path=s.handle.path,
            workflow=workflow,
            agent_id=agent,
            context_mode=mode,
            planning_folder_path=real,
        )
        top = touch(new_parent, now=state.now())
        handle = state.store.promote(s.handle, target, top=top)
        s = call.adopt(handle)
    else:
        new_parent, child = embed_child(
            state,
            msgspec.structs.replace(parent, repo=repo),
            top_folder=s.folder,
            parent_path=s.handle.path,
            workflow=workflow,
            agent_id=agent,
            context_mode=mode,
            planning_folder_path=s.state.planning_folder_path or os.path.realpath(s.folder),
        )
        s.state = new_parent
        s.save()
    folder = s.planning_folder
    payload: dict[str, Any] = {
        "session_index": child.session_index,
        "workflow": {"id": workflow.id, "version": workflow.version, "initialActivity": workflow.initial_activity},
    }
    if folder is not None:
        payload["planning_slug"] = folder.name
        payload["planning_folder_path"] = s.planning_folder_path
    payload["execution_path"] = EXECUTION_PATH
    meta = {"session_index": child.session_index, "validation": call.validation()}
    return call.json(payload, meta)


START_SESSION = ToolSpec(
    "start_session",
    "Open a workflow session, or resume one. Returns session_index, workflow metadata, planning_slug, "
    "planning_folder_path (where all session artifacts go) and execution_path. planning_folder holding "
    "session.json resumes it (workflow_id is then ignored); a new planning_folder must sit directly under the "
    "planning root. working_directory (absolute path of the checkout under work) derives the repo and puts "
    "planning under its project. workflow_id defaults to meta: without working_directory that opens a "
    "temporary bootstrap session (promote it later with dispatch_child); with working_directory it also opens "
    "the matching client workflow (client.session_index) or returns a decision and writes nothing.",
    params(
        {
            "workflow_id": string("Workflow to run (default meta)."),
            "planning_folder": string("Absolute path of the planning folder to resume or create.", path=True),
            "working_directory": string("Absolute path of the checkout under work.", path=True),
            "repo": string("owner/repo or a GitHub URL; must equal working_directory's origin when both given."),
            "user_request": string("The user's request, seeded into the variable bag."),
            "agent_id": string("Agent that owns the session (default orchestrator)."),
            "context_mode": string(
                "Delivery mode: persistent (send-once markers) or fresh.", enum=("persistent", "fresh")
            ),
            "target_workflow_id": string("Client workflow to open when bootstrapping from meta."),
            "fresh": boolean("Bootstrap new work even if user_request reads like a request to resume."),
        },
        closed=True,
    ),
    start_session,
)
DISPATCH_CHILD = ToolSpec(
    "dispatch_child",
    "Start a child workflow inside the parent session (stored in the parent's session.json under "
    "triggeredWorkflows). Returns the child's session_index, workflow.initialActivity (the child's first "
    "next_activity), planning_folder_path and execution_path. A temporary parent is first promoted to a "
    "planning folder (planning_slug, else the slug given at start, else YYYY-MM-DD-<workflow_id>); a folder "
    "that already holds a session is refused as FOLDER_OCCUPIED and nothing changes.",
    params(
        {
            "session_index": SESSION_INDEX,
            "workflow_id": string("Workflow the child runs.", min_length=1),
            "agent_id": AGENT_ID | {"description": "Agent that owns the child session (default worker)."},
            "planning_slug": string("Planning folder name used when a temporary parent is promoted.", path=True),
            "repo": string("owner/repo (or URL) to bind when the parent has none."),
            "context_mode": string("Delivery mode of the child.", enum=("persistent", "fresh")),
        },
        required=("session_index", "workflow_id"),
        closed=True,
    ),
    dispatch_child,
)
