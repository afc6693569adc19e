"""load_corpus on small fixture trees: assembly, fragments, borrowing, validation and failure isolation."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.workflow.corpus.support import fixture_corpus, write_tree

from orchestrator.workflow.corpus import (
    ActionStep,
    CheckpointStep,
    LoopStep,
    TechniqueStep,
    exits,
    load_corpus,
    step_technique_ref,
)


@pytest.fixture
def corpus_root(tmp_path: Path) -> Path:
    return fixture_corpus(tmp_path)


def test_fixture_corpus_loads_cleanly(corpus_root: Path) -> None:
    corpus = load_corpus(corpus_root)
    assert corpus.load_errors == ()
    assert list(corpus.workflows) == ["alpha", "beta", "meta"]
    assert [w.id for w in corpus.listed_workflows()] == ["alpha", "beta"]
    assert corpus.workflows["meta"].hidden
    for workflow in corpus.workflows.values():
        assert workflow.activity_load_errors == ()
    assert corpus.technique_errors() == []


def test_workflow_metadata_variables_and_rules(corpus_root: Path) -> None:
    alpha = load_corpus(corpus_root).workflows["alpha"]
    assert (alpha.version, alpha.title, alpha.author, alpha.tags) == (
        "1.4.0",
        "Alpha flow",
        "tests",
        ("demo", "review"),
    )
    assert alpha.initial_activity == "intake"
    by_name = {v.name: v for v in alpha.variables}
    assert by_name["severity_level"].has_default and by_name["severity_level"].default_value == "low"
    assert by_name["lint_enabled"].has_default and by_name["lint_enabled"].default_value is False
    assert not by_name["ticket_text"].has_default and by_name["ticket_text"].default_value is None
    assert "target" in by_name  # an exempt bare word
    assert alpha.rules.workflow == ("Say hello first", "Then listen", "Plain workflow rule")
    assert alpha.rules.activity == ("Activity rule",)
    assert alpha.rules.universal == ("Keep every answer short",)  # bare ref falls back to meta
    assert alpha.techniques_workflow == ("engine::dispatch",) and alpha.techniques_activity == ("conduct",)
    assert alpha.fragments.rules["greet"] == ("Say hello first", "Then listen")


def test_activities_in_filename_order_with_prefixes(corpus_root: Path) -> None:
    alpha = load_corpus(corpus_root).workflows["alpha"]
    assert [(a.id, a.artifact_prefix, a.source_workflow) for a in alpha.activities] == [
        ("intake", "01", "alpha"),
        ("triage", "02", "alpha"),
        ("escalate", "03", "alpha"),
    ]
    assert alpha.get_activity("triage").bundle_max_chars == 6000
    assert alpha.get_activity("intake").bundle_max_chars is None


def test_step_ids_derive_and_raw_carries_them(corpus_root: Path) -> None:
    alpha = load_corpus(corpus_root).workflows["alpha"]
    intake = alpha.get_activity("intake")
    first = intake.steps[0]
    assert isinstance(first, TechniqueStep) and first.id == "classify"
    assert step_technique_ref(first) == "intake::classify"
    raw_step = intake.raw["steps"][0]
    assert list(raw_step) == ["kind", "id", "technique"]
    assert raw_step["id"] == "classify"
    triage = alpha.get_activity("triage")
    assert triage.steps[0].id == "sort"  # derived from a structured binding's name
    assert isinstance(intake.steps[1], ActionStep)


def test_checkpoint_refs_materialise_from_source_then_meta(corpus_root: Path) -> None:
    triage = load_corpus(corpus_root).workflows["alpha"].get_activity("triage")
    size = triage.find_checkpoint("size-check")
    assert isinstance(size, CheckpointStep) and size.ref is None
    assert size.message == "How big is it?" and [o.id for o in size.options or ()] == ["small", "big"]
    assert size.condition is not None
    go = triage.find_checkpoint("go-check")
    assert go is not None and go.message == "Proceed?"  # bare ref: alpha has none, meta does
    raw_size = triage.raw["steps"][1]
    assert "ref" not in raw_size
    assert list(raw_size)[:3] == ["kind", "id", "message"]
    assert raw_size["options"][1]["effect"] == {"transitionTo": "escalate"}


def test_flattened_steps_walk_into_loops(corpus_root: Path) -> None:
    triage = load_corpus(corpus_root).workflows["alpha"].get_activity("triage")
    flat = triage.flattened_steps()
    assert [f.step.id for f in flat] == ["sort", "size-check", "go-check", "per-file", "lint-file"]
    assert isinstance(flat[3].step, LoopStep) and flat[3].loops == ()
    assert [loop.id for loop in flat[4].loops] == ["per-file"]
    assert triage.find_step("lint-file") is flat[4] or triage.find_step("lint-file") == flat[4]


def test_exits_order_dedup_and_rendering(corpus_root: Path) -> None:
    corpus = load_corpus(corpus_root)
    assert exits(corpus.workflows["alpha"].get_activity("intake")) == [{"to": "triage", "isDefault": True}]
    triage_exits = exits(corpus.workflows["alpha"].get_activity("triage"))
    assert triage_exits == [
        {"to": "escalate", "condition": 'severity_level == "high" AND NOT (muted == true)'},
        {"to": "fix", "isDefault": True},
        {"to": "wrap-up", "isDefault": True},
    ]
    start = corpus.workflows["beta"].get_activity("start")
    assert exits(start) == [{"to": "triage"}, {"to": "wrap-up", "condition": "checkpoint:ok:halt"}]


def test_borrowed_local_and_inline_activities(corpus_root: Path) -> None:
    beta = load_corpus(corpus_root).workflows["beta"]
    assert [(a.id, a.artifact_prefix, a.source_workflow) for a in beta.activities] == [
        ("start", "01", "beta"),
        ("triage", "02", "alpha"),
        ("escalate", "03", "alpha"),
        ("wrap-up", "", "beta"),
    ]
    borrowed = beta.get_activity("triage")
    # fragments of a borrowed activity resolve against its source workflow
    assert borrowed.find_checkpoint("size-check").message == "How big is it?"
    assert beta.get_activity("start").find_checkpoint("ok").message == "Proceed?"


def test_unknown_key_excludes_only_that_activity(tmp_path: Path) -> None:
    root = fixture_corpus(
        tmp_path,
        {
            "alpha/activities/04-broken.yaml": "id: broken\nversion: 1.0.0\nname: B\n"
            "steps:\n  - {kind: action, id: a, colour: red}\n"
        },
    )
    alpha = load_corpus(root).workflows["alpha"]
    assert [a.id for a in alpha.activities] == ["intake", "triage", "escalate"]
    [error] = alpha.activity_load_errors
    assert error.file == "alpha/activities/04-broken.yaml" and error.activity_id == "broken"
    assert "colour" in error.error


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        ("id: other\nversion: 1.0.0\nname: B\n", "does not match the filename id"),
        ("id: broken\nversion: 1.0\nname: B\n", "version"),
        ("id: broken\nversion: 1.0.0\nname: B\nsteps:\n  - {kind: action, actions: []}\n", "has no id"),
        (
            "id: broken\nversion: 1.0.0\nname: B\nsteps:\n  - {kind: action, id: a}\n"
            "  - {kind: technique, technique: x::a}\n",
            "duplicate step id 'a'",
        ),
        ("id: broken\nversion: 1.0.0\nname: B\nsteps:\n  - {kind: checkpoint, id: c, ref: nowhere}\n", "nowhere"),
        (
            "id: broken\nversion: 1.0.0\nname: B\nsteps:\n  - {kind: checkpoint, id: c, ref: ask-size, message: hi}\n",
            "body field",
        ),
        (
            "id: broken\nversion: 1.0.0\nname: B\nsteps:\n"
            "  - {kind: checkpoint, id: c, ref: ask-size, condition: {type: simple, variable: a, operator: exists}}\n",
            "already has one",
        ),
        ("id: broken\nversion: 1.0.0\nname: B\nsteps:\n  - {kind: checkpoint, id: c, message: hi}\n", "neither"),
        (
            "id: broken\nversion: 1.0.0\nname: B\nsteps:\n  - {kind: checkpoint, id: c, message: hi, options: []}\n",
            "options",
        ),
        (
            "id: broken\nversion: 1.0.0\nname: B\nsteps:\n  - {kind: loop, id: l, loopType: sometimes, steps: []}\n",
            "loopType",
        ),
        (
            "id: broken\nversion: 1.0.0\nname: B\ndecisions:\n  - {id: d, name: D, branches: [{id: x, label: X}]}\n",
            "branches",
        ),
        ("- just\n- a list\n", "not a YAML mapping"),
        ("id: broken\n  bad: [indent\n", "invalid YAML"),
        ("id: broken\nversion: 1.0.0\nname: B\nbundleTechniques: {maxChars: -1}\n", "maxChars"),
    ],
)
def test_activity_validation_failures_are_reported(tmp_path: Path, text: str, phrase: str) -> None:
    root = fixture_corpus(tmp_path, {"alpha/activities/09-broken.yaml": text})
    corpus = load_corpus(root)
    alpha = corpus.workflows["alpha"]
    assert corpus.load_errors == ()
    assert [a.id for a in alpha.activities] == ["intake", "triage", "escalate"]
    [error] = alpha.activity_load_errors
    assert error.activity_id == "broken" and phrase in error.error, error.error


def test_loop_bodies_are_their_own_id_scope(tmp_path: Path) -> None:
    text = (
        "id: loops\nversion: 1.0.0\nname: L\nsteps:\n  - {kind: action, id: a}\n"
        "  - kind: loop\n    id: l\n    loopType: while\n    steps:\n      - {kind: action, id: a}\n"
    )
    alpha = load_corpus(fixture_corpus(tmp_path, {"alpha/activities/05-loops.yaml": text})).workflows["alpha"]
    assert alpha.activity_load_errors == ()
    assert [f.step.id for f in alpha.get_activity("loops").flattened_steps()] == ["a", "l", "a"]


@pytest.mark.parametrize(
    ("manifest", "phrase"),
    [
        ("id: gamma\ntitle: G\n", "missing required field(s): version"),
        ("id: gamma\nversion: 1.0.0\ntitle: G\nvariables:\n  - {name: Bad-Name, type: string}\n", "Bad-Name"),
        ("id: gamma\nversion: 1.0.0\ntitle: G\nvariables:\n  - {name: summary2, type: string}\n", "summary2"),
        ("id: gamma\nversion: 1.0.0\ntitle: G\nrules:\n  workflow:\n    - ref: nothing-here\n", "nothing-here"),
        ("id: gamma\nversion: 1.0.0\ntitle: G\nrules:\n  workflow:\n    - ref: a::b::c\n", "malformed fragment ref"),
        ("id: gamma\nversion: 1.0.0\ntitle: G\nactivities: [alpha/07-missing.yaml]\n", "missing file"),
        ("id: gamma\nversion: 1.0.0\ntitle: G\nactivities: [04-nowhere.yaml]\n", "names no file"),
        ("id: gamma\nversion: 1.0.0\ntitle: G\ncolour: blue\n", "colour"),
        ("id: gamma\nversion: 1.0.0\ntitle: G\nvariables:\n  - {name: a_b, type: text}\n", "type"),
        ("id: alpha\nversion: 1.0.0\ntitle: Twin\n", "duplicate workflow id 'alpha'"),
        (": : :\n", "invalid YAML"),
        ("id: gamma\nversion: 1.0.0\ntitle: G\nfragments:\n  rules:\n    r: [{ref: other}]\n", "fragments.rules"),
        ("id: gamma\nversion: 1.0.0\ntitle: G\nfragments:\n  checkpoints:\n    c: {ref: other}\n", "ref"),
    ],
)
def test_workflow_failures_become_load_errors(tmp_path: Path, manifest: str, phrase: str) -> None:
    root = fixture_corpus(tmp_path, {"zeta/workflow.yaml": manifest})
    corpus = load_corpus(root)
    assert set(corpus.workflows) >= {"alpha", "beta", "meta"}
    assert "gamma" not in corpus.workflows
    [error] = corpus.load_errors
    assert error.file == "zeta/workflow.yaml" and phrase in error.error, error.error
    assert error.workflow_id in ("gamma", "alpha", "zeta")
    assert corpus.load_error_for(error.workflow_id) == (None if error.workflow_id == "alpha" else error)


def test_cross_workflow_rule_refs_and_legacy_manifest(tmp_path: Path) -> None:
    root = fixture_corpus(
        tmp_path,
        {
            "legacy.yaml": "id: legacy\nversion: 1.0.0\ntitle: L\nrules:\n  workflow:\n    - ref: alpha::greet\n"
            "activities:\n  - {id: only, version: 1.0.0, name: Only}\n",
            "notes.json": "{}",
        },
    )
    corpus = load_corpus(root)
    assert corpus.load_errors == ()
    legacy = corpus.workflows["legacy"]
    assert legacy.rules.workflow == ("Say hello first", "Then listen")
    assert [a.id for a in legacy.activities] == ["only"]


def test_prefixed_rule_ref_does_not_fall_back(tmp_path: Path) -> None:
    root = fixture_corpus(
        tmp_path,
        {
            "zeta/workflow.yaml": "id: zeta\nversion: 1.0.0\ntitle: Z\n"
            "rules:\n  universal:\n    - ref: alpha::be-brief\n"
        },
    )
    corpus = load_corpus(root)
    assert "zeta" not in corpus.workflows
    assert "alpha::be-brief" in corpus.load_errors[0].error


def test_yml_manifest_and_custom_activities_dir(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path,
        {
            "solo/workflow.yml": "id: solo\nversion: 1.0.0\ntitle: Solo\nactivitiesDir: acts\n",
            "solo/acts/10-late.yaml": "id: late\nversion: 1.0.0\nname: Late\n",
            "solo/acts/2-early.yml": "id: early\nversion: 1.0.0\nname: Early\n",
            "solo/acts/sub/01-ignored.yaml": "id: ignored\nversion: 1.0.0\nname: I\n",
        },
    )
    solo = load_corpus(root).workflows["solo"]
    assert [(a.id, a.artifact_prefix) for a in solo.activities] == [("early", "2"), ("late", "10")]


def test_missing_root_is_a_load_error(tmp_path: Path) -> None:
    corpus = load_corpus(tmp_path / "nope")
    assert corpus.workflows == {} and len(corpus.load_errors) == 1


def test_unreadable_manifest_bytes(tmp_path: Path) -> None:
    root = fixture_corpus(tmp_path)
    (root / "zeta").mkdir()
    (root / "zeta" / "workflow.yaml").write_bytes(b"\xff\xfe\x00id: z")
    corpus = load_corpus(root)
    assert [e.file for e in corpus.load_errors] == ["zeta/workflow.yaml"]
    assert "alpha" in corpus.workflows


def test_values_must_be_plain_json(tmp_path: Path) -> None:
    root = fixture_corpus(
        tmp_path,
        {
            "zeta/workflow.yaml": "id: zeta\nversion: 1.0.0\ntitle: Z\n"
            "variables:\n  - {name: start_date, type: string, defaultValue: 2024-01-01}\n",
            "alpha/activities/08-values.yaml": "id: values\nversion: 1.0.0\nname: V\nsteps:\n"
            "  - {kind: checkpoint, id: c, message: m,\n"
            "     options: [{id: o, label: O, effect: {setVariable: {n: .nan}}}]}\n",
        },
    )
    corpus = load_corpus(root)
    assert "quote it" in corpus.load_errors[0].error and "start_date" in corpus.load_errors[0].error
    [error] = corpus.workflows["alpha"].activity_load_errors
    assert "non-finite" in error.error and "option 'o'" in error.error
