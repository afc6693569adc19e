"""Pure pieces of the MCP layer: parameter validation, wire rendering, bootstrap matching, caching, log cuts."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from orchestrator.workflow.corpus import load_corpus
from orchestrator.workflow.errors import ParameterError
from orchestrator.workflow.tools.bootstrap import match_client, resume_phrases, states_resume_intent
from orchestrator.workflow.tools.context import type_check
from orchestrator.workflow.tools.params import arr, integer, obj, params, string, validate_args
from orchestrator.workflow.tools.render import to_json, to_yaml
from orchestrator.workflow.tools.runtime import CorpusCache, cut_values

REPO = Path(__file__).resolve().parents[2]

SCHEMA = params(
    {
        "name": string("n", min_length=1),
        "mode": string("m", enum=("a", "b")),
        "count": integer("c", exclusive_minimum=0),
        "items": arr("i", obj({"id": string("id")}, required=("id",))),
    },
    required=("name",),
    closed=True,
)


def test_validate_args_accepts_and_drops_nulls() -> None:
    assert validate_args({"name": "x", "mode": None, "count": 2}, SCHEMA) == {"name": "x", "count": 2}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({}, "Missing required parameter 'name'"),
        ({"name": ""}, "must not be empty"),
        ({"name": "x", "mode": "c"}, "'c' is not one of [a, b]"),
        ({"name": "x", "count": True}, "expected integer, got boolean"),
        ({"name": "x", "count": 0}, "must be > 0"),
        ({"name": "x", "items": [{}]}, "Missing required parameter 'items[0].id'"),
        ({"name": "x", "items": [{"id": "a", "x": 1}]}, "Unknown parameter(s) in 'items[0]': x"),
        ({"name": "x", "zzz": 1}, "Unknown parameter(s): zzz"),
    ],
)
def test_validate_args_names_the_offending_parameter(args: dict, needle: str) -> None:
    with pytest.raises(ParameterError) as caught:
        validate_args(args, SCHEMA)
    assert needle in str(caught.value) and str(caught.value).startswith("InvalidParams: ")


def test_yaml_keeps_order_never_folds_and_uses_literal_blocks() -> None:
    long_line = "word " * 60
    text = to_yaml({"b": long_line.strip(), "a": "line one\nline two\n", "c": [1, {"d": None}]})
    assert text.splitlines()[0].startswith("b: word word") and len(text.splitlines()[0]) > 250
    assert "a: |\n  line one\n  line two" in text and not text.endswith("\n")
    assert yaml.safe_load(text)["a"] == "line one\nline two\n"
    assert to_json({"z": 1, "a": [1]}) == '{\n  "z": 1,\n  "a": [\n    1\n  ]\n}'


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


def test_type_check_and_placeholders() -> None:
    assert type_check("boolean", True) == ("boolean", False)
    assert type_check("number", "3") == ("string", True)
    assert type_check("number", "{count}") == ("string", False)
    assert type_check("array", []) == ("array", False)
    assert type_check("number", True) == ("boolean", True)


def test_corpus_cache_reloads_only_on_change_and_at_most_per_interval(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("1")
    now = [100.0]
    loads: list[int] = []

    def loader(root: Path) -> int:
        loads.append(1)
        return len(loads)

    cache = CorpusCache(tmp_path, loader, interval=1.0, monotonic=lambda: now[0])
    assert cache.get() == 1 and cache.get() == 1
    (tmp_path / "a.txt").write_text("22")
    assert cache.get() == 1  # inside the interval: not even looked at
    now[0] += 1.0
    assert cache.get() == 2 and cache.generation == 2
    now[0] += 5.0
    assert cache.get() == 2  # unchanged files: no reload


def test_cut_values_limits_every_string() -> None:
    cut = cut_values({"a": "x" * 10, "b": ["y" * 20, 3]}, limit=8)
    assert cut["a"].startswith("xxxxxxxx…[cut 2") and cut["b"][0].startswith("y" * 8) and cut["b"][1] == 3
