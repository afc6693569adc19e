"""Resource lookup, frontmatter handling, anchor slicing and technique resource refs."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.workflow.corpus.support import fixture_corpus

from orchestrator.workflow.corpus import (
    Corpus,
    find_resource,
    load_corpus,
    parse_resource_id,
    resolve_technique,
    technique_resource_refs,
)
from orchestrator.workflow.corpus.markdown import github_slug, slice_section
from orchestrator.workflow.errors import ResourceNotFoundError


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    return load_corpus(fixture_corpus(tmp_path))


@pytest.mark.parametrize(
    ("resource_id", "parsed"),
    [
        ("guide", (None, "guide", None)),
        ("meta/guide#first-part", ("meta", "guide", "first-part")),
        ("guide.md", (None, "guide", None)),
        ("guide.md#x", (None, "guide", "x")),
        ("a/b/c", (None, "", None)),
        (" guide # ", (None, "guide", None)),
    ],
)
def test_parse_resource_id(resource_id: str, parsed: tuple[str | None, str, str | None]) -> None:
    assert parse_resource_id(resource_id) == parsed


def test_whole_resource_strips_frontmatter(corpus: Corpus) -> None:
    found = find_resource(corpus, "meta/guide", workflow_id="alpha")
    assert (found.id, found.version, found.resource_id) == ("guide", "1.2.3", "meta/guide")
    assert found.body.startswith("# Guide") and "---" not in found.body
    local = find_resource(corpus, "rubric.md", workflow_id="alpha")
    assert (local.id, local.version) == ("rubric", "0.3.0")  # metadata.version fallback


def test_lookup_by_frontmatter_name_and_missing(corpus: Corpus) -> None:
    by_name = find_resource(corpus, "field-notes", workflow_id="alpha")
    assert (by_name.id, by_name.body) == ("field-notes", "Body of field notes.")
    by_stem = find_resource(corpus, "field", workflow_id="alpha")
    assert by_stem.id == "field-notes"
    with pytest.raises(ResourceNotFoundError, match="Resource not found: nope in workflow alpha"):
        find_resource(corpus, "nope", workflow_id="alpha")
    with pytest.raises(ResourceNotFoundError, match="Resource not found: guide in workflow alpha"):
        find_resource(corpus, "guide", workflow_id="alpha")  # no fallback to meta for resources
    with pytest.raises(ResourceNotFoundError, match="Resource not found"):
        find_resource(corpus, "README", workflow_id="alpha")
    with pytest.raises(ResourceNotFoundError, match="Resource not found"):
        find_resource(corpus, "ghost/x", workflow_id="alpha")


def test_anchor_slices(corpus: Corpus) -> None:
    first = find_resource(corpus, "meta/guide#first-part", workflow_id="alpha").body
    assert first == "## First Part\n\nText one.\n\n### Detail\n\nDeeper."
    detail = find_resource(corpus, "meta/guide#detail", workflow_id="alpha").body
    assert detail == "### Detail\n\nDeeper."
    scale = find_resource(corpus, "rubric#scale", workflow_id="alpha").body
    assert scale.startswith("## Scale") and scale.endswith("```md")
    with pytest.raises(ResourceNotFoundError, match="Section '#not-a-heading' not found"):
        find_resource(corpus, "rubric#not-a-heading", workflow_id="alpha")  # fenced headings never match


def test_slug_and_first_match_wins() -> None:
    assert github_slug(" Review Comment Template ") == "review-comment-template"
    assert github_slug("What's `new`? (v2)") == "whats-new-v2"
    assert github_slug("A  --  B") == "a----b"
    body = "# Top\n## Same\none\n## Same\ntwo\n# Next\n"
    assert slice_section(body, "same") == "## Same\none"
    assert slice_section(body, "top") == "# Top\n## Same\none\n## Same\ntwo"
    assert slice_section(body, "next") == "# Next"
    assert slice_section(body, "missing") is None


def test_technique_resource_refs_qualify_foreign_links(corpus: Corpus) -> None:
    local = resolve_technique(corpus, "intake::classify", workflow_id="alpha")
    assert local is not None
    assert technique_resource_refs(local) == ["rubric#scale", "meta/guide"]
    foreign = resolve_technique(corpus, "alpha::intake::classify", workflow_id="beta")
    assert foreign is not None
    assert technique_resource_refs(foreign) == ["alpha/rubric#scale", "meta/guide"]
