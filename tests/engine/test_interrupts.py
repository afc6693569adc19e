"""The interrupt queue: FIFO operator requests, early plan modifications, and the marked message texts."""

from __future__ import annotations

from orchestrator.engine.interrupts import InterruptQueue, OperatorRequest, notice_text, plan_modification_text


def test_an_empty_queue_has_nothing_pending_and_takes_nothing() -> None:
    queue = InterruptQueue()
    assert not queue.pending
    assert queue.take() is None and queue.take_early_plan_modification() is None


def test_inquiries_and_notices_come_out_in_posting_order() -> None:
    queue = InterruptQueue()
    queue.post_notice("n1")
    queue.post_inquiry("i1")
    queue.post_notice("n2")
    taken = [queue.take(), queue.take(), queue.take()]
    assert taken == [OperatorRequest("notice", "n1"), OperatorRequest("inquiry", "i1"), OperatorRequest("notice", "n2")]
    assert not queue.pending


def test_early_plan_modifications_are_pending_and_kept_apart_from_requests() -> None:
    queue = InterruptQueue()
    queue.post_early_plan_modification("p1")
    queue.post_early_plan_modification("p2")
    assert queue.pending and queue.take() is None
    assert queue.take_early_plan_modification() == "p1"
    assert queue.pending
    assert queue.take_early_plan_modification() == "p2"
    assert not queue.pending


def test_the_marked_texts_end_with_the_operators_message() -> None:
    notice = notice_text("wrap up now")
    plan = plan_modification_text("use sqlite")
    assert notice.startswith("[Operator notice") and notice.endswith("] wrap up now")
    assert plan.startswith("[Operator plan modification") and plan.endswith("] use sqlite")
    assert "not a question" in notice and "re-plan" in plan
