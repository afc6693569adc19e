"""The workflow server's error vocabulary.

Every failure a tool reports is a ``WorkflowError``: the call had no effect, and the MCP result is
``isError: true`` with the text ``"<CODE>: <message>"``. The message names what is wrong (the id, the
parameter, the path) and keeps the key phrases agents and tests match on.
"""

from __future__ import annotations

__all__ = [
    "ActivityNotFoundError",
    "ParameterError",
    "ResourceNotFoundError",
    "SessionStoreError",
    "TechniqueNotFoundError",
    "WorkflowCheckpointError",
    "WorkflowError",
    "WorkflowNotFoundError",
    "WorkflowValidationError",
    "WorkspaceConfigError",
]


class WorkflowError(Exception):
    """A tool call that failed without effect. ``code`` prefixes the text the agent sees."""

    code: str = "WorkflowError"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class ParameterError(WorkflowError):
    """A missing, mistyped or unknown tool parameter (checked before the handler runs)."""

    code = "InvalidParams"


class WorkflowNotFoundError(WorkflowError):
    code = "WorkflowNotFoundError"


class WorkflowValidationError(WorkflowError):
    code = "WorkflowValidationError"


class ActivityNotFoundError(WorkflowError):
    code = "ActivityNotFoundError"


class TechniqueNotFoundError(WorkflowError):
    code = "TechniqueNotFoundError"


class ResourceNotFoundError(WorkflowError):
    code = "ResourceNotFoundError"


class SessionStoreError(WorkflowError):
    """Session storage failures; ``code`` is one of ``INVALID_INDEX NOT_FOUND COLLISION SEAL_MISMATCH
    WORKSPACE_INVALID FOLDER_OCCUPIED PLANNING_FOLDER_OUTSIDE_ROOT REPO_MISMATCH SESSION_CONFLICT
    PATH_OUTSIDE_ROOT MIGRATION_FAILED``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code)


class WorkflowCheckpointError(WorkflowError):
    """Checkpoint-gate refusals; ``code`` is one of ``CHECKPOINT_ACTIVE CHECKPOINT_TOO_FAST
    CHECKPOINT_TIMER CHECKPOINT_MODE CHECKPOINT_OPTION CHECKPOINT_NOT_FOUND REPLY_NOT_ACCEPTED``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code)


class WorkspaceConfigError(WorkflowError):
    """Startup configuration that cannot work (bad transport, missing workspace, unusable key)."""

    code = "WorkspaceConfigError"
