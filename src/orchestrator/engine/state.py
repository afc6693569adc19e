"""A run's resumable state as data: the role frames, their pending turns, the run-level counters.

Nothing a resume needs lives in coroutine locals: the role loop is a function of a ``RoleFrame``, so a
frame decoded from a checkpoint re-enters the loop exactly where it stood (see docs/engine.md).
"""

from __future__ import annotations

from orchestrator.conversation import Message, ResultCard
from orchestrator.schema import Base

__all__ = ["AskedQuestion", "FinishedRoot", "PendingTurn", "Rejection", "RoleFrame", "RunState", "waiting_question"]


class AskedQuestion(Base):
    """An ``ask_human`` question the role is waiting on, kept in the checkpoint so a resumed run asks
    it again (same id) instead of sending the model turn that asked it again."""

    id: str
    question: str
    context: str | None = None
    asked_at: str = ""


class PendingTurn(Base):
    """A completed model turn whose tool calls are being executed.

    ``results`` holds the tool messages of calls ``0 .. len(results)-1``; ``awaiting`` is the index of
    the ``agent`` call whose child is running; ``child_card`` is that child's card once it finished but
    before the parent resumed. The assistant message and its results join the history together, only
    when every call has an output, so a call is never split from its results.
    """

    assistant: Message
    results: list[Message] = []
    awaiting: int | None = None
    #: Instance id of the child running for ``awaiting`` (so a resume can reconcile its log events).
    child_id: str | None = None
    child_card: ResultCard | None = None
    finish_card: ResultCard | None = None
    #: The model's response ended at the completion limit (``length``): a broken call was cut off.
    cut_off: bool = False
    #: The ``ask_human`` call at index ``len(results)`` waits for this answer.
    asking: AskedQuestion | None = None


class Rejection(Base):
    """A context-size rejection parked on the frame until the next turn boundary."""

    prompt_tokens: int | None = None
    message: str = ""


class RoleFrame(Base):
    """One live role instance: identity, conversation, counters and the turn in progress."""

    instance_id: str
    role: str
    depth: int
    task: str
    parent_id: str | None = None
    parent_role: str | None = None
    effort: str | None = None
    history: list[Message] = []
    #: Leading messages no edit may touch: system prompt, (entry role: effort directive), task.
    preamble: int = 2
    tool_calls: int = 0
    completion_tokens: int = 0
    prompt_tokens_total: int = 0
    cached_prompt_tokens_total: int = 0
    last_prompt_tokens: int | None = None
    llm_calls: int = 0
    loop_check_tool_calls: int = 0
    loop_check_tokens: int = 0
    pressure_fired: bool = False
    pressure_notice_due: bool = False
    rejection_count: int = 0
    #: Consecutive turns cut off at the completion limit (``finish_reason`` ``length``).
    cut_off_turns: int = 0
    parked_rejection: Rejection | None = None
    compaction_sizes: list[int] = []
    stalled_compactions: int = 0
    #: ``llm_call`` delta baseline: messages already logged for this instance; 0 forces a full snapshot.
    logged_upto: int = 0
    #: Bumped whenever something rewrites (not appends to) the history: checkpoints then store it whole.
    history_epoch: int = 0
    #: Messages for this frame delivered at its next own safe point (e.g. an operator notice).
    inbox: list[Message] = []
    #: Set on a handler instance (loop check, context, inquiry): the instance id it was invoked for.
    handler_for: str | None = None
    pending: PendingTurn | None = None


class FinishedRoot(Base):
    """The entry role's outcome, recorded before its ``role_finished`` is logged."""

    role: str
    role_id: str
    card: ResultCard


class RunState(Base):
    """Run-level state that outlives any one frame; ``frames`` is the live chain, root first.

    ``log_level`` is the entry frame's logging level (kept here, once per run); ``final`` is set when
    the entry role has its card, so a restart between that and the terminal meta does not re-run it.
    """

    run_id: str
    started_at: str
    log_level: str = "full"
    effort: str = "standard"
    registry_counter: int = 0
    learned_ceiling: int | None = None
    frames: list[RoleFrame] = []
    final: FinishedRoot | None = None
    #: Flips (never back) when a write-capable role starts; before that a queued run parks questions.
    write_started: bool = False
    #: A parked ``ask_human`` question: once set, no tool runs and no request is sent; every role
    #: on the stack finishes ``needs_clarification``.
    park_question: str | None = None


def waiting_question(state: RunState) -> AskedQuestion | None:
    """The question the run's live chain waits on (the leaf's ``ask_human``), if any."""
    for frame in reversed(state.frames):
        if frame.pending is not None and frame.pending.asking is not None:
            return frame.pending.asking
    return None
