"""``engine/human.py``: the answers-file backend of ``orchestrator run`` (near-exact question matching)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.engine.human import AnswersFile, load_answers, normalize_question
from orchestrator.errors import ConfigError


def test_matching_ignores_case_surrounding_whitespace_and_runs_of_spaces() -> None:
    assert normalize_question("  Tabs   or\tSPACES?\n") == normalize_question("tabs or spaces?")
    assert normalize_question("tabs or spaces?") != normalize_question("tabs or spaces")


async def test_an_answers_file_answers_near_exact_questions_and_falls_back_otherwise() -> None:
    backend = AnswersFile({"Tabs or spaces?": "spaces"}, fallback="use your judgement")
    assert await backend.ask("q1", "  tabs  OR spaces? ", None) == "spaces"
    assert await backend.ask("q2", "Which editor?", "context") == "use your judgement"


def test_answers_load_from_a_json_object(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps({"Tabs or spaces?": "spaces"}))
    assert load_answers(path) == {"Tabs or spaces?": "spaces"}


@pytest.mark.parametrize("content", [None, "{not json", "[]", '{"q": 1}'])
def test_an_unusable_answers_file_is_a_config_error_naming_it(tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "answers.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=r"answers\.json"):
        load_answers(path)
