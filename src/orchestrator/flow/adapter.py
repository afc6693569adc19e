"""Log events → ``InteractionModel``: a one-pass fold plus a cheap finalization.

``build_model`` is the pure entry point. It is ``finalize(fold(fold(FlowState(), e0), e1) ..., ...)``,
so a caller holding the state (the service's ``RunIndex``) can fold only the events appended since its last look.
``fold`` mutates and returns the state it is given; ``finalize`` never mutates it. Malformed events
(wrong payload types, missing fields) are skipped, never fatal: the log is evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, cast

from orchestrator import vocabulary as names
from orchestrator.flow.foldstate import CallRecord, FlowState, Frame, ReturnRecord, epoch
from orchestrator.flow.model import (
    ACTIVE_STATUSES,
    MAIN_STACK,
    InteractionModel,
    Operation,
    Outcome,
    ParticipantKind,
    StackRecord,
    run_status,
)
from orchestrator.flow.outcome import OK, Verdict, classify_card, classify_tool_result
from orchestrator.flow.subject import call_subject, result_subject, text_subject

__all__ = ["CONTROL_TOOLS", "build_model", "finalize", "fold"]

#: Tools whose events the adapter skips: the role_start/role_finished pair is the ``agent`` call, the
#: ask_human/human_answer pair is the question, and role_finished is the ``finish``.
CONTROL_TOOLS = frozenset({"agent", "ask_human", "finish"})

Payload = Mapping[str, Any]


def _str(payload: Payload, key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --- helpers over the state --------------------------------------------------------------------------


def _source(frame: Frame) -> str:
    """Who acts on ``frame`` now: its innermost open callee, else its root."""
    return frame.open[-1].destination if frame.open else frame.root


def _activity(state: FlowState, frame: Frame, at: str) -> None:
    """A new call or return: it supersedes the frame's lingering return and every resolved stack's."""
    state.supersede(frame.lingering, at)
    for record in state.pending_resolved:
        state.supersede(record, at)
    state.pending_resolved.clear()


def _mark_delegation(frame: Frame, at: str) -> None:
    """A nested call ends the innermost open call's transit (the first one counts)."""
    if frame.open and frame.open[-1].delegated_at is None:
        frame.open[-1].delegated_at = at


def _call(
    state: FlowState,
    at: str,
    dest: str,
    dest_role: str,
    dest_kind: ParticipantKind,
    detail: int,
    question_id: str | None = None,
    subject: str | None = None,
) -> CallRecord:
    frame = state.top
    _mark_delegation(frame, at)
    _activity(state, frame, at)
    record = CallRecord(
        len(state.operations), frame.id, _source(frame), dest, dest_role, dest_kind, at, question_id, subject
    )
    state.add_live(record, frame, detail)
    frame.open.append(record)
    return record


def _close(
    state: FlowState,
    frame: Frame,
    record: CallRecord,
    outcome: Outcome,
    at: str,
    detail: int,
    verdict: Verdict = OK,
    subject: str | None = None,
) -> None:
    """Pop ``record`` and any deeper (abandoned: settled, no return) calls, then add its return."""
    index = frame.open.index(record)
    for abandoned in frame.open[index + 1 :]:
        state.freeze_call(abandoned, at)
    del frame.open[index:]
    _activity(state, frame, at)
    caller = state.roles.get(record.source, "")
    returned = ReturnRecord(
        len(state.operations), frame.id, record.destination, record.source, caller, outcome, at, verdict, subject
    )
    state.add_live(returned, frame, detail)
    state.freeze_call(record, at)
    frame.lingering = returned


def _drop_frame(state: FlowState, at: str, *, settle: bool) -> Frame:
    """Pop the top stack, abandoning whatever is still open on it (and settling its last return)."""
    frame = state.frames.pop()
    frame.pushed = False
    for record in frame.open:
        state.freeze_call(record, at)
    frame.open.clear()
    if settle:
        state.supersede(frame.lingering, at)
    return frame


def _role_call(state: FlowState, payload: Payload, frames: Iterable[Frame]) -> CallRecord | None:
    """The open role call an event names: by ``roleId`` when the adapter knows it, else the innermost
    open call of that role name (searching ``frames`` in order, each innermost first)."""
    instance = _str(payload, "roleId")
    frames = list(frames)
    if instance is not None and instance in state.by_instance:
        record = state.by_instance[instance]
        for frame in frames:
            if record.returned_at is None and record in frame.open:
                return record
        return None
    role = _str(payload, "role")
    if role is None:
        return None
    for frame in frames:
        for record in reversed(frame.open):
            if record.dest_kind == "role" and record.dest_role == role:
                return record
    return None


def _paused_target(state: FlowState, payload: Payload) -> CallRecord | None:
    """The newest open call of the named role in a paused stack (innermost paused stack first)."""
    return _role_call(state, payload, reversed(state.frames[:-1]))


# --- event rules --------------------------------------------------------------------------------------


def _role_start(state: FlowState, p: Payload, at: str, index: int) -> None:
    role, instance = _str(p, "role"), _str(p, "roleId")
    if role is None:
        return
    known = state.by_instance.get(instance) if instance is not None else None
    if known is not None and known.returned_at is None:
        return  # a start duplicated across a restart boundary: the instance is already open
    detail = state.inquiry_detail if state.inquiry_detail is not None else index
    state.inquiry_detail = None
    pid = state.add_participant(f"role:{role}:{state.next_number('role:' + role)}", role, "role", instance)
    record = _call(state, at, pid, role, "role", detail, subject=text_subject(p.get("task")))
    if instance is not None:
        state.by_instance[instance] = record


def _role_finished(state: FlowState, p: Payload, at: str, index: int) -> None:
    record = _role_call(state, p, [state.top])
    if record is None:
        # A known instance finishing below the top: the stacks above it were cut short with it.
        record = _role_call(state, p, state.frames[:-1]) if _str(p, "roleId") in state.by_instance else None
        if record is None:
            return
        while record not in state.top.open:
            _drop_frame(state, at, settle=True)
    frame = state.top
    verdict = classify_card(p.get("status"), p.get("error"))
    subject = text_subject(p.get("summary"))
    _close(state, frame, record, "success" if verdict.ok else "error", at, index, verdict, subject)
    # A resolved interrupt stack pops; its final return lingers until the next call or return.
    while len(state.frames) > 1 and not state.top.open and state.top.op_count:
        popped = _drop_frame(state, at, settle=False)
        if popped.lingering is not None and popped.lingering.superseded_at is None:
            state.pending_resolved.append(popped.lingering)


def _tool_call(state: FlowState, p: Payload, at: str, index: int) -> None:
    tool = _str(p, "tool")
    if tool is None or tool in CONTROL_TOOLS or not state.top.open:
        return
    pid = state.add_participant(f"tool:{tool}:{state.next_number('tool:' + tool)}", tool, "tool")
    _call(state, at, pid, tool, "tool", index, subject=call_subject(tool, p.get("arguments")))


def _tool_result(state: FlowState, p: Payload, at: str, index: int) -> None:
    tool = _str(p, "tool")
    if tool is None or tool in CONTROL_TOOLS:
        return
    frame = state.top
    for record in reversed(frame.open):
        if record.dest_kind == "tool" and record.dest_role == tool:
            verdict = classify_tool_result(p)
            outcome: Outcome = "success" if verdict.ok else "error"
            _close(state, frame, record, outcome, at, index, verdict, result_subject(p))
            return


def _ask_human(state: FlowState, p: Payload, at: str, index: int) -> None:
    question_id, question = _str(p, "id"), _str(p, "question")
    if question_id is None or question is None or not state.top.open:
        return
    pid = state.add_participant(f"human:answerer:{state.next_number('answerer')}", "human", "human")
    _call(state, at, pid, "human", "human", index, question_id, text_subject(question))


def _human_answer(state: FlowState, p: Payload, at: str, index: int) -> None:
    question_id = _str(p, "id")
    if question_id is None:
        return
    frame = state.top
    for record in reversed(frame.open):
        if record.question_id == question_id:
            _close(state, frame, record, "success", at, index, subject=text_subject(p.get("answer")))
            return


def _interrupt(state: FlowState, p: Payload, at: str, index: int) -> None:
    n = state.next_number("interrupt")
    stack_id = f"interrupt-{n}-stack"
    if p.get("trigger") == "inquiry":
        root = state.add_participant(f"human:asker:{state.next_number('asker')}", "human", "human")
        state.inquiry_detail = index if _str(p, "message") is not None else None
    else:
        root = state.add_participant(f"interrupt:{n}", "interrupt", "interrupt")
        state.inquiry_detail = None
    frame = Frame(stack_id, root)
    state.frames.append(frame)
    state.stacks[stack_id] = frame
    state.stack_records.append(StackRecord(id=stack_id, root=root))
    state.unresolved.append(frame)


def _interrupt_resolved(state: FlowState, p: Payload, at: str, index: int) -> None:
    """Pops the matching interrupt stack if its handler never closed it (e.g. the handler role was
    missing, so no ``role_start`` followed the ``interrupt``)."""
    if not state.unresolved:
        return
    frame = state.unresolved.pop()
    while frame.pushed and len(state.frames) > 1:
        _drop_frame(state, at, settle=True)
    state.inquiry_detail = None


def _reference(
    state: FlowState, p: Payload, at: str, index: int, kind: Literal["observe", "terminate"]
) -> CallRecord | None:
    target = _paused_target(state, p)
    if target is None:
        return None
    frame = state.top
    operation = Operation(
        id=f"op-{len(state.operations) + 1}",
        kind=kind,
        stack=frame.id,
        source=_source(frame),
        destination=target.destination,
        started_at=at,
        settled_at=at,
        lifecycle="settled",
        outcome=None,
        metrics=None,
        subject=text_subject(p.get("details")),
    )
    state.add_frozen(operation, frame, index)
    return target


def _observe(state: FlowState, p: Payload, at: str, index: int) -> None:
    _reference(state, p, at, index, "observe")


def _terminate(state: FlowState, p: Payload, at: str, index: int) -> None:
    target = _reference(state, p, at, index, "terminate")
    if target is None:
        return
    state.freeze_call(target, at)
    for frame in state.frames:
        if target in frame.open:
            frame.open.remove(target)
            # The node is gone at once, so a response leg still travelling to it settles with it.
            if frame.lingering is not None and frame.lingering.destination == target.destination:
                state.supersede(frame.lingering, at)


def _llm_call_start(state: FlowState, p: Payload, at: str, index: int) -> None:
    record = _role_call(state, p, [state.top])
    if record is not None and record.turn_started_at is None:
        record.turn_started_at = at


def _llm_call(state: FlowState, p: Payload, at: str, index: int) -> None:
    frame = state.top
    lingering = frame.lingering
    if lingering is not None and lingering.caller_role == p.get("role"):
        state.supersede(lingering, at)
    usage = p.get("usage")
    if not isinstance(usage, dict):
        return
    total = _int(usage.get("totalTokens"))
    if total is None:
        prompt, completion = _int(usage.get("promptTokens")), _int(usage.get("completionTokens"))
        if prompt is None or completion is None:
            return
        total = prompt + completion
    record = _role_call(state, p, [frame])
    if record is not None:
        record.tokens += total
        record.cached += _int(usage.get("cachedPromptTokens")) or 0


def _run_resumed(state: FlowState, p: Payload, at: str, index: int) -> None:
    """A restart replays the interrupted turn: handler stacks and mid-turn tool or question calls of
    the previous process are abandoned; the role chain itself carries on."""
    while len(state.frames) > 1:
        _drop_frame(state, at, settle=True)
    state.unresolved.clear()
    state.inquiry_detail = None
    main = state.top
    while main.open and main.open[-1].dest_kind != "role":
        state.freeze_call(main.open.pop(), at)


_RULES: dict[str, Callable[[FlowState, Payload, str, int], None]] = {
    names.ROLE_START: _role_start,
    names.ROLE_FINISHED: _role_finished,
    names.TOOL_CALL: _tool_call,
    names.TOOL_RESULT: _tool_result,
    names.ASK_HUMAN: _ask_human,
    names.HUMAN_ANSWER: _human_answer,
    names.INTERRUPT: _interrupt,
    names.INTERRUPT_RESOLVED: _interrupt_resolved,
    names.OBSERVE: _observe,
    names.TERMINATE: _terminate,
    names.LLM_CALL_START: _llm_call_start,
    names.LLM_CALL: _llm_call,
    names.RUN_RESUMED: _run_resumed,
}


# --- the fold and its finalization -------------------------------------------------------------------


def fold(state: FlowState, event: Mapping[str, Any]) -> FlowState:
    """Apply one log event (a ``{timestamp, type, payload}`` dict) to ``state``; returns ``state``."""
    index = state.events
    state.events += 1
    if not isinstance(event, dict):
        return state
    kind, timestamp, payload = event.get("type"), event.get("timestamp"), event.get("payload")
    rule = _RULES.get(kind) if isinstance(kind, str) else None
    if rule is not None and isinstance(timestamp, str) and isinstance(payload, dict):
        rule(state, payload, timestamp, index)
    return state


def _invariant(state: FlowState, active: bool) -> tuple[str, str]:
    """The active stack and the active participant (see docs/visualization.md, "The invariant")."""
    top = state.top
    if top.id != MAIN_STACK and top.op_count == 0:
        stack = top  # a fresh preemption is active on arrival
    elif state.last_stack is None:
        stack = top
    else:
        candidate = state.stacks[state.last_stack]
        if candidate.pushed and candidate.open:
            stack = candidate
        else:  # a resolved stack yields to the innermost stack with open work
            stack = next((f for f in reversed(state.frames) if f.open), candidate)
    lingering = stack.lingering
    if active and lingering is not None and lingering.superseded_at is None:
        return stack.id, lingering.destination
    return stack.id, stack.open[-1].destination if stack.open else stack.root


def finalize(state: FlowState, meta_status: str | None, now: str, *, window: int | None = None) -> InteractionModel:
    """The model of the events folded so far, for a run whose meta says ``meta_status`` at ``now``.

    With ``window`` set and more operations than that, the model is windowed (see ``InteractionModel``):
    the newest ``window`` operations plus every older one still live, so the cost and size stay bounded
    however long the run grows. Costs one Struct per live operation plus the kept slice; ``state`` is not
    modified.
    """
    status = run_status(meta_status)
    active = status in ACTIVE_STATUSES
    now_epoch = epoch(now)
    total = len(state.operations)
    start = 0 if window is None or total <= window else total - window
    positions = sorted(p for p in state.live if p < start)
    positions.extend(range(start, total))
    operations: list[Operation] = []
    for position in positions:
        record = state.live.get(position)
        if record is None:
            operations.append(cast(Operation, state.operations[position]))
        elif isinstance(record, CallRecord):
            operations.append(record.operation(active, now, now_epoch))
        else:
            operations.append(record.operation(active))
    participants = state.participants
    if start:
        keep = {0}
        where = state.participant_positions
        for record in state.stack_records:
            keep.add(where.get(record.root, 0))
        for operation in operations:
            keep.add(where.get(operation.source, 0))
            keep.add(where.get(operation.destination, 0))
        participants = [participants[i] for i in sorted(keep)]
    active_stack, active_participant = _invariant(state, active)
    return InteractionModel(
        participants=list(participants),
        operations=operations,
        status=status,
        stacks=list(state.stack_records),
        active_stack=active_stack,
        active_participant=active_participant,
        operations_total=total,
        operations_omitted=total - len(operations),
        participants_omitted=len(state.participants) - len(participants),
    )


def build_model(events: Iterable[Mapping[str, Any]], *, meta_status: str | None, now: str) -> InteractionModel:
    """The run's ``InteractionModel`` from its whole log (pure)."""
    state = FlowState()
    for event in events:
        fold(state, event)
    return finalize(state, meta_status, now)
