"""``tools/provenance.py``: producers scanned in order, input sources and the annotated technique payload."""

from __future__ import annotations

from typing import Any

from tests.workflow.tools.builders import LOOPED, activity

from orchestrator.workflow.corpus import Activity, TechniqueBinding
from orchestrator.workflow.tools import ledger as lg
from orchestrator.workflow.tools import provenance as pv


def _context() -> tuple[pv.ProvenanceContext, Activity]:
    first = activity(LOOPED, id="one")
    second = activity(
        [
            {
                "kind": "technique",
                "id": "use",
                "technique": {
                    "name": "t9",
                    "inputs": {
                        "lit": 5,
                        "tok": "{result}",
                        "tmpl": "x {nope} {item}",
                        "ren": "result",
                        "word": "standard",
                        "gap": "{ghost}",
                    },
                    "outputs": {"o1": "stored"},
                },
            },
            {"kind": "technique", "id": "tail", "technique": {"name": "t8", "outputs": {"late": "late_var"}}},
        ],
        id="two",
    )
    ctx = pv.scan_producers(
        [first, second], ("declared_only", "late_var"), lambda a, s: ("out", "own") if s.id == "first" else ()
    )
    return ctx, second


def test_scan_producers_positions_and_vias() -> None:
    ctx, _ = _context()
    assert ctx.position("one", "first") == 0 and ctx.position("one", "inner") == 2
    assert ctx.position("two", "use") == 6 and ctx.position("two", "nope") is None
    vias = {(p.name, p.via) for p in ctx.producers}
    assert {
        ("result", "remap"),
        ("own", "output"),
        ("item", "loop"),
        ("flag.sub", "action"),
        ("picked", "checkpoint"),
        ("reply", "reply"),
        ("stored", "remap"),
    } <= vias
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
    assert (
        pv.input_source("stored", ctx, first_pos, None, has_default=False, optional=False, inherited=False).kind
        == "later"
    )


def test_annotate_payload() -> None:
    ctx, second = _context()
    binding = second.steps[0].technique
    assert isinstance(binding, TechniqueBinding)
    payload = {
        "id": "t9",
        "version": "1.0.0",
        "capability": "Do it.",
        "inputs": [{"id": "lit"}, {"id": "stranger", "description": "x"}],
        "protocol": [{"steps": ["go"]}],
        "outputs": [{"id": "o1"}, {"id": "o2"}],
        "inherits": ["wf"],
        "contracts": {
            "wf": {"inputs": [{"id": "declared_only"}, {"id": "late_var"}, {"id": "tok"}], "outputs": [{"id": "o1"}]}
        },
    }
    out, warnings = pv.annotate(
        payload, ctx=ctx, position=6, binding=binding, optional_ids=frozenset(), technique_id="t9", step_id="use"
    )
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
    again, _ = pv.annotate(
        payload, ctx=ctx, position=6, binding=binding, optional_ids=frozenset(), technique_id="t9", step_id="use"
    )
    assert lg.block_hash(again) == lg.block_hash(out)  # deterministic
    assert payload["inputs"] == [{"id": "lit"}, {"id": "stranger", "description": "x"}]  # input untouched
