"""The context track (``flow/contexttrack.py``): prompt tokens per instance over time against the effective
budget, compactions / pressure / rejections marked — against a plain fold of real engine logs, plus the
downsampling's properties."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.engine.harness import call, finish, run_task, turn
from tests.helpers import make_settings

from orchestrator.flow.contexttrack import ContextState, context_tracks, downsample, fold_context
from orchestrator.service.runindex import RunIndex

# Window 32768, maxTokens 4096 → the static budget 28672; the 0.8 threshold fires at 22938 tokens.
STATIC = 32768 - 4096
HIGH = {"promptTokens": 25000, "completionTokens": 10, "cachedPromptTokens": 2000}


def _t(event: dict[str, Any]) -> float:
    return datetime.fromisoformat(event["timestamp"]).timestamp()


def plain(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A deliberately plain re-derivation: every event names its instance (``roleId`` / ``target``)."""
    first = _t(events[0])
    out: dict[str, dict[str, Any]] = {}
    ceiling = None
    for e in events:
        p, kind, at = e["payload"], e["type"], max(0, round((_t(e) - first) * 1000))
        rid = p.get("roleId")
        if kind == "role_start":
            out[rid] = {"role": p["role"], "samples": [], "marks": [], "budget": None, "ceiling": None}
        elif kind == "llm_call":
            u = p["usage"]
            out[rid]["samples"].append((at, u["promptTokens"], u.get("cachedPromptTokens", 0)))
        elif kind == "context_pressure":
            out[rid]["marks"].append((at, "pressure", p["promptTokens"]))
            out[rid]["budget"] = p["effectiveBudget"]
        elif kind == "context_compacted":
            out[rid]["marks"].append((at, "compacted", p["estimatedPromptTokens"]))
        elif kind == "context_budget_exceeded":
            out[rid]["marks"].append((at, "rejected", p["promptTokens"]))
            ceiling = min(ceiling or p["promptTokens"], p["promptTokens"])
        if rid in out and kind != "role_start":
            out[rid]["ceiling"] = ceiling
    return out


async def test_the_context_tracks_agree_with_the_log(tmp_path: Path, sim_for) -> None:
    """Issue 18 (build: the context track): a leaf under pressure, a helper compacted after a rejection."""
    filler = "y" * 3000
    script = {
        "turns": [
            turn("lead", call("agent", role="leaf", task="big job")),
            turn("leaf", call("context_info"), usage=HIGH),
            turn("leaf", finish("handing off", status="error", error={"kind": "context_handoff", "message": "b"})),
            turn("lead", call("agent", role="helper", task="small job"), last="context_handoff"),
            turn("helper", call("run_shell", command=f"printf '{filler}'"), usage={"promptTokens": 9000}),
            turn("helper", call("run_shell", command="true"), usage={"promptTokens": 12000}),
            {"fail": {"contextExceeded": True, "promptTokens": 26000}},
            turn("helper", finish("compacted and done"), last="context window exceeded", usage={"promptTokens": 3000}),
            turn("lead", finish("all done"), last="compacted and done"),
        ]
    }
    async with sim_for(script) as sim:
        settings_ = make_settings(tmp_path, sim.base_url)
        outcome, events = await run_task(settings_, tmp_path)
    assert outcome.card.summary == "all done"
    expected = plain(events)
    index = RunIndex(outcome.run_dir)
    index.update()
    answer = context_tracks(index.context, static_budget=STATIC, threshold=0.8)
    assert answer.started_at_ms == round(_t(events[0]) * 1000)
    assert [t.instance_id for t in answer.tracks] == list(expected)
    for track in answer.tracks:
        want = expected[track.instance_id]
        assert track.samples == want["samples"]
        assert [(m.offset_ms, m.kind, m.tokens) for m in track.marks] == want["marks"]
        assert track.turns == len(want["samples"])
        assert track.peak_tokens == max((s[1] for s in want["samples"]), default=0)
        budget = want["budget"] or min(STATIC, want["ceiling"] or STATIC)
        assert track.budget == budget
        assert track.peak_percent == round(100 * track.peak_tokens / budget)
    _, leaf, helper = answer.tracks
    assert (leaf.budget_source, leaf.budget, leaf.peak_percent) == ("logged", STATIC, 87)
    assert [m.kind for m in leaf.marks] == ["pressure"]
    assert [m.kind for m in helper.marks] == ["rejected", "compacted"]
    # The static part read off the leaf's logged budget, lowered by the ceiling the rejection taught.
    assert (helper.budget_source, helper.budget) == ("run", min(STATIC, 26000))
    assert helper.marks[1].detail is not None and helper.marks[1].detail.startswith("dropped ")
    assert helper.samples[-1][1] == 3000 < helper.samples[-2][1]  # the drop after the compaction
    unset = context_tracks(index.context, static_budget=None, threshold=None)
    assert [t.budget for t in unset.tracks] == [t.budget for t in answer.tracks]  # the log alone tells


def _ev(second: float, kind: str, **payload: Any) -> dict[str, Any]:
    stamp = datetime.fromtimestamp(1_767_225_600 + second, tz=UTC).isoformat()
    return {"timestamp": stamp, "type": kind, "payload": payload}


def test_a_context_handler_compaction_marks_its_target_and_malformed_events_are_skipped() -> None:
    events = [
        _ev(0, "role_start", role="lead", roleId="lead-0-1"),
        _ev(1, "llm_call", role="lead", roleId="lead-0-1", usage={"promptTokens": 100}),
        _ev(2, "llm_call", role="lead", usage={"promptTokens": 200}),  # no roleId: the open lead
        _ev(3, "interrupt_resolved", trigger="context_pressure", handler="ctx", target="lead-0-1", action="compacted"),
        _ev(3.5, "interrupt_resolved", trigger="operator", handler="x", target="lead-0-1", action="compacted"),
        {"type": "llm_call"},
        _ev(4, "llm_call", role="ghost", usage={"promptTokens": 1}),
        _ev(5, "llm_call", role="lead", roleId="lead-0-1", usage="bad"),
        _ev(6, "role_finished", role="lead", roleId="lead-0-1"),
    ]
    state = ContextState()
    for event in events:
        fold_context(state, event)
    (track,) = context_tracks(state, static_budget=1000, threshold=0.8).tracks
    assert track.samples == [(1000, 100, 0), (2000, 200, 0)]
    assert [(m.offset_ms, m.kind, m.detail) for m in track.marks] == [(3000, "compacted", "by ctx")]
    assert (track.budget, track.budget_source, track.peak_percent) == (1000, "settings", 20)
    assert state.open_by_role["lead"] == []
    (unknown,) = context_tracks(state, static_budget=None, threshold=None).tracks
    assert (unknown.budget, unknown.budget_source, unknown.peak_percent) == (None, "none", None)


samples_strategy = st.lists(st.integers(min_value=0, max_value=100_000), max_size=800).map(
    lambda tokens: [(k * 10, n, 0) for k, n in enumerate(tokens)]
)


@settings(max_examples=150, deadline=None)
@given(samples=samples_strategy, limit=st.integers(min_value=4, max_value=300))
def test_downsampling_is_bounded_in_time_order_and_keeps_the_extremes(samples: list[Any], limit: int) -> None:
    kept = downsample(samples, limit)
    assert len(kept) <= limit
    assert all(a[0] < b[0] for a, b in pairwise(kept))  # monotone in time
    assert set(kept) <= set(samples)
    if samples:
        assert kept[0] == samples[0] and kept[-1] == samples[-1]
        assert max(s[1] for s in kept) == max(s[1] for s in samples)  # the peak survives
        assert min(s[1] for s in kept) == min(s[1] for s in samples)
    if len(samples) <= limit:
        assert kept == samples


@settings(max_examples=60, deadline=None)
@given(
    turns=st.lists(
        st.tuples(st.integers(0, 5000), st.integers(0, 50_000), st.sampled_from(["", "pressure", "compacted"])),
        max_size=400,
    ),
    limit=st.integers(min_value=4, max_value=250),
)
def test_every_mark_is_kept_and_samples_stay_bounded(turns: list[tuple[int, int, str]], limit: int) -> None:
    events = [_ev(0, "role_start", role="lead", roleId="lead-0-1")]
    second = 0.0
    for gap, tokens, mark in turns:
        second += gap / 1000
        events.append(_ev(second, "llm_call", role="lead", roleId="lead-0-1", usage={"promptTokens": tokens}))
        if mark == "pressure":
            events.append(_ev(second, "context_pressure", roleId="lead-0-1", promptTokens=tokens, effectiveBudget=9))
        elif mark == "compacted":
            events.append(_ev(second, "context_compacted", roleId="lead-0-1", estimatedPromptTokens=tokens // 2))
    state = ContextState()
    for event in events:
        fold_context(state, event)
    (track,) = context_tracks(state, static_budget=STATIC, threshold=0.8, limit=limit).tracks
    assert len(track.samples) <= limit and track.turns == len(turns)
    assert all(a[0] <= b[0] for a, b in pairwise(track.samples))
    assert [m.kind for m in track.marks] == [m for _, _, m in turns if m]
    assert track.peak_tokens == max((t for _, t, _ in turns), default=0)
    assert track.budget == (9 if any(m == "pressure" for _, _, m in turns) else STATIC)
