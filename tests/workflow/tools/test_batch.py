"""``tools/batch.py``: the batch block agrees with the batch bound's standing."""

from __future__ import annotations

from tests.workflow.tools.builders import dispatched

from orchestrator.workflow.tools.batch import batch_block


def test_batch_block_compatibility() -> None:
    block = batch_block(
        [dispatched("w", "a")],
        scope="w",
        session_agent="o",
        context_tokens=1000,
        max_activities=3,
        headroom_fraction=0.35,
    )
    assert block["activities"] == 1 and block["budget_chars"] == 1400
