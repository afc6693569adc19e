"""Building new sessions: the seeded variable bag and a child embedded in its parent.

``seed_bag`` is pure; ``embed_child`` only derives the child's index from the server key.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import msgspec

from orchestrator.workflow.corpus.model import Workflow
from orchestrator.workflow.session.sessionfile import (
    ParentSession,
    SessionFile,
    TriggeredFrom,
    TriggeredWorkflow,
    iso_utc,
    new_history,
    new_session_file,
)
from orchestrator.workflow.tools.context import ServerState

__all__ = ["FACT_KEYS", "embed_child", "seed_bag"]

FACT_KEYS = ("planning_folder_path", "host_repo_path", "target_repo", "component_path", "is_monorepo")


def seed_bag(workflow: Workflow, *, user_request: str | None, facts: dict[str, Any] | None = None) -> dict[str, Any]:
    """Declared defaults (falsy included), then ``user_request``, then the checkout facts."""
    bag = {decl.name: copy.deepcopy(decl.default_value) for decl in workflow.variables if decl.has_default}
    if user_request is not None:
        bag["user_request"] = user_request
    bag.update(facts or {})
    return bag


def embed_child(
    state: ServerState,
    parent: SessionFile,
    *,
    top_folder: Path,
    parent_path: tuple[int, ...],
    workflow: Workflow,
    agent_id: str,
    context_mode: str | None,
    planning_folder_path: str | None,
) -> tuple[SessionFile, SessionFile]:
    """``(new parent, child)``: the child appended at the parent's next slot, ``workflow_triggered`` logged.

    The child's index is derived from ``top_folder`` and its slot path; its bag is the declared defaults,
    the parent's ``user_request`` and the parent's checkout facts.
    """
    now = state.now()
    slot = len(parent.triggered_workflows)
    index = state.store.child_index(top_folder, (*parent_path, slot))
    facts = {key: parent.variables[key] for key in FACT_KEYS if key in parent.variables}
    child = new_session_file(
        session_index=index,
        workflow_id=workflow.id,
        workflow_version=workflow.version,
        agent_id=agent_id,
        variables=seed_bag(workflow, user_request=parent.variables.get("user_request"), facts=facts),
        now=now,
        repo=parent.repo,
        context_mode=context_mode or parent.context_mode,
        planning_folder_path=planning_folder_path,
        parent_session=ParentSession(
            session_index=parent.session_index,
            workflow_id=parent.workflow_id,
            activity_id=parent.current_activity or None,
        ),
    )
    entry = TriggeredWorkflow(
        workflow_id=workflow.id,
        session_index=index,
        triggered_at=iso_utc(now),
        triggered_from=TriggeredFrom(activity_id=parent.current_activity),
        status="running",
        state=child,
    )
    event = new_history(
        "workflow_triggered",
        now=now,
        activity=parent.current_activity or None,
        data={"workflowId": workflow.id, "sessionIndex": index},
    )
    new_parent = msgspec.structs.replace(
        parent,
        triggered_workflows=[*parent.triggered_workflows, entry],
        history=[*parent.history, event],
    )
    return new_parent, child
