"""``batch_block`` for next_activity's ``_meta.batch``; the arithmetic lives in ``batch_bound``.

Recreated by the delivery helper with the signature ``navigation.py`` imports (an earlier version of this
file was overwritten by mistake); both tools now share one implementation of the batch bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orchestrator.workflow.serverconfig import DEFAULT_BUNDLE_CHARS_PER_TOKEN
from orchestrator.workflow.session.sessionfile import HistoryEvent
from orchestrator.workflow.tools.batch_bound import BatchPolicy, batch_standing

__all__ = ["batch_block"]


def batch_block(
    history: Sequence[HistoryEvent],
    *,
    scope: str,
    session_agent: str,
    context_tokens: int,
    max_activities: int,
    headroom_fraction: float,
    chars_per_token: float = DEFAULT_BUNDLE_CHARS_PER_TOKEN,
) -> dict[str, Any]:
    """``{activities, delivered_chars, may_continue, bounded, max_activities?, budget_chars?}`` for ``scope``."""
    policy = BatchPolicy(
        max_activities=max_activities, headroom_fraction=headroom_fraction, chars_per_token=chars_per_token
    )
    return batch_standing(history, session_agent, scope, context_tokens, policy).block()
