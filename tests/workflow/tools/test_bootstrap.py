"""``tools/bootstrap.py``: resume phrases and client matching against the bundled workflows."""

from __future__ import annotations

from tests.workflow.conftest import REPO

from orchestrator.workflow.corpus import load_corpus
from orchestrator.workflow.tools.bootstrap import match_client, resume_phrases, states_resume_intent


def test_resume_phrases_from_bullets_and_tables() -> None:
    bullets = "# Lexicon\n\n## Phrases\n\n- resume\n- pick it up\n\n## Not resume intent\n\n- start\n"
    table = (
        "## Affirmative phrases\n\n| Family | Phrases |\n|---|---|\n| Resume | `resume`, `carry on` |\n\n"
        "## Negative cases\n\n`start`, `begin`\n"
    )
    assert resume_phrases(bullets) == ["resume", "pick it up"]
    assert resume_phrases(table) == ["resume", "carry on"]
    phrases = ["resume", "pick it up", "carry on"]
    assert states_resume_intent("Please RESUME the login work", phrases)
    assert states_resume_intent("can you pick  it\nup again", phrases)
    assert not states_resume_intent("the resumed job failed", phrases)
    assert not states_resume_intent("", phrases) and not states_resume_intent(None, phrases)


def test_match_client_pins_names_scores_or_explains() -> None:
    catalog = load_corpus(REPO / "workflows").listed_workflows()
    assert match_client("anything", catalog, "code-review").workflow_id == "code-review"
    unknown = match_client("anything", catalog, "nope")
    assert unknown.workflow_id is None and unknown.decision["kind"] == "workflow_unmatched"
    assert match_client("run bug-fix on issue 12", catalog).workflow_id == "bug-fix"
    both = match_client("bug-fix then code-review", catalog)
    assert both.decision["kind"] == "workflow_ambiguous"
    assert match_client("the checkout crashes, please debug it", catalog).workflow_id == "bug-fix"
    assert match_client("review my pull request", catalog).workflow_id == "code-review"
    tie = match_client("improve quality", catalog)
    assert tie.decision["kind"] == "workflow_ambiguous" and len(tie.decision["candidates"]) == 2
    assert match_client("bake bread", catalog).decision["kind"] == "workflow_unmatched"
