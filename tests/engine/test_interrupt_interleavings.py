"""Property: any interleaving of operator requests with a scripted run keeps the log well-formed —
every ``role_start`` has exactly one ``role_finished`` and every ``interrupt`` one ``interrupt_resolved``."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.engine.harness import FAST, call, finish, of_type, turn
from tests.helpers import make_settings, serve_script

from orchestrator.engine.controls import RunControls
from orchestrator.engine.interrupts import InterruptQueue
from orchestrator.engine.runner import RunOutcome, RunRequest, RunServices, execute_run
from orchestrator.runlog import read_events
from orchestrator.runlog.events import RunEvent

INSPECT = ["list_role_messages", "read_message_window", "search_role_blocks", "recent_role_tool_calls"]
ROLES = {
    "lead": ["agent", "finish"],
    "planner": ["agent", "finish"],
    "coder": ["run_shell", "finish"],
    "loop_detector": [*INSPECT, "trigger_interrupt", "finish"],
    "inquiry_responder": [*INSPECT, "finish"],
}


def _script() -> dict[str, Any]:
    """Every reply is a function of the request (reusable turns, most specific first)."""
    r = {"reusable": True}
    return {
        "turns": [
            turn("lead", finish("stopped on notice"), last="[Operator notice", **r),
            turn("lead", finish("done"), last="planned", **r),
            turn("lead", call("agent", role="planner", task="plan it"), **r),
            turn("planner", finish("replanned"), last="[Operator plan modification", **r),
            turn("planner", finish("planned"), last="coded", **r),
            turn("planner", call("agent", role="coder", task="code it"), **r),
            turn("coder", finish("coded"), last="step-2", **r),
            turn("coder", call("run_shell", command="echo step-2"), last="step-1", **r),
            turn("coder", call("run_shell", command="echo step-1"), last="step-0", **r),
            turn("coder", call("run_shell", command="echo step-0"), chunkChars=4, content="working", **r),
            # The first coder is coder-2-3; after a plan modification the id differs, the call is refused
            # (invalid_arguments) and the handler finishes without deciding: both resolve as continue.
            turn(
                "loop_detector",
                call("trigger_interrupt", targetRole="coder-2-3", action="continue", reason=""),
                last="Check whether",
                **r,
            ),
            turn("loop_detector", finish("checked"), **r),
            turn("inquiry_responder", finish("here is the answer"), **r),
        ]
    }


actions = st.lists(
    st.tuples(st.integers(min_value=1, max_value=60), st.sampled_from(["inquiry", "notice", "plan_modification"])),
    max_size=4,
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(actions)
async def test_operator_requests_never_break_the_pairing(flavor: str, plan: list[tuple[int, str]]) -> None:
    async with serve_script({**_script(), "flavor": {"name": flavor}}) as sim:
        with tempfile.TemporaryDirectory() as directory:
            workspace = Path(directory)
            triggers = {
                "handlerRole": "loop_detector",
                "everyToolCalls": 1,
                "everyTokens": 10**7,
                "planOwnerRole": "planner",
            }
            config = make_settings(
                workspace / "cfg",
                sim.base_url,
                roles=ROLES,
                interruptTriggers=triggers,
                inquiryHandlerRole="inquiry_responder",
            )
            queue = InterruptQueue()
            runs: list[RunControls] = []
            seen = 0
            due = sorted(plan)

            def listener(event: RunEvent) -> None:
                nonlocal seen
                seen += 1
                while due and due[0][0] <= seen:
                    _, kind = due.pop(0)
                    if kind == "inquiry":
                        queue.post_inquiry("status?")
                    elif kind == "notice":
                        queue.post_notice("wrap up")
                    elif runs:
                        runs[0].modify_plan("change of plan")

            services = RunServices(timeouts=FAST, interrupts=queue, log_listeners=[listener])
            outcomes: list[RunOutcome] = []

            async def execute(task_status: trio.TaskStatus[RunControls] = trio.TASK_STATUS_IGNORED) -> None:
                request = RunRequest(task="go", effort="quick")
                outcomes.append(await execute_run(config, workspace, request, services, task_status=task_status))

            async with trio.open_nursery() as nursery:
                runs.append(await nursery.start(execute))
            outcome = outcomes[0]
            events = read_events(outcome.run_dir / "log.jsonl")
    assert outcome.card.status == "success"
    starts = sorted(p["roleId"] for p in of_type(events, "role_start"))
    finishes = sorted(p["roleId"] for p in of_type(events, "role_finished"))
    assert starts == finishes and len(set(starts)) == len(starts)
    assert len(of_type(events, "interrupt")) == len(of_type(events, "interrupt_resolved"))
