"""The run's flow model: log events → ``InteractionModel`` (pure), kept current incrementally.

- ``build_model`` / ``fold`` + ``finalize``: the adapter (``adapter.py``) over ``FlowState``.
- ``operation_details``: an operation's Markdown detail body, on demand (``details.py``).

See docs/visualization.md.
"""

from orchestrator.flow.adapter import CONTROL_TOOLS, build_model, finalize, fold
from orchestrator.flow.details import operation_details, render_details
from orchestrator.flow.foldstate import FlowState
from orchestrator.flow.model import (
    InteractionModel,
    Metrics,
    Operation,
    Participant,
    StackRecord,
    run_status,
)

__all__ = [
    "CONTROL_TOOLS",
    "FlowState",
    "InteractionModel",
    "Metrics",
    "Operation",
    "Participant",
    "StackRecord",
    "build_model",
    "finalize",
    "fold",
    "operation_details",
    "render_details",
    "run_status",
]
