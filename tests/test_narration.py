"""``narration.py``: one line per role, tool call and model turn, and the streamed text between them."""

from __future__ import annotations

import io

from orchestrator.conversation import CardError, Usage
from orchestrator.engine.run import StreamDelta
from orchestrator.narration import Narrator, one_line
from orchestrator.runlog.events import (
    LlmCall,
    LlmCallPayload,
    LlmCallStart,
    LlmRetry,
    LlmRetryPayload,
    RoleFinished,
    RoleFinishedPayload,
    RoleRef,
    RoleStart,
    RoleStartPayload,
    ToolCallEvent,
    ToolCallPayload,
)

T = "2026-01-01T00:00:00Z"


def test_one_line_keeps_the_first_line_and_marks_what_it_left_out() -> None:
    assert one_line("do it") == "do it"
    assert one_line("\n  first\nsecond\n") == "first …"
    assert one_line("x" * 200, 10) == "x" * 9 + "…"
    assert one_line(None) == "" and one_line("  \n ") == ""


def _delta(text: str, reset: bool = False, field: str = "content") -> StreamDelta:
    return StreamDelta(run_id="r", role_id="coder-1-2", role="coder", field=field, text=text, reset=reset)


def test_a_turn_is_narrated_when_it_goes_out_while_it_streams_and_when_it_is_in() -> None:
    out = io.StringIO()
    now = [100.0]
    narrator = Narrator(out, clock=lambda: now[0])
    narrator.event(
        RoleStart(
            timestamp=T, payload=RoleStartPayload(role="coder", role_id="coder-1-2", depth=1, task="fix it\nplease")
        )
    )
    narrator.event(LlmCallStart(timestamp=T, payload=RoleRef(role="coder", role_id="coder-1-2")))
    retry = LlmRetryPayload(
        role="coder", role_id="coder-1-2", attempt=1, attempts=4, cause="http", message="x", delay_seconds=1.0
    )
    narrator.event(LlmRetry(timestamp=T, payload=retry))
    narrator.delta(_delta("Hel", reset=True))
    narrator.delta(_delta("thinking", field="reasoning"))
    narrator.delta(_delta("lo"))
    now[0] = 112.34
    usage = Usage(prompt_tokens=2102, completion_tokens=48)
    done = LlmCallPayload(role="coder", role_id="coder-1-2", message_count=3, usage=usage, finish_reason="length")
    narrator.event(LlmCall(timestamp=T, payload=done))
    narrator.event(
        ToolCallEvent(
            timestamp=T,
            payload=ToolCallPayload(role="coder", tool="run_shell", arguments='{"command": "ls"}', role_id="coder-1-2"),
        )
    )
    narrator.event(
        ToolCallEvent(
            timestamp=T, payload=ToolCallPayload(role="coder", tool="finish", arguments="{}", role_id="coder-1-2")
        )
    )
    card = RoleFinishedPayload(
        role="coder",
        role_id="coder-1-2",
        depth=1,
        status="error",
        summary="gave up",
        error=CardError(kind="incomplete"),
    )
    narrator.event(RoleFinished(timestamp=T, payload=card))
    assert out.getvalue().splitlines() == [
        "  ▶ coder-1-2 starts: fix it …",
        "      … coder-1-2 turn 1: waiting for the model",
        "      ! coder-1-2: model attempt 1/4 failed (http), retrying in 1s",
        "      ✎ coder-1-2: Hello",
        "      ✓ coder-1-2 turn 1: 2102 prompt + 48 completion tokens in 12.3s, cut off at the completion limit",
        '      · coder calls run_shell {"command": "ls"}',
        "  ■ coder-1-2 error (incomplete): gave up",
    ]
