"""Technique markdown parsing, addressing, inheritance, the delivered payload and bundles."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from tests.workflow.corpus.support import fixture_corpus, technique_md, write_tree

from orchestrator.workflow.corpus import (
    CORE_ORCHESTRATOR,
    CORE_WORKER,
    Corpus,
    ResolvedRules,
    TechniqueParseError,
    bundle_for,
    load_corpus,
    resolve_ref,
    resolve_technique,
    technique_payload,
)
from orchestrator.workflow.corpus.markdown import parse_technique


def parse(text: str):  # type: ignore[no-untyped-def]
    return parse_technique(text, namespace="ns", path="t", file="ns/techniques/t.md", is_group=False)


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    return load_corpus(fixture_corpus(tmp_path))


# ---- parsing -------------------------------------------------------------------------------------


def test_parse_inputs_outputs_protocol_rules() -> None:
    text = technique_md(
        capability="Classify.\n\nSecond paragraph.",
        inputs="""
            ### ticket_text
            Raw ticket body.

            ### hint_text
            *(optional)* A hint.

            #### Default
            `none`

            #### shape
            Free text.
        """,
        outputs="""
            ### report
            The report.

            #### artifact
            `{ticket_key}-triage.md`

            #### audience
            Human

            #### sections
            Summary and details.
        """,
        protocol="""
            ### 1. Gather
            - Read the ticket
              and its comments.
            * Note the signals.

            ### 2. Decide
            Just decide, in prose.

            Second prose paragraph.

            ### Empty
        """,
        rules="""
            ### evidence
            Cite it.

            Twice.

            ### empty-rule
        """,
    )
    technique = parse(text)
    assert technique.version == "1.0.0"
    assert technique.capability == "Classify.\n\nSecond paragraph."
    first, second = technique.inputs
    assert (first.id, first.description, first.optional) == ("ticket_text", "Raw ticket body.", False)
    assert (second.default, second.components, second.optional) == ("none", {"shape": "Free text."}, True)
    [output] = technique.outputs
    assert (output.artifact, output.audience, output.components) == (
        "{ticket_key}-triage.md",
        "human",
        {"sections": "Summary and details."},
    )
    assert [(b.title, b.steps) for b in technique.protocol] == [
        ("Gather", ("Read the ticket and its comments.", "Note the signals.")),
        ("Decide", ("Just decide, in prose.\n\nSecond prose paragraph.",)),
    ]
    assert technique.rules == {"evidence": "Cite it.\n\nTwice."}


def test_flat_protocol_is_one_untitled_block_and_prose_is_kept() -> None:
    technique = parse(technique_md(protocol="Intro line.\n\n1. One\n2. Two\n\n   More for two.\n\nTrailing prose."))
    [block] = technique.protocol
    assert block.title is None
    assert block.steps == ("Intro line.", "One", "Two\n\nMore for two.", "Trailing prose.")


def test_fenced_headings_do_not_open_sections() -> None:
    technique = parse(technique_md(protocol="1. Run:\n```sh\n## not a section\necho hi\n```\n2. Done"))
    assert [b.steps for b in technique.protocol] == [("Run:\n```sh\n## not a section\necho hi\n```", "Done")]


def test_sections_are_case_insensitive_and_links_rewritten() -> None:
    text = (
        "---\nmetadata:\n  version: 2.1.0\n---\n## capability\nUse the [scale](../resources/sev.md#scale) and "
        "[other](../../wf2/resources/x.md) but not [tech](./grp/TECHNIQUE.md).\n## PROTOCOL\n- step\n"
    )
    technique = parse(text)
    assert technique.capability == "Use the [scale](sev#scale) and [other](wf2/x) but not [tech](./grp/TECHNIQUE.md)."
    assert technique.resource_links == ("sev#scale", "wf2/x")
    assert technique.protocol[0].steps == ("step",)


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        ("## Capability\nNo frontmatter.\n", "metadata.version"),
        ("---\nmetadata:\n  version: 1.0\n---\n## Capability\nx\n", "metadata.version"),
        ("---\nmetadata: [\n---\n## Capability\nx\n", "frontmatter"),
        ("---\nmetadata:\n  version: 1.0.0\n---\n## Protocol\n- x\n", "missing '## Capability'"),
        ("---\nmetadata:\n  version: 1.0.0\n---\n## Capability\n\n## Rules\n", "empty '## Capability'"),
        (technique_md().replace("## Capability", "## Input\n\n### a\nb\n\n## Capability"), "## Input"),
        (technique_md() + "\n## Output(s)\n### a\nb\n", "## Output(s)"),
        (technique_md(outputs="### a\nb\n#### artifact\nreport.md and notes.md"), "single filename"),
        (technique_md(outputs="### a\nb\n#### artifact\nreports/x.md"), "single filename"),
        (technique_md(outputs="### a\nb\n#### artifact\nREADME"), "single filename"),
        (technique_md(outputs="### a\nb\n#### audience\nrobots"), "audience"),
    ],
)
def test_parse_errors(text: str, phrase: str) -> None:
    with pytest.raises(TechniqueParseError, match=r"ns/techniques/t\.md") as info:
        parse(text)
    assert phrase in str(info.value)


def test_broken_technique_counts_as_missing(tmp_path: Path) -> None:
    root = fixture_corpus(tmp_path, {"alpha/techniques/broken.md": "## Capability\nno frontmatter\n"})
    corpus = load_corpus(root)
    assert resolve_technique(corpus, "broken", workflow_id="alpha") is None
    [error] = corpus.technique_errors()
    assert error.file == "alpha/techniques/broken.md"
    assert bundle_for(corpus, "alpha", ["broken"], [])["unresolved"] == ["broken"]


# ---- addressing ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "workflow", "activity", "resolved_id", "key", "namespace"),
    [
        ("intake::classify", "alpha", None, "intake::classify", "intake::classify", "alpha"),
        ("engine::dispatch", "alpha", None, "engine::dispatch", "engine::dispatch", "meta"),
        ("meta::engine::dispatch", "alpha", None, "meta::engine::dispatch", "meta/engine::dispatch", "meta"),
        ("meta/engine::dispatch", "alpha", None, "meta::engine::dispatch", "meta/engine::dispatch", "meta"),
        ("alpha::sort", "beta", None, "alpha::sort", "alpha/sort", "alpha"),
        ("alpha/sort", "beta", None, "alpha::sort", "alpha/sort", "alpha"),
        ("shared-op", "alpha", None, "shared-op", "shared-op", "meta"),
        ("engine", "alpha", None, "engine", "engine", "meta"),
        ("sort", "alpha", None, "sort", "sort", "alpha"),
        ("sort", "alpha", "triage", "triage::sort", "triage::sort", "alpha"),
        ("sort", "alpha", "intake", "sort", "sort", "alpha"),
        ("classify", "alpha", "intake", "intake::classify", "intake::classify", "alpha"),
    ],
)
def test_resolution(
    corpus: Corpus, ref: str, workflow: str, activity: str | None, resolved_id: str, key: str, namespace: str
) -> None:
    resolved = resolve_technique(corpus, ref, workflow_id=workflow, activity_id=activity)
    assert resolved is not None
    assert (resolved.resolved_id, resolved.key, resolved.namespace) == (resolved_id, key, namespace)
    assert resolved.ref == ref


@pytest.mark.parametrize(
    "ref",
    ["nothing", "intake::nothing", "alpha::shared-op", "beta/sort", "a/b/c", "::x", "x::", "", "TECHNIQUE", "ghost/x"],
)
def test_unresolved(corpus: Corpus, ref: str) -> None:
    assert resolve_ref(corpus, ref, workflow_id="alpha") is None


def test_rule_refs(corpus: Corpus) -> None:
    exact = resolve_ref(corpus, "conduct::careful", workflow_id="alpha")
    assert isinstance(exact, ResolvedRules) and exact.rules == (("careful", "Check twice."),)
    prefixed = resolve_ref(corpus, "conduct::quiet", workflow_id="alpha")
    assert isinstance(prefixed, ResolvedRules)
    assert [name for name, _ in prefixed.rules] == ["quiet-mode", "quiet-logs"]
    assert resolve_technique(corpus, "conduct::careful", workflow_id="alpha") is None


# ---- inheritance and payload ---------------------------------------------------------------------


def test_payload_inherits_root_and_group_contracts(corpus: Corpus) -> None:
    resolved = resolve_technique(corpus, "engine::dispatch", workflow_id="alpha")
    assert resolved is not None
    assert resolved.scopes == ("alpha", "meta::engine")
    payload = technique_payload(resolved)
    assert list(payload) == ["id", "version", "capability", "inputs", "protocol", "rules", "inherits", "contracts"]
    assert payload["id"] == "engine::dispatch"
    assert payload["inputs"] == [{"id": "work_dir", "description": "Overridden here: the worker's directory."}]
    assert payload["protocol"] == [
        {"title": "Initial", "steps": ["Read the planning folder."]},
        {"title": "Initial", "steps": ["Load the session."]},
        {"steps": ["Pick a worker.", "Send the activity, with its bundle."]},
        {"title": "Final", "steps": ["Save the session."]},
        {"title": "Final", "steps": ["Write the summary."]},
    ]
    assert payload["rules"] == {"dispatch-one-at-a-time": "One dispatch per turn."}
    assert payload["inherits"] == ["alpha", "meta::engine"]
    assert payload["contracts"] == {
        "alpha": {
            "inputs": [
                {"id": "planning_folder_path", "description": "Where artifacts go."},
                {"id": "ticket_text", "description": "Root description, overridden by classify."},
            ],
            "rules": {"cite-evidence": "Every claim cites evidence."},
        },
        "meta::engine": {
            "inputs": [{"id": "session_key", "description": "The key of the running session."}],
            "rules": {"engine-only-once": "Run each engine step once."},
        },
    }


def test_overrides_drop_contract_entries_and_payload_is_deterministic(corpus: Corpus) -> None:
    resolved = resolve_technique(corpus, "intake::classify", workflow_id="alpha")
    assert resolved is not None
    payload = technique_payload(resolved)
    assert [i["id"] for i in payload["contracts"]["alpha"]["inputs"]] == ["planning_folder_path"]
    assert payload["outputs"] == [
        {
            "id": "severity_level",
            "description": "low|medium|high.",
            "artifact": "{ticket_key}-triage.md",
            "audience": "agent",
        }
    ]
    assert payload["inputs"][1] == {
        "id": "hint_text",
        "description": "*(optional)* A hint.",
        "default": "none",
        "components": {"shape": "Free text."},
    }
    assert payload["contracts"]["alpha::intake"] == {
        "outputs": [{"id": "intake_notes", "description": "Notes taken at intake."}],
        "rules": {"intake-polite": "Be polite at intake."},
    }
    again = technique_payload(resolve_technique(load_corpus(corpus.root), "intake::classify", workflow_id="alpha"))
    assert yaml.safe_dump(payload, sort_keys=False) == yaml.safe_dump(again, sort_keys=False)


def test_root_contract_comes_from_executing_workflow(corpus: Corpus) -> None:
    from_meta = resolve_technique(corpus, "engine::dispatch", workflow_id="meta")
    assert from_meta is not None and from_meta.scopes == ("meta", "meta::engine")
    borrowed = resolve_technique(corpus, "sort", workflow_id="alpha", executing_workflow_id="beta")
    assert borrowed is not None and borrowed.scopes == ()  # beta has no root TECHNIQUE.md


def test_payload_without_inputs_outputs(corpus: Corpus) -> None:
    resolved = resolve_technique(corpus, "shared-op", workflow_id="meta")
    assert resolved is not None
    assert technique_payload(resolved) == {
        "id": "shared-op",
        "version": "1.0.0",
        "capability": "Available to every workflow.",
        "protocol": [],
        "inherits": ["meta"],
        "contracts": {"meta": {"inputs": [{"id": "meta_root_input", "description": "Only meta techniques see this."}]}},
    }


# ---- bundles -------------------------------------------------------------------------------------


def test_bundle_collects_techniques_rules_and_unresolved(corpus: Corpus) -> None:
    bundle = bundle_for(
        corpus, "alpha", ["conduct::careful", "intake::classify", "ghost"], ["engine::dispatch", "ghost"]
    )
    assert list(bundle) == ["techniques", "rules", "unresolved"]
    assert list(bundle["techniques"]) == ["intake::classify", "engine::dispatch"]
    body = bundle["techniques"]["engine::dispatch"]
    assert "rules" not in body and all("rules" not in block for block in body["contracts"].values())
    assert [name for name, _ in bundle["rules"]] == [
        "conduct::careful",  # explicit first
        "conduct::quiet-mode",
        "conduct::quiet-logs",
        "intake::classify::severity-cited",
        "intake::intake-polite",
        "engine::dispatch::dispatch-one-at-a-time",
        "engine::engine-only-once",
        "alpha::cite-evidence",  # executing workflow root rules last
    ]
    assert bundle["unresolved"] == ["ghost"]


def test_bundle_omits_empty_buckets(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {"w/workflow.yaml": "id: w\nversion: 1.0.0\ntitle: W\n"})
    corpus = load_corpus(root)
    assert bundle_for(corpus, "w", [], []) == {}
    assert set(bundle_for(corpus, "w", [], CORE_WORKER)) == {"unresolved"}
    assert len(CORE_ORCHESTRATOR) == 20 and len(CORE_WORKER) == 8


def test_bundle_named_workflow_keys(corpus: Corpus) -> None:
    bundle = bundle_for(corpus, "beta", ["alpha::sort", "meta/engine::dispatch"], [])
    assert list(bundle["techniques"]) == ["alpha/sort", "meta/engine::dispatch"]
    assert "meta/engine::dispatch::dispatch-one-at-a-time" in [name for name, _ in bundle["rules"]]
