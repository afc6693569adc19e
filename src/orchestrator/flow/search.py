"""Search over one run: a compact per-event text index, queries over it, and the run's landmarks.

``index_event`` folds one log event into a ``SearchState`` — the event's searchable fields (role and
tool names, the outcome note, tool arguments and results, tasks, summaries, questions, answers,
interrupt messages and, where the log level kept it, the model's reply), each capped at
``FIELD_CHARS`` characters. ``search`` scans it for a ``Query``; ``landmarks`` lists the events a user
jumps between (problems, questions, interrupts, loop checks); ``locate`` names the event behind an
operation. Each answer is tied to the flow model's operation ids through the flow state's per-operation
detail index (``FlowState.details``), passed in, never held.

Query language (``parse_query``): whitespace-separated words; ``role:<name>``, ``tool:<name>`` and
``is:<category>`` (``problem``/``error``, ``warn``, ``fail``, ``question``, ``interrupt``, ``loop``)
are filters, every other word is text; the text words, joined by single spaces, are matched as one
case-insensitive substring. One event gives at most one hit (its first matching field, in the order
``role``, ``tool``, ``note``, then its text fields).

Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import msgspec

from orchestrator import vocabulary as names
from orchestrator.flow.outcome import classify_card, classify_tool_result

__all__ = [
    "CATEGORIES",
    "DEFAULT_LIMIT",
    "FIELD_CHARS",
    "MAX_LIMIT",
    "MAX_QUERY",
    "SNIPPET_CHARS",
    "Hit",
    "Landmark",
    "Located",
    "Query",
    "QueryError",
    "SearchPage",
    "SearchState",
    "index_event",
    "landmarks",
    "locate",
    "parse_query",
    "search",
    "snippet",
]

#: Characters of one field kept for search (a 2 MB file read is searched in its first 16 KB).
FIELD_CHARS = 16_384
#: The longest query text accepted (so a snippet can always hold it with some context).
MAX_QUERY = 120
#: A snippet's bound, ellipses included.
SNIPPET_CHARS = 160
DEFAULT_LIMIT = 200
MAX_LIMIT = 1000

Category = Literal["fail", "warn", "question", "interrupt", "loop"]
#: ``is:`` values → the landmark categories they select (``problem`` and ``error`` are both severities).
CATEGORIES: dict[str, frozenset[str]] = {
    "problem": frozenset({"fail", "warn"}),
    "error": frozenset({"fail", "warn"}),
    "fail": frozenset({"fail"}),
    "warn": frozenset({"warn"}),
    "question": frozenset({"question"}),
    "interrupt": frozenset({"interrupt", "loop"}),
    "loop": frozenset({"loop"}),
}

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_FILTER = re.compile(r"(role|tool|is):(\S+)", re.IGNORECASE)
_OPERATION = re.compile(r"op-([1-9][0-9]{0,8})")

Field = tuple[str, str, str]  # (field name, text, lowered text)


class Entry:
    """One indexed event."""

    __slots__ = ("category", "fields", "index", "instance", "kind", "note", "role", "severity", "tool")

    def __init__(self, index: int, kind: str, role: str | None, instance: str | None, tool: str | None) -> None:
        self.index = index
        self.kind = kind
        self.role = role
        self.instance = instance
        self.tool = tool
        self.severity: Literal["warn", "fail"] | None = None
        self.note: str | None = None
        self.category: Category | None = None
        self.fields: list[Field] = []

    def add(self, name: str, value: Any) -> None:
        if isinstance(value, str) and value:
            text = value[:FIELD_CHARS]
            self.fields.append((name, text, text.lower()))


class SearchState:
    """The index: every searchable event in log order, plus each operation's source event index."""

    def __init__(self) -> None:
        #: events folded so far (the next event's log index)
        self.events = 0
        self.entries: list[Entry] = []
        self.positions: array[int] = array("q")  # entries[i].index, for bisecting by log index
        #: per operation position, the log index of its source event (synced from ``FlowState.details``)
        self.op_events: array[int] = array("q")
        #: ask_human id → (role, instance), so an answer is found in the asker's transcript
        self.askers: dict[str, tuple[str | None, str | None]] = {}

    def sync(self, details: Sequence[int]) -> None:
        """Catch up with the flow state's per-operation source indices (append-only)."""
        for position in range(len(self.op_events), len(details)):
            self.op_events.append(details[position])


class Query(msgspec.Struct, frozen=True):
    text: str = ""
    role: str | None = None
    tool: str | None = None
    categories: frozenset[str] | None = None


class QueryError(ValueError):
    """A query the language does not accept (the HTTP layer answers 400 naming ``q``)."""


class _Wire(msgspec.Struct, kw_only=True, rename="camel", frozen=True):
    """camelCase; nulls kept."""


class Hit(_Wire):
    #: the operation the event made (a call or return), else the newest one before it (an interrupt: the
    #: first one after it, its handler's call); ``null`` when there is none
    operation_id: str | None
    log_index: int
    instance_id: str | None
    role: str | None
    tool: str | None
    #: the event's type (``tool_call``, ``tool_result``, ``role_finished`` …)
    kind: str
    severity: Literal["warn", "fail"] | None
    field: str
    snippet: str


class SearchPage(_Wire):
    query: str
    hits: list[Hit]
    #: the ``after`` cursor of the next page (the last hit's log index), ``null`` on the last page
    next_after: int | None


class Landmark(_Wire):
    operation_id: str | None
    log_index: int
    instance_id: str | None
    role: str | None
    tool: str | None
    #: ``fail`` / ``warn`` (a problem result or card), ``question``, ``interrupt``, ``loop`` (a loop check)
    category: Category
    note: str | None


class Located(_Wire):
    operation_id: str
    log_index: int
    instance_id: str | None
    role: str | None
    tool: str | None
    kind: str | None


# --- folding ------------------------------------------------------------------------------------------


def _str(payload: Mapping[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) and value else None


def _leaves(value: Any, prefix: str = "", depth: int = 0) -> Iterator[str]:
    """``key: value`` lines of a decoded JSON value's scalar leaves (strings as they are, unescaped)."""
    if depth > 12:
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _leaves(item, f"{prefix}{key}." if prefix or depth else f"{key}.", depth + 1)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item, prefix, depth + 1)
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        yield f"{prefix.rstrip('.')}: {value}" if prefix else str(value)


def _flatten(value: Any) -> str:
    lines: list[str] = []
    size = 0
    for line in _leaves(value):
        lines.append(line)
        size += len(line) + 1
        if size >= FIELD_CHARS:
            break
    return "\n".join(lines)


def _arguments(raw: Any) -> str | None:
    if isinstance(raw, str):
        try:
            return _flatten(json.loads(raw)) or raw
        except (ValueError, RecursionError):
            return raw
    return _flatten(raw) if raw is not None else None


def _entry(state: SearchState, kind: str, p: Mapping[str, Any], index: int) -> Entry | None:
    role, instance, tool = _str(p, "role"), _str(p, "roleId"), _str(p, "tool")
    entry = Entry(index, kind, role, instance, None)
    if kind in (names.ROLE_START, names.ROLE_FINISHED):
        entry.add("role", role)
        if kind == names.ROLE_START:
            entry.add("task", p.get("task"))
        else:
            verdict = classify_card(p.get("status"), p.get("error"))
            if not verdict.ok:
                entry.severity, entry.note, entry.category = verdict.severity, verdict.note, verdict.severity  # type: ignore[assignment]
            entry.add("note", entry.note)
            entry.add("summary", p.get("summary"))
            error = p.get("error")
            if isinstance(error, Mapping):
                entry.add("error", error.get("message"))
    elif kind in (names.TOOL_CALL, names.TOOL_RESULT):
        if tool is None:
            return None
        entry.tool = tool
        entry.add("tool", tool)
        if kind == names.TOOL_CALL:
            entry.add("arguments", _arguments(p.get("arguments")))
        else:
            verdict = classify_tool_result(p)
            if not verdict.ok:
                entry.severity, entry.note, entry.category = verdict.severity, verdict.note, verdict.severity  # type: ignore[assignment]
            entry.add("note", entry.note)
            result = p.get("result")
            if isinstance(result, Mapping):
                entry.add("result", _flatten({k: v for k, v in result.items() if k != "kind"}))
    elif kind == names.ASK_HUMAN:
        entry.category = "question"
        entry.add("question", p.get("question"))
        entry.add("context", p.get("context"))
        question_id = _str(p, "id")
        if question_id is not None:
            state.askers[question_id] = (role, instance)
    elif kind == names.HUMAN_ANSWER:
        question_id = _str(p, "id")
        entry.role, entry.instance = state.askers.get(question_id or "", (None, None))
        entry.add("answer", p.get("answer"))
    elif kind == names.INTERRUPT:
        trigger = _str(p, "trigger")
        entry.category = "loop" if trigger == "loop_check" else "interrupt"
        entry.role, entry.instance = _str(p, "handler"), None
        entry.note = trigger
        entry.add("note", trigger)
        entry.add("message", p.get("message"))
    elif kind == names.INTERRUPT_RESOLVED:
        entry.role, entry.instance = _str(p, "handler"), None
        entry.add("note", _str(p, "action"))
        entry.add("summary", p.get("summary"))
    elif kind in (names.OBSERVE, names.TERMINATE):
        entry.instance = None  # the payload names the observed instance, not the actor
        entry.add("details", p.get("details"))
    elif kind == names.LLM_CALL:
        received = p.get("received")
        if isinstance(received, Mapping):
            entry.add("reply", received.get("content"))
            entry.add("reasoning", received.get("reasoning"))
    elif kind in (names.PLAN_MODIFICATION, names.OPERATOR_NOTICE, names.INQUIRY_DROPPED):
        entry.add("message", p.get("message"))
    elif kind in _FAILURES:
        entry.tool = tool
        entry.severity, entry.note, entry.category = "fail", kind, "fail"
        entry.add("note", kind)
        entry.add("message", p.get("message") or p.get("error"))
    else:
        return None
    return entry if entry.fields or entry.category is not None else None


_FAILURES = frozenset(
    {
        names.LLM_UNAVAILABLE,
        names.CONTEXT_BUDGET_EXCEEDED,
        names.UNKNOWN_TOOL,
        names.INVALID_TOOL_CALL,
        names.DEPTH_EXCEEDED,
        names.ROLE_NOT_FOUND,
    }
)


def index_event(state: SearchState, event: Mapping[str, Any]) -> SearchState:
    """Fold one log event (a ``{timestamp, type, payload}`` dict) into ``state``; returns ``state``.
    Malformed events are skipped (they still count for log indexes)."""
    index = state.events
    state.events += 1
    if not isinstance(event, Mapping):
        return state
    kind, payload = event.get("type"), event.get("payload")
    if not isinstance(kind, str) or not isinstance(payload, Mapping):
        return state
    entry = _entry(state, kind, payload, index)
    if entry is not None:
        state.entries.append(entry)
        state.positions.append(index)
    return state


# --- queries ------------------------------------------------------------------------------------------


def parse_query(q: str) -> Query:
    """The ``Query`` a ``q`` string says (see the module docstring); ``QueryError`` when it is too long
    or names an unknown ``is:`` category."""
    words = _CONTROL.sub(" ", q).split()
    role = tool = None
    categories: frozenset[str] | None = None
    text: list[str] = []
    for word in words:
        match = _FILTER.fullmatch(word)
        if match is None:
            text.append(word)
            continue
        key, value = match.group(1).lower(), match.group(2)
        if key == "role":
            role = value
        elif key == "tool":
            tool = value
        else:
            chosen = CATEGORIES.get(value.lower())
            if chosen is None:
                raise QueryError(f"unknown is:{value}")
            categories = chosen if categories is None else categories & chosen
    joined = " ".join(text)
    if len(joined) > MAX_QUERY:
        raise QueryError("query too long")
    return Query(text=joined.lower(), role=role, tool=tool, categories=categories)


def snippet(text: str, lowered: str, at: int, length: int) -> str:
    """One line of at most ``SNIPPET_CHARS`` around ``text[at:at+length]``: control characters become
    spaces; ``…`` marks a cut end."""
    source = text if len(text) == len(lowered) else lowered  # a case change that moved offsets
    room = max(0, SNIPPET_CHARS - length - 2)
    start = max(0, at - room // 2)
    end = min(len(source), at + length + (room - (at - start)))
    start = max(0, min(start, end - length - room))
    line = _CONTROL.sub(" ", source[start:end]).strip()  # the query text never starts or ends in a space
    return ("…" if start > 0 else "") + line + ("…" if end < len(source) else "")


def _operation(state: SearchState, entry: Entry) -> str | None:
    ops = state.op_events
    if entry.kind == names.INTERRUPT:
        position = bisect_left(ops, entry.index)
        return f"op-{position + 1}" if position < len(ops) else None
    position = bisect_right(ops, entry.index) - 1
    return f"op-{position + 1}" if position >= 0 else None


def _selected(entry: Entry, query: Query) -> bool:
    if query.role is not None and entry.role != query.role:
        return False
    if query.tool is not None and entry.tool != query.tool:
        return False
    return query.categories is None or entry.category in query.categories


def _match(entry: Entry, text: str) -> tuple[str, str] | None:
    """``(field, snippet)`` of the entry's first field holding ``text``; for a filter-only query (``text``
    is "") its note, else its first field."""
    if not text and entry.note:
        return "note", snippet(entry.note, entry.note, 0, 0)
    for name, value, lowered in entry.fields:
        at = lowered.find(text)
        if at >= 0:
            return name, snippet(value, lowered, at, len(text))
    return None


def search(state: SearchState, query: Query, *, limit: int = DEFAULT_LIMIT, after: int = -1) -> SearchPage:
    """The hits of ``query`` in log order, from the first event after log index ``after``, at most
    ``limit`` (1 … ``MAX_LIMIT``) of them. Paging with ``next_after`` concatenates to the whole answer."""
    limit = max(1, min(limit, MAX_LIMIT))
    hits: list[Hit] = []
    next_after: int | None = None
    for i in range(bisect_right(state.positions, after), len(state.entries)):
        entry = state.entries[i]
        if not _selected(entry, query):
            continue
        found = _match(entry, query.text)
        if found is None:
            if query.text or entry.category is None:
                continue
            found = ("note", entry.note or entry.kind)  # a filter-only query on an event with no text
        if len(hits) == limit:
            next_after = hits[-1].log_index
            break
        hits.append(
            Hit(
                operation_id=_operation(state, entry),
                log_index=entry.index,
                instance_id=entry.instance,
                role=entry.role,
                tool=entry.tool,
                kind=entry.kind,
                severity=entry.severity,
                field=found[0],
                snippet=found[1],
            )
        )
    return SearchPage(query=query.text, hits=hits, next_after=next_after)


def landmarks(state: SearchState) -> list[Landmark]:
    """Every problem, question, interrupt and loop check of the run, in log order."""
    return [
        Landmark(
            operation_id=_operation(state, entry),
            log_index=entry.index,
            instance_id=entry.instance,
            role=entry.role,
            tool=entry.tool,
            category=entry.category,
            note=entry.note,
        )
        for entry in state.entries
        if entry.category is not None
    ]


def locate(state: SearchState, operation_id: str) -> Located:
    """The source event of an operation (``op-N``): its log index and whose transcript holds it.
    ``KeyError`` when the id names no operation of the synced flow state."""
    match = _OPERATION.fullmatch(operation_id)
    position = int(match.group(1)) - 1 if match else -1
    if not 0 <= position < len(state.op_events):
        raise KeyError(operation_id)
    index = state.op_events[position]
    at = bisect_left(state.positions, index)
    entry = state.entries[at] if at < len(state.entries) and state.positions[at] == index else None
    return Located(
        operation_id=operation_id,
        log_index=index,
        instance_id=entry.instance if entry else None,
        role=entry.role if entry else None,
        tool=entry.tool if entry else None,
        kind=entry.kind if entry else None,
    )
