"""The project's own default workflows (``workflows/``): they parse, load cleanly and resolve completely.

The structural tests read the files directly and need no loader; the rest load the folder with
``orchestrator.workflow.corpus.load_corpus`` and check every reference the server will follow at run time.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

WORKFLOWS = Path(__file__).resolve().parents[2] / "workflows"
SHIPPED = ("meta", "code-review", "bug-fix")

YAML_FILES = sorted(p for p in WORKFLOWS.rglob("*.y*ml"))
TECHNIQUE_FILES = sorted(p for p in WORKFLOWS.glob("*/techniques/**/*.md") if p.name != "README.md")
FRONTMATTER = re.compile(r"\A---\r?\n(.*?)\r?\n---\r?\n", re.S)


def _rel(path: Path) -> str:
    return path.relative_to(WORKFLOWS).as_posix()


# --------------------------------------------------------------------------------------------------
# Structural: no loader needed
# --------------------------------------------------------------------------------------------------


def test_the_three_workflows_ship() -> None:
    for name in SHIPPED:
        assert (WORKFLOWS / name / "workflow.yaml").is_file(), name
    assert (WORKFLOWS / "README.md").is_file()
    assert len(YAML_FILES) >= 15
    assert len(TECHNIQUE_FILES) >= 40


@pytest.mark.parametrize("path", YAML_FILES, ids=_rel)
def test_yaml_parses(path: Path) -> None:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(document, dict), "top level must be a mapping"
    assert document.get("id"), "every workflow and activity file has an id"
    assert re.fullmatch(r"\d+\.\d+\.\d+", str(document.get("version"))), "version must be X.Y.Z"


@pytest.mark.parametrize("path", TECHNIQUE_FILES, ids=_rel)
def test_technique_has_version_and_capability(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    match = FRONTMATTER.match(text)
    assert match, "technique must start with --- frontmatter"
    front = yaml.safe_load(match.group(1))
    version = (front or {}).get("metadata", {}).get("version")
    assert re.fullmatch(r"\d+\.\d+\.\d+", str(version)), f"metadata.version missing or malformed: {version!r}"
    body = text[match.end() :]
    sections = re.split(r"^## +", body, flags=re.M)
    titles = {s.split("\n", 1)[0].strip().lower(): s.split("\n", 1)[1] if "\n" in s else "" for s in sections[1:]}
    assert "capability" in titles, "## Capability section missing"
    assert titles["capability"].strip(), "## Capability section is empty"
    assert not {"input", "output", "output(s)"} & set(titles), "use the plural ## Inputs / ## Outputs"


# --------------------------------------------------------------------------------------------------
# Loaded: the server's own loader and resolvers
# --------------------------------------------------------------------------------------------------

try:
    from orchestrator.workflow import corpus as corpus_api
except ImportError as exc:  # keep the structural tests above running; every loaded test fails loudly
    corpus_api = None  # type: ignore[assignment]
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None


@pytest.fixture(scope="module")
def corpus() -> corpus_api.Corpus:
    if corpus_api is None:
        pytest.fail(f"orchestrator.workflow.corpus cannot be imported: {_IMPORT_ERROR}")
    return corpus_api.load_corpus(WORKFLOWS)


def _workflow(corpus: corpus_api.Corpus, workflow_id: str) -> corpus_api.Workflow:
    workflow = corpus.get_workflow(workflow_id)
    assert workflow is not None, workflow_id
    return workflow


def _activity(workflow: corpus_api.Workflow, activity_id: str) -> corpus_api.Activity:
    activity = workflow.get_activity(activity_id)
    assert activity is not None, f"{workflow.id}/{activity_id}"
    return activity


def _all_activities(corpus: corpus_api.Corpus) -> list[tuple[corpus_api.Workflow, corpus_api.Activity]]:
    return [(wf, act) for wf in corpus.workflows.values() for act in wf.activities]


def test_loads_without_errors(corpus: corpus_api.Corpus) -> None:
    assert corpus.load_errors == ()
    assert corpus.technique_errors() == []
    assert set(corpus.workflows) == set(SHIPPED)
    for workflow in corpus.workflows.values():
        assert workflow.activity_load_errors == (), workflow.id
        assert workflow.initial_activity and workflow.get_activity(workflow.initial_activity), workflow.id
    assert sorted(wf.id for wf in corpus.listed_workflows()) == ["bug-fix", "code-review"]
    assert _workflow(corpus, "meta").hidden


def test_activity_counts_and_order(corpus: corpus_api.Corpus) -> None:
    assert [a.id for a in _workflow(corpus, "meta").activities] == [
        "select-workflow",
        "dispatch-client-workflow",
        "end-workflow",
    ]
    assert [a.id for a in _workflow(corpus, "code-review").activities] == [
        "scope-review",
        "read-changes",
        "assess",
        "report",
    ]
    assert [a.id for a in _workflow(corpus, "bug-fix").activities] == [
        "reproduce",
        "diagnose",
        "fix",
        "verify",
        "report",
        "assess",
    ]


def test_every_core_technique_resolves_from_meta(corpus: corpus_api.Corpus) -> None:
    core = dict.fromkeys([*corpus_api.CORE_ORCHESTRATOR, *corpus_api.CORE_WORKER])
    for workflow_id in SHIPPED:
        for ref in core:
            resolved = corpus_api.resolve_technique(corpus, ref, workflow_id=workflow_id)
            assert resolved is not None, f"{ref} unresolved for {workflow_id}"
            assert resolved.namespace == "meta", ref
            payload = corpus_api.technique_payload(resolved)
            assert payload["capability"], ref


def test_bundles_have_nothing_unresolved(corpus: corpus_api.Corpus) -> None:
    for workflow in corpus.workflows.values():
        orchestrator = corpus_api.bundle_for(
            corpus, workflow.id, workflow.techniques_workflow, corpus_api.CORE_ORCHESTRATOR
        )
        assert "unresolved" not in orchestrator, (workflow.id, orchestrator.get("unresolved"))
        for activity in workflow.activities:
            worker = corpus_api.bundle_for(
                corpus,
                activity.source_workflow,
                [*workflow.techniques_activity, *activity.techniques],
                corpus_api.CORE_WORKER,
                executing_workflow_id=workflow.id,
            )
            assert "unresolved" not in worker, (workflow.id, activity.id, worker.get("unresolved"))


def test_meta_first_workflow_technique_is_start_session(corpus: corpus_api.Corpus) -> None:
    meta = _workflow(corpus, "meta")
    assert meta.techniques_workflow[:1] == ("start-session",)
    resolved = corpus_api.resolve_technique(corpus, "start-session", workflow_id="meta")
    assert resolved is not None and resolved.namespace == "meta"


def test_every_step_technique_resolves(corpus: corpus_api.Corpus) -> None:
    seen = 0
    for workflow, activity in _all_activities(corpus):
        for flat in activity.flattened_steps():
            step = flat.step
            if not isinstance(step, corpus_api.TechniqueStep):
                continue
            ref = corpus_api.step_technique_ref(step)
            resolved = corpus_api.resolve_technique(
                corpus,
                ref,
                workflow_id=activity.source_workflow,
                activity_id=activity.id,
                executing_workflow_id=workflow.id,
            )
            assert resolved is not None, f"{workflow.id}/{activity.id}/{step.id}: {ref}"
            seen += 1
    assert seen >= 15


def test_prefixed_technique_comes_from_code_review(corpus: corpus_api.Corpus) -> None:
    step = _activity(_workflow(corpus, "bug-fix"), "diagnose").find_step("read-suspect-diff")
    assert step is not None
    ref = corpus_api.step_technique_ref(step.step)
    assert ref == "code-review::review::read-diff"
    resolved = corpus_api.resolve_technique(corpus, ref, workflow_id="bug-fix", activity_id="diagnose")
    assert resolved is not None
    assert resolved.namespace == "code-review"
    assert resolved.technique_id == "review::read-diff"
    # Root contract from the executing workflow, group contract from where the file lives.
    assert resolved.scopes == ("bug-fix", "code-review::review")


def test_group_contract_initial_and_final_wrap_the_protocol(corpus: corpus_api.Corpus) -> None:
    resolved = corpus_api.resolve_technique(corpus, "review::read-diff", workflow_id="code-review")
    assert resolved is not None
    titles = [block.get("title") for block in corpus_api.technique_payload(resolved)["protocol"]]
    assert titles[0] == "Initial"
    assert titles[-1] == "Final"
    assert len(titles) >= 3


def test_every_technique_resource_link_resolves(corpus: corpus_api.Corpus) -> None:
    links = 0
    for namespace, index in corpus.techniques.items():
        entries = [*index.values()]
        root = corpus.root_contracts.get(namespace)
        if root is not None:
            entries.append(root)
        for entry in entries:
            technique = entry.technique
            assert technique is not None, entry.file
            for link in technique.resource_links:
                corpus_api.find_resource(corpus, link, workflow_id=namespace)
                links += 1
    assert links >= 15
    # Links from a technique borrowed across workflows are qualified so they still resolve.
    resolved = corpus_api.resolve_technique(corpus, "code-review::review::read-diff", workflow_id="bug-fix")
    assert resolved is not None
    refs = corpus_api.technique_resource_refs(resolved)
    assert refs and all(r.startswith("code-review/") for r in refs)
    for ref in refs:
        corpus_api.find_resource(corpus, ref, workflow_id="bug-fix")


def test_every_transition_target_exists(corpus: corpus_api.Corpus) -> None:
    for workflow, activity in _all_activities(corpus):
        ids = {a.id for a in workflow.activities}
        targets = corpus_api.exits(activity)
        assert targets, f"{workflow.id}/{activity.id} has no exits"
        for exit_ in targets:
            assert exit_["to"] == corpus_api.TERMINAL_ACTIVITY or exit_["to"] in ids, (
                f"{workflow.id}/{activity.id} -> {exit_['to']}"
            )
        defaults = [t for t in activity.transitions if t.is_default]
        assert len(defaults) == 1, f"{workflow.id}/{activity.id} needs exactly one default transition"


def test_each_workflow_can_end(corpus: corpus_api.Corpus) -> None:
    for workflow in corpus.workflows.values():
        ends = [
            a.id
            for a in workflow.activities
            if any(e["to"] == corpus_api.TERMINAL_ACTIVITY for e in corpus_api.exits(a))
        ]
        assert ends, workflow.id


def test_every_ref_resolves(corpus: corpus_api.Corpus) -> None:
    for workflow, activity in _all_activities(corpus):
        for checkpoint in activity.checkpoints():
            assert checkpoint.ref is None or checkpoint.message, f"{workflow.id}/{activity.id}/{checkpoint.id}"
            assert checkpoint.message and checkpoint.options, f"{workflow.id}/{activity.id}/{checkpoint.id}"
    meta = _workflow(corpus, "meta")
    code_review = _workflow(corpus, "code-review")
    bug_fix = _workflow(corpus, "bug-fix")
    # meta:: refs (rules and a checkpoint) materialise meta's fragments.
    for text in meta.fragments.rules["ask-before-destructive"]:
        assert text in bug_fix.rules.workflow
    for text in meta.fragments.rules["evidence-over-assertion"]:
        assert text in bug_fix.rules.activity
    plan = _activity(bug_fix, "diagnose").find_checkpoint("confirm-fix-plan")
    assert plan is not None
    assert [o.id for o in plan.options or ()] == [o.id for o in meta.fragments.checkpoints["confirm-proceed"].options]
    # Bare refs: the declaring workflow first, then meta.
    assert code_review.fragments.rules["review-tone"][0] in code_review.rules.workflow
    assert meta.fragments.rules["stay-in-scope"][0] in code_review.rules.activity
    findings = _activity(code_review, "assess").find_checkpoint("confirm-findings")
    assert findings is not None and findings.message == code_review.fragments.checkpoints["confirm-findings"].message


def test_when_expressions_parse(corpus: corpus_api.Corpus) -> None:
    gated = 0
    for _wf, activity in _all_activities(corpus):
        for flat in activity.flattened_steps():
            if flat.step.when is not None:
                corpus_api.parse_when(flat.step.when)
                gated += 1
    assert gated >= 5


def test_borrowed_activity_keeps_its_source(corpus: corpus_api.Corpus) -> None:
    bug_fix = _workflow(corpus, "bug-fix")
    assess = _activity(bug_fix, "assess")
    assert assess.source_workflow == "code-review"
    assert assess.artifact_prefix == "03"
    # Its bare checkpoint ref was resolved against code-review, the workflow that declares it.
    findings = assess.find_checkpoint("confirm-findings")
    assert findings is not None
    assert findings.message == _workflow(corpus, "code-review").fragments.checkpoints["confirm-findings"].message
    # Every variable the borrowed activity reads or writes is declared in the borrowing workflow.
    declared = {v.name for v in bug_fix.variables}
    for flat in assess.flattened_steps():
        step = flat.step
        if isinstance(step, corpus_api.TechniqueStep) and not isinstance(step.technique, str):
            for value in (*(step.technique.inputs or {}).values(), *(step.technique.outputs or {}).values()):
                name = str(value).strip("{}")
                assert name in declared, name
    assert [a.source_workflow for a in bug_fix.activities if a.id != "assess"] == ["bug-fix"] * 5


def test_meta_bootstrap_resources(corpus: corpus_api.Corpus) -> None:
    protocol = corpus_api.find_resource(corpus, "meta/bootstrap-protocol", workflow_id="code-review")
    assert "# Bootstrap Protocol" in protocol.body
    for tool in ("list_workflows", "start_session", "get_workflow", "next_activity", "get_activity"):
        assert tool in protocol.body, tool
    lexicon = corpus_api.find_resource(corpus, "meta/resume-intent-lexicon#phrases", workflow_id="meta")
    phrases = [line[2:].strip() for line in lexicon.body.splitlines() if line.startswith("- ")]
    assert {"resume", "pick up", "continue where"} <= set(phrases)


def test_meta_end_workflow_checkpoint_cannot_be_dismissed(corpus: corpus_api.Corpus) -> None:
    end = _activity(_workflow(corpus, "meta"), "end-workflow")
    checkpoint = end.find_checkpoint("completion-confirmed")
    assert checkpoint is not None
    assert checkpoint.condition is None and checkpoint.auto_advance_ms is None
    options = {o.id: o for o in checkpoint.options or ()}
    assert options["return"].effect is not None
    assert options["return"].effect.transition_to == "dispatch-client-workflow"


def test_code_review_uses_every_construct(corpus: corpus_api.Corpus) -> None:
    workflow = _workflow(corpus, "code-review")
    assert workflow.version == "1.0.0" and {"review", "quality"} <= set(workflow.tags)
    assert all(v.has_default for v in workflow.variables)
    assert workflow.techniques_workflow and workflow.techniques_activity
    assert workflow.rules.workflow and workflow.rules.activity and workflow.rules.universal
    steps = [f.step for a in workflow.activities for f in a.flattened_steps()]
    kinds = {type(s).__name__ for s in steps}
    assert kinds == {"TechniqueStep", "ActionStep", "CheckpointStep", "LoopStep"}
    bound = [s for s in steps if isinstance(s, corpus_api.TechniqueStep) and not isinstance(s.technique, str)]
    assert any(s.technique.inputs for s in bound) and any(s.technique.outputs for s in bound)
    checkpoints = [s for s in steps if isinstance(s, corpus_api.CheckpointStep)]
    effects = [o.effect for c in checkpoints for o in c.options or () if o.effect is not None]
    assert any(e.set_variable for e in effects)
    assert any(e.transition_to for e in effects)
    assert any(e.record_reply for e in effects)
    assert any(c.auto_advance_ms and c.default_option for c in checkpoints)
    assert any(c.condition is not None for c in checkpoints)
    assert any(isinstance(s, corpus_api.LoopStep) and s.loop_type == "forEach" for s in steps)
    assert any(a.decisions for a in workflow.activities)
    assert any(a.bundle_max_chars is not None for a in workflow.activities)
    assert any(t.condition is not None for a in workflow.activities for t in a.transitions)
    report = corpus_api.resolve_technique(corpus, "review::write-report", workflow_id="code-review")
    assert report is not None
    artifact = next(o for o in report.technique.outputs if o.artifact)
    assert (artifact.artifact, artifact.audience) == ("review-report.md", "human")


def test_catalog_and_lexicon_drive_the_bootstrap_match(corpus: corpus_api.Corpus) -> None:
    bootstrap = pytest.importorskip("orchestrator.workflow.tools.bootstrap")
    catalog = corpus.listed_workflows()
    assert bootstrap.match_client("please review PR 42 before I merge it", catalog).workflow_id == "code-review"
    assert bootstrap.match_client("fix the crash when saving an empty file", catalog).workflow_id == "bug-fix"
    assert bootstrap.match_client("help me debug the failing upload", catalog).workflow_id == "bug-fix"
    assert bootstrap.match_client("improve the quality of this module", catalog).decision is not None
    phrases = bootstrap.resume_phrases(corpus.resources["meta"]["resume-intent-lexicon"].body)
    assert {"resume", "pick up", "where we left off"} <= set(phrases)
    assert not {"start", "begin", "new"} & set(phrases)
    assert bootstrap.states_resume_intent("Let's pick up where we left off on the login bug", phrases)
    assert not bootstrap.states_resume_intent("fix the login bug", phrases)
    assert not bootstrap.states_resume_intent("review the change that adds resumable uploads", phrases)


def _names_used(activity: corpus_api.Activity) -> set[str]:
    """Bag variables an activity reads or writes through bindings, gates, loops, effects and exits."""
    names: set[str] = set()
    loop_vars = {f.step.variable for f in activity.flattened_steps() if isinstance(f.step, corpus_api.LoopStep)}
    for flat in activity.flattened_steps():
        step = flat.step
        if step.when is not None:
            names |= {path.split(".")[0] for path in corpus_api.when_variables(corpus_api.parse_when(step.when))}
        if step.condition is not None:
            names |= corpus_api.condition_variables(step.condition)
        if isinstance(step, corpus_api.TechniqueStep) and not isinstance(step.technique, str):
            for value in (step.technique.inputs or {}).values():
                names |= set(re.findall(r"\{([a-z_][a-z0-9_]*)\}", str(value)))
                if re.fullmatch(r"[a-z][a-z0-9_]*", str(value)):
                    names.add(str(value))
            names |= set((step.technique.outputs or {}).values())
        if isinstance(step, corpus_api.LoopStep) and step.over:
            names.add(step.over)
        if isinstance(step, corpus_api.CheckpointStep):
            names |= set(re.findall(r"\{([a-z_][a-z0-9_]*)\}", step.message or ""))
            for option in step.options or ():
                if option.effect is not None:
                    names |= set(option.effect.set_variable or {})
                    if option.effect.record_reply:
                        names.add(option.effect.record_reply)
    for transition in activity.transitions:
        if transition.condition is not None:
            names |= corpus_api.condition_variables(transition.condition)
    for decision in activity.decisions:
        for branch in decision.branches:
            if branch.condition is not None:
                names |= corpus_api.condition_variables(branch.condition)
    return names - loop_vars


def test_every_variable_an_activity_uses_is_declared(corpus: corpus_api.Corpus) -> None:
    for workflow, activity in _all_activities(corpus):
        declared = {v.name for v in workflow.variables}
        missing = _names_used(activity) - declared
        assert not missing, f"{workflow.id}/{activity.id} uses undeclared {sorted(missing)}"
