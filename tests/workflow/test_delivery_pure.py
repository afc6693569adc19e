"""Unit tests of the delivery tools' pure parts: ledger, batch bound, eager-bundling gates, provenance."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec
import pytest

from orchestrator.workflow.corpus import Activity, Condition, FlatStep, Step, TechniqueBinding
from orchestrator.workflow.session.sessionfile import HistoryEvent, new_history, new_session_file
from orchestrator.workflow.tools import batch_bound as bb
from orchestrator.workflow.tools import bundling as bd
from orchestrator.workflow.tools import ledger as lg
from orchestrator.workflow.tools import provenance as pv
from orchestrator.workflow.tools.batch import batch_block

# ------------------------------------------------------------------------------------------- builders


def activity(steps: list[dict[str, Any]], *, id: str = "act", max_chars: int | None = None) -> Activity:
    parsed = msgspec.convert(steps, tuple[Step, ...])
    return Activity(
        id=id, version="1.0.0", name=id, description=None, required=True, rules=(), outcome=(), techniques=(),
        bundle_max_chars=max_chars, steps=parsed, decisions=(), transitions=(), triggers=(), artifact_prefix="01",
        source_workflow="wf", source_file=f"wf/activities/01-{id}.yaml", raw={"id": id},
    )


def event(type: str, activity: str | None = None, **data: Any) -> HistoryEvent:
    return new_history(type, now=1_700_000_000, activity=activity, data=data or None)  # type: ignore[arg-type]


def dispatched(agent: str, act: str, chars: Any = 1000, **extra: Any) -> HistoryEvent:
    return event("activity_dispatched", act, agentId=agent, dispatch="fresh", chars=chars, **extra)


# ------------------------------------------------------------------------------------------- ledger


def test_content_hash_is_16_hex_of_sha256() -> None:
    assert lg.content_hash("abc") == hashlib.sha256(b"abc").hexdigest()[:16]
    assert lg.block_hash({"a": [1, 2]}) == lg.block_hash({"a": [1, 2]})
    assert lg.block_hash({"a": 1, "b": 2}) != lg.block_hash({"b": 2, "a": 1})  # key order is content


@pytest.mark.parametrize(
    ("context_mode", "bundle", "full", "fetch", "activity"),
    [
        (None, None, None, "full", "full"),
        ("fresh", "reference", None, "reference", "reference"),
        ("persistent", None, None, "reference", "reference"),
        ("persistent", "full", None, "full", "full"),
        ("persistent", None, True, "full", "reference"),
        ("persistent", "reference", True, "full", "reference"),
    ],
)
def test_delivery_modes(context_mode: str | None, bundle: str | None, full: bool | None, fetch: str,
                        activity: str) -> None:
    state = new_session_file(session_index="AAAAAA", workflow_id="wf", workflow_version="1.0.0",
                             context_mode=context_mode)
    assert lg.fetch_mode(state, bundle, full) == fetch
    assert lg.activity_mode(state, bundle) == activity


def test_scope_and_keys() -> None:
    state = new_session_file(session_index="AAAAAA", workflow_id="wf", workflow_version="1.0.0", agent_id="orch")
    assert lg.delivery_scope(state, None) == "orch"
    assert lg.delivery_scope(state, "w1") == "w1"
    assert lg.technique_key("g::op") == "technique:g::op"
    assert lg.bundle_key("wf/g") == "bundle:wf/g"
    assert lg.bundle_rules_key("h") == "bundle:rules:h"
    assert lg.activity_rules_key("h") == "activity_rules:h"
    assert lg.contract_key("meta::g", "h") == "contract:meta::g:h"
    assert lg.provenance_note_key("h") == "technique:provenance_note:h"
    assert lg.resource_key("x#sec") == "resource:x#sec"
    assert lg.workflow_bundle_key("h") == "workflow_bundle:h"


def test_merge_ledger_never_mutates() -> None:
    before = {"w1": {"a": "1"}}
    after = lg.merge_ledger(before, "w1", {"b": "2"})
    assert before == {"w1": {"a": "1"}}
    assert after == {"w1": {"a": "1", "b": "2"}}
    assert lg.merge_ledger(None, "w2", {"c": "3"}) == {"w2": {"c": "3"}}
    assert lg.merge_ledger(None, "w2", {}) is None


def test_collapse_ledger_then_in_response_then_full() -> None:
    view = lg.LedgerView({"w1": {"k1": "h1"}}, "w1")
    seen = lg.InResponse()
    assert lg.collapse("body", "k1", "h1", ledger=view, consult=True, seen=seen, where="x") == lg.unchanged_marker("h1")
    assert view.staged == {}
    # not consulted: content again (and staged, since it is delivered)
    assert lg.collapse("body", "k1", "h1", ledger=view, consult=False, seen=seen, where="first") == "body"
    assert view.staged == {"k1": "h1"}
    # a second copy in the same response points at the first, in every mode
    second = lg.collapse("body", "k1", "h1", ledger=view, consult=False, seen=seen, where="second")
    assert second == {"delivery": "unchanged", "content_hash": "h1", "see": "first"}
    assert lg.is_marker(second) and not lg.is_marker("body")
    # a changed body under the same key is content
    assert lg.collapse("new", "k1", "h2", ledger=view, consult=True, seen=seen, where="y") == "new"


def test_collapse_technique_blocks() -> None:
    contract = {"inputs": [{"id": "a"}]}
    payload = {"id": "t", "capability": "c", "provenance_note": "note", "contracts": {"wf": contract}}
    view = lg.LedgerView(None, "w1")
    seen = lg.InResponse()
    first = lg.collapse_technique(payload, ledger=view, consult=True, seen=seen, where="s1")
    assert first == payload
    second = lg.collapse_technique({**payload, "id": "u"}, ledger=view, consult=True, seen=seen, where="s2")
    assert second["contracts"]["wf"]["see"] == "s1.contracts.wf"
    assert second["provenance_note"]["see"] == "s1.provenance_note"
    digest = lg.block_hash(contract)
    assert view.staged[lg.contract_key("wf", digest)] == digest
    assert view.staged[lg.provenance_note_key(lg.content_hash("note"))] == lg.content_hash("note")
    # held from an earlier call and consulted: a plain marker
    held = lg.LedgerView({"w1": dict(view.staged)}, "w1")
    again = lg.collapse_technique(payload, ledger=held, consult=True, seen=lg.InResponse(), where="s")
    assert again["contracts"]["wf"] == {"delivery": "unchanged", "content_hash": digest}


# ------------------------------------------------------------------------------------------- batch bound

POLICY = bb.BatchPolicy(max_activities=3, headroom_fraction=0.35, chars_per_token=4)


def test_budget_is_floored() -> None:
    assert bb.batch_budget(200_000, POLICY) == 280_000
    assert bb.batch_budget(3, POLICY) == 4  # 4.2 floored


@pytest.mark.parametrize("chars", [None, "1000", float("nan"), float("inf"), -5, True])
def test_unmeasured_sizes_count_for_nothing(chars: Any) -> None:
    history = [dispatched("w", "a", chars), dispatched("w", "b", 500)]
    assert bb.batch_activities(history, "w") == ["b"]
    assert bb.delivered_chars(history, "w") == 500


def test_delivered_chars_counts_only_full_lazy_deliveries() -> None:
    history = [
        dispatched("w", "a", 1000),
        dispatched("w", "a", 300, delivery="unchanged"),
        event("technique_fetched", "a", agentId="w", chars=200, delivery="full"),
        event("technique_fetched", "a", agentId="w", chars=999, delivery="unchanged"),
        event("technique_bundled", "a", agentId="w", chars=777, delivery="full"),
        event("resource_fetched", "a", agentId="w", chars=50, delivery="full"),
        event("resource_fetched", "a", agentId="w", chars=60, delivery="full", bundled=True),
        event("activity_redelivered", "a", agentId="w", priorAgentId="v", chars=1000),
        event("technique_fetched", "a", agentId="other", chars=10_000, delivery="full"),
    ]
    assert bb.delivered_chars(history, "w") == 1250


def test_standing_block_and_exemptions() -> None:
    history = [dispatched("w", "a"), dispatched("w", "b"), dispatched("w", "a")]
    standing = bb.batch_standing(history, "orch", "w", 1000, POLICY)
    assert standing.activities == ("a", "b")
    assert standing.block() == {"activities": 2, "delivered_chars": 3000, "may_continue": False, "bounded": True,
                                "max_activities": 3, "budget_chars": 1400}
    own = bb.batch_standing(history, "w", "w", 1000, POLICY)  # the session's agent is never bounded
    assert own.block() == {"activities": 2, "delivered_chars": 3000, "may_continue": True, "bounded": False}
    empty = bb.batch_standing([], "orch", "new", 1, POLICY)
    assert empty.may_continue
    pending = bb.batch_standing(history, "orch", "w", 1_000_000, POLICY, pending_chars=10, pending_activity="c")
    assert pending.activities == ("a", "b", "c") and pending.chars == 3010 and not pending.may_continue


def test_refusal_cap_budget_and_held_activity() -> None:
    three = [dispatched("w", x) for x in ("a", "b", "c")]
    refusal = bb.batch_refusal(three, "orch", "w", "d", 1_000_000, POLICY)
    assert refusal is not None and refusal.limit == "activity_cap" and refusal.activities == 3
    assert bb.batch_refusal(three, "orch", "w", "c", 1_000_000, POLICY) is None  # already held
    assert bb.batch_refusal(three, "w", "w", "d", 1_000_000, POLICY) is None  # session agent
    over = [dispatched("w", "a", 5000)]
    budget = bb.batch_refusal(over, "orch", "w", "b", 1000, POLICY)
    assert budget is not None and budget.limit == "delivery_budget" and budget.budget_chars == 1400
    message = bb.refusal_message("d", "w", refusal)
    assert "Batch full" in message and "NEW agent_id" in message and "cap of 3" in message
    data = refusal.event_data("w")
    assert data == {"agentId": "w", "limit": "activity_cap", "activities": 3, "chars": 3000, "maxActivities": 3,
                    "budgetChars": 1_400_000}
    logged = [event("batch_refused", "d", **data)]
    assert bb.refusal_already_logged(logged, "w", "d", "activity_cap")
    assert not bb.refusal_already_logged(logged, "w", "d", "delivery_budget")
    assert not bb.refusal_already_logged(logged, "v", "d", "activity_cap")


def test_dispatch_kind_and_redelivery() -> None:
    history = [dispatched("w1", "a"), event("activity_dispatched", "a", agentId="w3", dispatch="fresh")]
    assert bb.dispatch_kind(history, "w1") == "resume"
    assert bb.dispatch_kind(history, "w2") == "fresh"
    assert bb.prior_holder(history, "w2", "a") == "w1"
    assert bb.prior_holder(history, "w1", "a") is None
    assert bb.prior_holder(history, "w2", "b") is None


def test_step_started_once_per_visit() -> None:
    started = event("step_started", "a", stepId="s", agentId="w")
    assert bb.step_started_before([started], "a", "s", "w")
    assert not bb.step_started_before([started], "a", "s", "other")
    assert not bb.step_started_before([started, event("activity_entered", "a")], "a", "s", "w")


def test_batch_block_compatibility() -> None:
    block = batch_block([dispatched("w", "a")], scope="w", session_agent="o", context_tokens=1000,
                        max_activities=3, headroom_fraction=0.35)
    assert block["activities"] == 1 and block["budget_chars"] == 1400


# ------------------------------------------------------------------------------------------- bundling


def test_bundle_budget() -> None:
    assert bd.bundle_budget(200_000, 0.8, 4) == 640_000
    assert bd.bundle_budget(1, 0.8, 4) == 3


def test_gates() -> None:
    bag = {"flag": True, "mode": "quick", "n": 3, "nothing": None}
    assert bd.gate_of(None, None, bag, set()) == bd.Gate(True)
    assert bd.gate_of("flag && n > 2", None, bag, set()) == bd.Gate(True)
    assert bd.gate_of("mode != quick", None, bag, set()) == bd.Gate(False)
    assert bd.gate_of("flag &&", None, bag, set()) == bd.Gate(None, "unparsed")
    assert bd.gate_of("a && b || c", None, bag, set()) == bd.Gate(None, "unparsed")
    assert bd.gate_of("missing == 1", None, bag, set()) == bd.Gate(None, "unbound")
    assert bd.gate_of("flag", None, bag, {"flag"}) == bd.Gate(None, "pending")
    assert bd.gate_of("flag.deep == 1", None, bag, {"flag"}) == bd.Gate(None, "pending")
    exists = msgspec.convert({"type": "simple", "variable": "missing", "operator": "notExists"}, Condition)
    assert bd.gate_of(None, exists, bag, set()) == bd.Gate(True)  # presence tests answer on absence
    equal = msgspec.convert({"type": "simple", "variable": "n", "operator": "==", "value": 3}, Condition)
    assert bd.gate_of("flag", equal, bag, set()) == bd.Gate(True)
    assert bd.gate_of("mode == deep", equal, bag, set()) == bd.Gate(False)
    assert bd.combine_gates(bd.Gate(None, "unbound"), bd.Gate(False)) == bd.Gate(False)
    assert bd.combine_gates(bd.Gate(None, "unbound"), bd.Gate(None, "pending")).reason == "unbound"
    assert bd.combine_gates(bd.Gate(True), bd.Gate(None, "pending")).reason == "pending"


LOOPED = [
    {"kind": "technique", "id": "first", "technique": {"name": "t1", "outputs": {"out": "result"}}},
    {"kind": "loop", "id": "each", "loopType": "forEach", "variable": "item", "over": "items", "when": "go == true",
     "steps": [
         {"kind": "technique", "id": "inner", "technique": "t2"},
         {"kind": "technique", "id": "gated", "technique": "t3", "when": "result == 1"},
     ]},
    {"kind": "action", "id": "act", "actions": [{"action": "set", "target": "flag.sub"}]},
    {"kind": "checkpoint", "id": "cp", "message": "m", "autoAdvanceMs": 1000, "defaultOption": "a",
     "options": [{"id": "a", "label": "A", "effect": {"setVariable": {"picked": 1}, "recordReply": "reply"}}]},
]


def test_written_variables_and_step_gates() -> None:
    act = activity(LOOPED)
    written = bd.written_variables(act, lambda step: ("out", "extra") if step.id == "first" else ())
    assert written == {"result", "extra", "item", "flag", "picked", "reply"}
    flats = {f.step.id: f for f in act.flattened_steps()}
    assert bd.step_gate(flats["first"], {}, written) == bd.Gate(True)
    assert bd.step_gate(flats["inner"], {"go": True}, written) == bd.Gate(True)
    assert bd.step_gate(flats["inner"], {"go": False}, written) == bd.Gate(False)
    assert bd.step_gate(flats["inner"], {}, written) == bd.Gate(None, "unbound")
    assert bd.step_gate(flats["gated"], {"go": True}, written) == bd.Gate(None, "pending")
    assert bd.step_gate(FlatStep(flats["gated"].step, ()), {"go": False}, set()) == bd.Gate(None, "unbound")


def test_bundle_decision_order() -> None:
    assert bd.bundle_decision(500, max_chars=400, held=True, tally=0, budget=10_000) == "skip"
    assert bd.bundle_decision(500, max_chars=None, held=True, tally=99_999, budget=10) == "held"
    assert bd.bundle_decision(500, max_chars=None, held=False, tally=9_600, budget=10_000) == "stop"
    assert bd.bundle_decision(500, max_chars=500, held=False, tally=9_500, budget=10_000) == "add"


def test_enforcement_notes_and_marker() -> None:
    assert set(bd.enforcement_notes(activity(LOOPED))) == {"actions", "auto_advance"}
    assert bd.enforcement_notes(activity([{"kind": "technique", "id": "t", "technique": "x"}])) == {}
    assert set(bd.enforcement_notes(activity([{"kind": "action", "id": "a", "actions": []}]))) == {"actions"}
    assert bd.step_marker("detect", "review-mode-detection") == "▼ STEP detect · technique review-mode-detection"


# ------------------------------------------------------------------------------------------- provenance


def _context() -> tuple[pv.ProvenanceContext, Activity]:
    first = activity(LOOPED, id="one")
    second = activity([
        {"kind": "technique", "id": "use", "technique": {
            "name": "t9", "inputs": {"lit": 5, "tok": "{result}", "tmpl": "x {nope} {item}", "ren": "result",
                                     "word": "standard", "gap": "{ghost}"},
            "outputs": {"o1": "stored"}}},
        {"kind": "technique", "id": "tail", "technique": {"name": "t8", "outputs": {"late": "late_var"}}},
    ], id="two")
    ctx = pv.scan_producers([first, second], ("declared_only", "late_var"),
                            lambda a, s: ("out", "own") if s.id == "first" else ())
    return ctx, second


def test_scan_producers_positions_and_vias() -> None:
    ctx, _ = _context()
    assert ctx.position("one", "first") == 0 and ctx.position("one", "inner") == 2
    assert ctx.position("two", "use") == 6 and ctx.position("two", "nope") is None
    vias = {(p.name, p.via) for p in ctx.producers}
    assert {("result", "remap"), ("own", "output"), ("item", "loop"), ("flag.sub", "action"),
            ("picked", "checkpoint"), ("reply", "reply"), ("stored", "remap")} <= vias
    assert ("out", "output") not in vias  # remapped away


def test_input_sources() -> None:
    ctx, second = _context()
    at = ctx.position("two", "use")
    assert at is not None
    binding = second.steps[0].technique
    assert isinstance(binding, TechniqueBinding)
    bound = binding.inputs

    def src(name: str, **kw: Any) -> pv.Source:
        opts = {"has_default": False, "optional": False, "inherited": False, **kw}
        return pv.input_source(name, ctx, at, bound, **opts)

    assert src("lit").text == "step binding: literal 5"
    assert "output 'out' of step 'first' in activity 'one', stored as 'result'" in src("tok").text
    assert src("ren").kind == "binding" and "stored as 'result'" in src("ren").text
    assert src("word").text == 'step binding: literal "standard"'
    tmpl = src("tmpl")
    assert tmpl.unresolved and "'{nope}'" in tmpl.text and "{item}'" not in tmpl.text
    assert src("gap").unresolved and "UNRESOLVED" in src("gap").text
    assert src("own").kind == "prior"
    assert src("declared_only").kind == "declared"
    assert src("late_var").kind == "declared_later"
    assert src("user_request").kind == "seeded"
    assert src("stranger", has_default=True).kind == "default"
    assert src("stranger", optional=True).kind == "optional"
    assert src("stranger", inherited=True).kind == "inherited"
    missing = src("stranger")
    assert missing.unresolved and missing.text.startswith("UNRESOLVED")
    nothing = pv.input_source("late", ctx, 0, None, has_default=False, optional=False, inherited=False)
    assert nothing.kind == "unresolved"
    first_pos = ctx.position("one", "first")
    assert first_pos is not None
    assert pv.input_source("stored", ctx, first_pos, None, has_default=False, optional=False,
                           inherited=False).kind == "later"


def test_annotate_payload() -> None:
    ctx, second = _context()
    binding = second.steps[0].technique
    assert isinstance(binding, TechniqueBinding)
    payload = {
        "id": "t9", "version": "1.0.0", "capability": "Do it.",
        "inputs": [{"id": "lit"}, {"id": "stranger", "description": "x"}],
        "protocol": [{"steps": ["go"]}],
        "outputs": [{"id": "o1"}, {"id": "o2"}],
        "inherits": ["wf"],
        "contracts": {"wf": {"inputs": [{"id": "declared_only"}, {"id": "late_var"}, {"id": "tok"}],
                             "outputs": [{"id": "o1"}]}},
    }
    out, warnings = pv.annotate(payload, ctx=ctx, position=6, binding=binding, optional_ids=frozenset(),
                                technique_id="t9", step_id="use")
    assert list(out)[:4] == ["id", "version", "capability", "provenance_note"]
    assert out["provenance_note"] == pv.PROVENANCE_NOTE
    assert out["inputs"][0]["source"] == "step binding: literal 5"
    assert out["inputs"][1]["source"].startswith("UNRESOLVED")
    assert out["outputs"] == [{"id": "o1", "destination": "stored"}, {"id": "o2"}]
    inherited = out["contracts"]["wf"]["inputs"]
    assert "source" not in inherited[0]  # a settled declared variable is not noteworthy
    assert "first written later" in inherited[1]["source"]
    assert inherited[2]["source"].startswith("step binding")
    assert out["contracts"]["wf"]["outputs"] == [{"id": "o1", "destination": "stored"}]
    assert warnings == ["Input 'stranger' of technique 't9' is UNRESOLVED at step 'use'"]
    again, _ = pv.annotate(payload, ctx=ctx, position=6, binding=binding, optional_ids=frozenset(),
                           technique_id="t9", step_id="use")
    assert lg.block_hash(again) == lg.block_hash(out)  # deterministic
    assert payload["inputs"] == [{"id": "lit"}, {"id": "stranger", "description": "x"}]  # input untouched
