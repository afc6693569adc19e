"""Malformed workflow YAML and technique/resource markdown: recorded as load or parse errors, never a crash."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.workflow.corpus import (
    CORE_WORKER,
    TechniqueParseError,
    bundle_for,
    exits,
    find_resource,
    load_corpus,
    parse_when,
    resolve_technique,
    technique_payload,
)
from orchestrator.workflow.corpus.markdown import parse_technique, slice_section
from orchestrator.workflow.errors import ResourceNotFoundError

_YAML_BITS = [
    "id: w",
    "id: [",
    "version: 1.0.0",
    "version: 1.0",
    "title: T",
    "name: N",
    "steps:",
    "  - kind: action",
    "  - kind: checkpoint",
    "  - kind: loop",
    "  - kind: technique",
    "    id: s",
    "    technique: a::b",
    "    ref: frag",
    "    ref: meta::frag",
    "    message: m",
    "    options: [{id: o, label: L}]",
    "    steps: []",
    "    loopType: forEach",
    "transitions: [{to: x}]",
    "activities: [other/01-a.yaml]",
    "activities: [{id: z}]",
    "rules:",
    "  workflow: [{ref: r}]",
    "fragments: {rules: {r: [a, b]}}",
    "variables: [{name: a_b, type: string}]",
    "&a x: *a",
    "!!python/object:os.system x",
    "- - -",
    "{",
    "}",
    "'",
    '"',
    ":",
    "\t",
    "? x",
    "<<: {a: 1}",
    "decisions: [{id: d, name: D, branches: []}]",
    "bundleTechniques: {maxChars: -1}",
    "when: 'a && b || c'",
]
_MD_BITS = [
    "---",
    "metadata:",
    "  version: 1.0.0",
    "  version: x",
    "name: r",
    "## Capability",
    "## Inputs",
    "## Input",
    "## Outputs",
    "## Output(s)",
    "## Protocol",
    "## Rules",
    "### a",
    "### 1. Initial",
    "### Final",
    "#### artifact",
    "#### audience",
    "#### default",
    "`x.md`",
    "human",
    "robot",
    "- step",
    "1. step",
    "  continued",
    "```",
    "~~~",
    "[r](../resources/x.md#y)",
    "",
    "text",
    "# Top",
    "## Same",
    "\ufeff",
    "\x00",
]

# Tree examples touch the disk: a quarter of the profile's budget (60 in the quick profile) keeps this fast.
_TREE_EXAMPLES = max(60, settings.default.max_examples // 4)
_yaml_docs = st.one_of(st.lists(st.sampled_from(_YAML_BITS), max_size=12).map("\n".join), st.text(max_size=200))
_md_docs = st.one_of(st.lists(st.sampled_from(_MD_BITS), max_size=16).map("\n".join), st.text(max_size=200))


def _exercise(root: Path) -> None:
    corpus = load_corpus(root)
    corpus.technique_errors()
    for workflow in corpus.workflows.values():
        bundle_for(corpus, workflow.id, workflow.techniques_activity, CORE_WORKER)
        for activity in workflow.activities:
            exits(activity)
            for flat in activity.flattened_steps():
                if flat.step.when is not None:
                    try:
                        parse_when(flat.step.when)
                    except ValueError:
                        pass
    for ref in ("t", "g::op", "g", "w::t", "w/g::op"):
        resolved = resolve_technique(corpus, ref, workflow_id="w", activity_id="a")
        if resolved is not None:
            technique_payload(resolved)
    for resource_id in ("r", "r#same", "w/r#top", "x"):
        try:
            find_resource(corpus, resource_id, workflow_id="w")
        except ResourceNotFoundError:
            pass


@settings(max_examples=_TREE_EXAMPLES, deadline=None)
@given(manifest=_yaml_docs, activity=_yaml_docs, other=_yaml_docs)
def test_malformed_yaml_trees_never_crash(manifest: str, activity: str, other: str) -> None:
    root = Path(tempfile.mkdtemp(prefix="wf-fuzz-"))
    try:
        (root / "w" / "activities").mkdir(parents=True)
        (root / "w" / "workflow.yaml").write_text(manifest, encoding="utf-8")
        (root / "w" / "activities" / "01-a.yaml").write_text(activity, encoding="utf-8")
        (root / "other" / "activities").mkdir(parents=True)
        (root / "other" / "workflow.yaml").write_text("id: other\nversion: 1.0.0\ntitle: O\n", encoding="utf-8")
        (root / "other" / "activities" / "01-a.yaml").write_text(other, encoding="utf-8")
        (root / "legacy.yaml").write_text(other, encoding="utf-8")
        _exercise(root)
    finally:
        shutil.rmtree(root)


@settings(max_examples=_TREE_EXAMPLES, deadline=None)
@given(technique=_md_docs, group=_md_docs, resource=_md_docs)
def test_malformed_markdown_trees_never_crash(technique: str, group: str, resource: str) -> None:
    root = Path(tempfile.mkdtemp(prefix="wf-fuzz-"))
    try:
        (root / "w" / "techniques" / "g").mkdir(parents=True)
        (root / "w" / "resources").mkdir(parents=True)
        (root / "w" / "workflow.yaml").write_text(
            "id: w\nversion: 1.0.0\ntitle: W\ntechniques: {activity: [t, g::op, g::a]}\n", encoding="utf-8"
        )
        (root / "w" / "techniques" / "t.md").write_text(technique, encoding="utf-8")
        (root / "w" / "techniques" / "TECHNIQUE.md").write_text(group, encoding="utf-8")
        (root / "w" / "techniques" / "g" / "TECHNIQUE.md").write_text(group, encoding="utf-8")
        (root / "w" / "techniques" / "g" / "op.md").write_text(technique, encoding="utf-8")
        (root / "w" / "resources" / "r.md").write_text(resource, encoding="utf-8")
        _exercise(root)
    finally:
        shutil.rmtree(root)


@given(_md_docs)
def test_technique_parser_only_raises_parse_errors(text: str) -> None:
    try:
        parse_technique(text, namespace="w", path="t", file="w/techniques/t.md", is_group=False)
    except TechniqueParseError:
        pass


@given(_md_docs, st.sampled_from(["top", "same", "a", "", "1-initial"]))
def test_slice_section_never_raises(text: str, anchor: str) -> None:
    result = slice_section(text, anchor)
    assert result is None or isinstance(result, str)


_ids = st.sampled_from(["s", "t", "u", "a::b", "x#{y}"])
_scalar_any = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["v", "", "1.0.0"]))
_simple = st.fixed_dictionaries(
    {
        "type": st.just("simple"),
        "variable": st.sampled_from(["a", "b.c"]),
        "operator": st.sampled_from(["==", "!=", ">", "exists", "notExists"]),
    },
    optional={"value": _scalar_any},
)
_condition = st.one_of(
    _simple,
    st.fixed_dictionaries(
        {"type": st.sampled_from(["and", "or"]), "conditions": st.lists(_simple, min_size=2, max_size=3)}
    ),
    st.fixed_dictionaries({"type": st.just("not"), "condition": _simple}),
)
_effect = st.fixed_dictionaries(
    {},
    optional={
        "setVariable": st.dictionaries(st.sampled_from(["a_b", "c_d"]), _scalar_any, max_size=2),
        "transitionTo": st.sampled_from(["a", "b", "z"]),
        "skipActivities": st.lists(st.just("b"), max_size=2),
        "recordReply": st.just("reply_text"),
    },
)
_option = st.fixed_dictionaries(
    {"id": st.sampled_from(["o", "p", "q"]), "label": st.just("L")},
    optional={"effect": _effect, "description": st.just("d")},
)
_actions = st.lists(
    st.fixed_dictionaries(
        {"action": st.sampled_from(["log", "set", "message", "validate"])},
        optional={"value": _scalar_any, "target": st.just("a_b")},
    ),
    max_size=2,
)
_gates = {
    "when": st.sampled_from(["a", "a && b || c", "(", "x == 1", "!a.b"]),
    "condition": _condition,
    "required": st.booleans(),
}
_technique_step = st.fixed_dictionaries(
    {
        "kind": st.just("technique"),
        "technique": st.one_of(
            st.sampled_from(["t", "g::op", "w::t", "meta::x", "a::"]),
            st.fixed_dictionaries(
                {"name": st.sampled_from(["t", "g::op"])},
                optional={
                    "inputs": st.dictionaries(st.just("i"), st.one_of(st.text(max_size=3), st.booleans()), max_size=1),
                    "outputs": st.dictionaries(st.just("o"), st.just("a_b"), max_size=1),
                },
            ),
        ),
    },
    optional={"id": _ids, "actions": _actions, **_gates},
)
_action_step = st.fixed_dictionaries({"kind": st.just("action"), "id": _ids}, optional={"actions": _actions, **_gates})
_checkpoint_step = st.one_of(
    st.fixed_dictionaries(
        {
            "kind": st.just("checkpoint"),
            "id": _ids,
            "ref": st.sampled_from(["frag", "meta::frag", "w::frag", "a::b::c", "gone"]),
        },
        optional={"when": _gates["when"], "blocking": st.booleans(), "condition": _condition},
    ),
    st.fixed_dictionaries(
        {
            "kind": st.just("checkpoint"),
            "id": _ids,
            "message": st.just("m"),
            "options": st.lists(_option, min_size=1, max_size=3),
        },
        optional={
            "defaultOption": st.just("o"),
            "autoAdvanceMs": st.sampled_from([5, 5, 0]),
            "blocking": st.booleans(),
            **_gates,
        },
    ),
)
_leaf_steps = st.one_of(_technique_step, _action_step, _checkpoint_step)
_noise = st.fixed_dictionaries({}, optional={"bogus": st.just(1), "kind": st.just("other")})
_steps = st.recursive(
    st.one_of(_leaf_steps, st.builds(lambda step, noise: {**step, **noise}, _leaf_steps, _noise)),
    lambda inner: st.fixed_dictionaries(
        {
            "kind": st.just("loop"),
            "id": _ids,
            "loopType": st.sampled_from(["forEach", "while", "doWhile"]),
            "steps": st.lists(inner, max_size=3),
        },
        optional={"variable": st.just("item_x"), "over": st.just("list_x"), "maxIterations": st.just(3), **_gates},
    ),
    max_leaves=6,
)
_activities = st.fixed_dictionaries(
    {
        "id": st.sampled_from(["a", "b"]),
        "version": st.sampled_from(["1.0.0", "1.0.0", "1.0"]),
        "name": st.just("A"),
        "steps": st.lists(_steps, min_size=1, max_size=4),
    },
    optional={
        "transitions": st.lists(
            st.fixed_dictionaries(
                {"to": st.sampled_from(["a", "b"])}, optional={"condition": _condition, "isDefault": st.booleans()}
            ),
            max_size=2,
        ),
        "decisions": st.lists(
            st.fixed_dictionaries(
                {
                    "id": st.just("d"),
                    "name": st.just("D"),
                    "branches": st.lists(
                        st.fixed_dictionaries(
                            {"id": st.just("x"), "label": st.just("X")},
                            optional={"transitionTo": st.just("b"), "condition": _condition},
                        ),
                        min_size=1,
                        max_size=3,
                    ),
                }
            ),
            max_size=1,
        ),
        "bundleTechniques": st.fixed_dictionaries({"maxChars": st.sampled_from([0, 10, 10, -1])}),
        "techniques": st.lists(st.sampled_from(["t", "g::op", "nope"]), max_size=2),
    },
)
_MANIFEST = """\
id: w
version: 1.0.0
title: W
fragments:
  rules: {r: [one, two]}
  checkpoints:
    frag:
      message: m
      options: [{id: o, label: O, effect: {transitionTo: b}}]
      condition: {type: simple, variable: a, operator: exists}
rules:
  workflow: [{ref: r}, plain]
"""


@settings(max_examples=_TREE_EXAMPLES, deadline=None)
@given(st.lists(_activities, min_size=1, max_size=3))
def test_structured_activity_documents_never_crash(activities: list[dict[str, object]]) -> None:
    root = Path(tempfile.mkdtemp(prefix="wf-fuzz-"))
    try:
        (root / "w" / "activities").mkdir(parents=True)
        (root / "w" / "workflow.yaml").write_text(_MANIFEST, encoding="utf-8")
        for index, activity in enumerate(activities, start=1):
            name = f"{index:02d}-{activity['id']}.yaml"
            (root / "w" / "activities" / name).write_text(yaml.safe_dump(activity), encoding="utf-8")
        _exercise(root)
        corpus = load_corpus(root)
        workflow = corpus.workflows["w"]
        assert len(workflow.activities) + len(workflow.activity_load_errors) == len(activities)
    finally:
        shutil.rmtree(root)
