"""Per role instance, the prompt size over time against the effective context budget (the context track).

``ContextState`` is a fold (``fold_context(state, event)``) kept beside the call tree's by the run index;
``context_tracks`` finalizes it into wire Structs without touching it. Per instance (keyed by ``roleId``;
events without one go to the newest open instance of that role):

- *samples*: one per ``llm_call`` with usage — ``[offsetMs, promptTokens, cachedPromptTokens]``, the
  offset from the run's first event;
- *marks*: ``compacted`` (a ``context_compacted`` backstop, or an ``interrupt_resolved`` whose context
  handler compacted the instance), ``pressure`` (``context_pressure``) and ``rejected``
  (``context_budget_exceeded``), each with the tokens its payload names;
- *budget*: the ``effectiveBudget`` the engine logged for the instance (its ``context_pressure``) when it
  logged one (``logged``); otherwise ``min(contextWindow − maxTokens, learned ceiling)``, as the engine's
  ``engine/context.py:effective_budget`` computes it, with the learned ceiling folded from the run's
  ``context_budget_exceeded`` reports up to the instance's last event and the static part read off the
  log when another instance's pressure event logged it before any ceiling was learned (``run``), else
  from the settings the caller passes (``settings``).

A long instance is downsampled to at most ``limit`` samples: the first, the last and, per bucket of
consecutive samples, its lowest and highest (in time order), so peaks and the drops after a compaction
survive. Marks are never dropped. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from orchestrator import vocabulary as names
from orchestrator.flow.foldstate import epoch

__all__ = [
    "DEFAULT_SAMPLES",
    "MIN_SAMPLES",
    "ContextMark",
    "ContextState",
    "ContextTrack",
    "ContextTracks",
    "context_tracks",
    "downsample",
    "fold_context",
]

#: Samples per instance a track carries by default.
DEFAULT_SAMPLES = 200
#: The fewest a downsampled track keeps: first, last, the lowest and the highest.
MIN_SAMPLES = 4

MarkKind = Literal["compacted", "pressure", "rejected"]
BudgetSource = Literal["logged", "run", "settings", "none"]
_CONTEXT_TRIGGERS = frozenset({names.CONTEXT_BUDGET_EXCEEDED, names.CONTEXT_PRESSURE})

Sample = tuple[int, int, int]


class _Track:
    __slots__ = ("ceiling", "logged_budget", "marks", "role", "samples")

    def __init__(self, role: str) -> None:
        self.role = role
        self.samples: list[Sample] = []
        self.marks: list[ContextMark] = []
        self.logged_budget: int | None = None
        self.ceiling: int | None = None


class ContextState:
    """The fold's state: every instance's samples and marks, the run's learned ceiling."""

    def __init__(self) -> None:
        self.tracks: dict[str, _Track] = {}
        self.open_by_role: dict[str, list[str]] = {}
        self.ceiling: int | None = None
        #: ``contextWindow − maxTokens`` as a pressure event logged it (before any ceiling was learned)
        self.static: int | None = None
        self.first: float | None = None
        self.last: float | None = None

    def owner(self, p: Mapping[str, Any]) -> _Track | None:
        rid = p.get("roleId")
        if isinstance(rid, str) and rid in self.tracks:
            return self.tracks[rid]
        stack = self.open_by_role.get(str(p.get("role")))
        return self.tracks[stack[-1]] if stack else None

    def offset(self, t: float | None) -> int:
        if t is None or self.first is None:
            return 0
        return max(0, round((t - self.first) * 1000))


class ContextMark(msgspec.Struct, kw_only=True, rename="camel", frozen=True):
    offset_ms: int
    kind: MarkKind
    #: promptTokens of a pressure or rejection, the estimated prompt after a compaction (None: not logged)
    tokens: int | None
    #: a few words for the tooltip ("dropped 12 messages", "by context_handler")
    detail: str | None = None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _role_start(s: ContextState, p: Mapping[str, Any]) -> None:
    role, rid = p.get("role"), p.get("roleId")
    if not isinstance(role, str):
        return
    if not isinstance(rid, str):
        rid = f"{role}#{len(s.tracks) + 1}"  # the call tree's numbering of an instance without an id
    if rid in s.tracks:
        return
    s.tracks[rid] = _Track(role)
    s.open_by_role.setdefault(role, []).append(rid)


def _role_finished(s: ContextState, p: Mapping[str, Any]) -> None:
    rid = p.get("roleId")
    stack = s.open_by_role.get(str(p.get("role")), [])
    if not isinstance(rid, str) or rid not in stack:
        rid = stack[-1] if stack else None
    if rid is not None:
        stack.remove(rid)


def _mark(track: _Track, offset: int, kind: MarkKind, tokens: int | None, detail: str | None = None) -> None:
    track.marks.append(ContextMark(offset_ms=offset, kind=kind, tokens=tokens, detail=detail))


def _context_event(s: ContextState, kind: str, p: Mapping[str, Any], offset: int) -> None:
    if kind == names.INTERRUPT_RESOLVED:
        target = s.tracks.get(str(p.get("target")))
        if target is not None and p.get("trigger") in _CONTEXT_TRIGGERS and p.get("action") == "compacted":
            _mark(target, offset, "compacted", None, f"by {p.get('handler')}")
        return
    if kind == names.CONTEXT_BUDGET_EXCEEDED:
        reported = _int(p.get("promptTokens"))
        if reported:
            s.ceiling = reported if s.ceiling is None else min(s.ceiling, reported)
    track = s.owner(p)
    if track is None:
        return
    track.ceiling = s.ceiling
    if kind == names.LLM_CALL:
        usage = p.get("usage")
        prompt = _int(usage.get("promptTokens")) if isinstance(usage, Mapping) else None
        if prompt is not None:
            cached = _int(usage.get("cachedPromptTokens")) if isinstance(usage, Mapping) else None
            track.samples.append((offset, prompt, cached or 0))
    elif kind == names.CONTEXT_PRESSURE:
        budget = _int(p.get("effectiveBudget"))
        track.logged_budget = budget if budget else track.logged_budget
        if budget and s.ceiling is None:
            s.static = budget
        _mark(track, offset, "pressure", _int(p.get("promptTokens")))
    elif kind == names.CONTEXT_COMPACTED:
        dropped = _int(p.get("droppedMessages")) or 0
        _mark(track, offset, "compacted", _int(p.get("estimatedPromptTokens")), f"dropped {dropped} messages")
    else:
        _mark(track, offset, "rejected", _int(p.get("promptTokens")))


_CONTEXT_KINDS = frozenset(
    {
        names.LLM_CALL,
        names.CONTEXT_PRESSURE,
        names.CONTEXT_COMPACTED,
        names.CONTEXT_BUDGET_EXCEEDED,
        names.INTERRUPT_RESOLVED,
    }
)


def fold_context(s: ContextState, event: Mapping[str, Any]) -> None:
    """Fold one ``read_events`` dict; malformed events are skipped."""
    at = event.get("timestamp")
    p = event.get("payload")
    if not isinstance(at, str) or not isinstance(p, Mapping):
        return
    t = epoch(at)
    if t is not None:
        s.first = t if s.first is None else s.first
        s.last = t
    kind = event.get("type")
    if kind == names.ROLE_START:
        _role_start(s, p)
    elif kind == names.ROLE_FINISHED:
        _role_finished(s, p)
    elif kind in _CONTEXT_KINDS:
        _context_event(s, str(kind), p, s.offset(t))


# --- wire forms ----------------------------------------------------------------------------------


class ContextTrack(msgspec.Struct, kw_only=True, rename="camel", frozen=True):
    instance_id: str
    role: str
    #: the effective prompt budget (None when neither the log nor the settings tell)
    budget: int | None
    #: ``logged``: the engine's own ``effectiveBudget``; ``settings``: window − maxTokens, learned ceiling
    budget_source: BudgetSource
    #: the largest ``promptTokens`` of the instance (0 before its first answer)
    peak_tokens: int
    #: ``peak_tokens`` as a whole percentage of ``budget`` (None without a budget)
    peak_percent: int | None
    #: model answers with usage (the samples before downsampling)
    turns: int
    #: ``[offsetMs, promptTokens, cachedPromptTokens]`` in time order, at most the limit
    samples: list[Sample]
    marks: list[ContextMark]


class ContextTracks(msgspec.Struct, kw_only=True, rename="camel", frozen=True):
    #: the run's first event (epoch ms); every ``offsetMs`` counts from it
    started_at_ms: int
    #: the engine's pressure threshold (a fraction of the budget), as the settings say
    threshold: float | None
    tracks: list[ContextTrack]


def downsample(samples: list[Sample], limit: int) -> list[Sample]:
    """At most ``limit`` samples (``MIN_SAMPLES`` at least) in time order: first, last, and each bucket's
    lowest and highest."""
    limit = max(MIN_SAMPLES, limit)
    if len(samples) <= limit:
        return list(samples)
    middle = samples[1:-1]
    buckets = (limit - 2) // 2
    kept: list[Sample] = [samples[0]]
    for b in range(buckets):
        chunk = middle[b * len(middle) // buckets : (b + 1) * len(middle) // buckets]
        if not chunk:
            continue
        low = min(range(len(chunk)), key=lambda k: chunk[k][1])
        high = max(range(len(chunk)), key=lambda k: chunk[k][1])
        kept.extend(chunk[k] for k in sorted({low, high}))
    kept.append(samples[-1])
    return kept


def _budget(track: _Track, logged: int | None, settings: int | None) -> tuple[int | None, BudgetSource]:
    if track.logged_budget is not None:
        return track.logged_budget, "logged"
    static, source = (logged, "run") if logged is not None else (settings, "settings")
    if static is None:
        return None, "none"
    ceiling = track.ceiling
    return max(1, static if ceiling is None else min(static, ceiling)), source


def context_tracks(
    s: ContextState, *, static_budget: int | None, threshold: float | None, limit: int = DEFAULT_SAMPLES
) -> ContextTracks:
    """Every instance's track in start order; ``static_budget`` is the settings' ``contextWindow −
    maxTokens`` (used when the log does not tell)."""
    out = []
    for rid, track in s.tracks.items():
        budget, source = _budget(track, s.static, static_budget)
        peak = max((sample[1] for sample in track.samples), default=0)
        out.append(
            ContextTrack(
                instance_id=rid,
                role=track.role,
                budget=budget,
                budget_source=source,
                peak_tokens=peak,
                peak_percent=round(100 * peak / budget) if budget else None,
                turns=len(track.samples),
                samples=downsample(track.samples, limit),
                marks=list(track.marks),
            )
        )
    return ContextTracks(
        started_at_ms=round(s.first * 1000) if s.first is not None else 0,
        threshold=threshold,
        tracks=out,
    )
