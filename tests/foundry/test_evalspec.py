"""``eval.json`` checks: every rule, with the dotted path each problem names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.foundry.evalspec import DEFAULT_TIMEOUT_SECONDS, EvalSpecError, load_eval, parse_eval

REPO = Path(__file__).resolve().parents[2]


def doc(**changes: Any) -> dict[str, Any]:
    """A valid document with top-level keys replaced (``None`` removes the key)."""
    base: dict[str, Any] = {
        "taskType": "quick_fix",
        "description": "Fix the bug.",
        "validation": {"command": "python -m pytest -q"},
    }
    for key, value in changes.items():
        if value is None:
            base.pop(key, None)
        else:
            base[key] = value
    return base


def validation(**fields: Any) -> dict[str, Any]:
    return {"command": "true", **fields}


def problems(document: Any) -> list[str]:
    with pytest.raises(EvalSpecError) as caught:
        parse_eval(json.dumps(document))
    return caught.value.problems


def test_minimal_document_gets_the_defaults() -> None:
    spec = parse_eval(json.dumps(doc()))
    assert spec.task_type == "quick_fix"
    assert spec.description == "Fix the bug."
    v = spec.validation
    assert v.command == "python -m pytest -q"
    assert v.expected_exit_code == 0
    assert v.expected_files == ()
    assert v.expected_stdout_contains == ()
    assert v.timeout_seconds == DEFAULT_TIMEOUT_SECONDS == 60
    assert v.timeout_given is False
    assert spec.human_responses == {}


def test_full_document() -> None:
    spec = parse_eval(
        json.dumps(
            doc(
                validation=validation(
                    expectedExitCode=3,
                    expectedFiles=["src/a.py", "out.txt"],
                    expectedStdoutContains=["2 passed", "ok"],
                    timeoutSeconds=12.5,
                ),
                humanResponses={"What language should I use?": "TypeScript."},
            )
        )
    )
    v = spec.validation
    assert (v.expected_exit_code, v.expected_files, v.expected_stdout_contains) == (
        3,
        ("src/a.py", "out.txt"),
        ("2 passed", "ok"),
    )
    assert (v.timeout_seconds, v.timeout_given) == (12.5, True)
    assert spec.human_responses == {"What language should I use?": "TypeScript."}


def test_a_single_stdout_needle_string_is_a_list_of_one() -> None:
    spec = parse_eval(json.dumps(doc(validation=validation(expectedStdoutContains="4 passed"))))
    assert spec.validation.expected_stdout_contains == ("4 passed",)


def test_unknown_keys_are_tolerated_at_every_level() -> None:
    spec = parse_eval(
        json.dumps(doc(difficulty="hard", validation=validation(retries=2, expectedFiles=["a"]), extra={"x": 1}))
    )
    assert spec.validation.expected_files == ("a",)


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (doc(taskType=None), "taskType: required (a non-empty string)"),
        (doc(taskType=7), "taskType: expected a string, got number"),
        (doc(taskType="  "), "taskType: must not be empty"),
        (doc(description=None), "description: required (a non-empty string)"),
        (doc(description=["a"]), "description: expected a string, got array"),
        (doc(description=""), "description: must not be empty"),
        (doc(validation=None), "validation: required (an object with at least `command`)"),
        (doc(validation="pytest"), "validation: expected an object, got string"),
        (doc(validation={}), "validation.command: required (a non-empty string)"),
        (doc(validation={"command": None}), "validation.command: expected a string, got null"),
        (doc(validation={"command": ""}), "validation.command: must not be empty"),
        (
            doc(validation=validation(expectedExitCode="0")),
            "validation.expectedExitCode: expected a finite number, got string",
        ),
        (
            doc(validation=validation(expectedExitCode=True)),
            "validation.expectedExitCode: expected a finite number, got boolean",
        ),
        (
            doc(validation=validation(expectedFiles="a.py")),
            "validation.expectedFiles: expected an array of strings, got string",
        ),
        (
            doc(validation=validation(expectedFiles=["a.py", 3])),
            "validation.expectedFiles[1]: expected a string, got number",
        ),
        (doc(validation=validation(expectedFiles=[""])), "validation.expectedFiles[0]: must not be empty"),
        (
            doc(validation=validation(expectedFiles=["/etc/passwd"])),
            "validation.expectedFiles[0]: '/etc/passwd' must be a relative path inside the workspace",
        ),
        (
            doc(validation=validation(expectedFiles=["ok", "../up.txt"])),
            "validation.expectedFiles[1]: '../up.txt' must be a relative path inside the workspace",
        ),
        (
            doc(validation=validation(expectedStdoutContains=5)),
            "validation.expectedStdoutContains: expected a string or an array of strings, got number",
        ),
        (
            doc(validation=validation(expectedStdoutContains=["a", None])),
            "validation.expectedStdoutContains[1]: expected a string, got null",
        ),
        (
            doc(validation=validation(timeoutSeconds="60")),
            "validation.timeoutSeconds: expected a finite number, got string",
        ),
        (doc(validation=validation(timeoutSeconds=0)), "validation.timeoutSeconds: must be greater than 0"),
        (doc(validation=validation(timeoutSeconds=-5)), "validation.timeoutSeconds: must be greater than 0"),
        (doc(humanResponses=["a"]), "humanResponses: expected an object of question → answer strings, got array"),
        (doc(humanResponses={"Which file?": 3}), 'humanResponses["Which file?"]: expected a string, got number'),
        (doc(humanResponses={"lang": None}), "humanResponses.lang: expected a string, got null"),
    ],
)
def test_each_rule_names_its_dotted_path(document: dict[str, Any], expected: str) -> None:
    assert problems(document) == [expected]


def test_non_finite_numbers_are_refused() -> None:
    # JSON has no NaN, but an overflowing literal decodes to infinity and NaN is a common extension.
    text = (
        '{"taskType": "t", "description": "d",'
        ' "validation": {"command": "c", "expectedExitCode": NaN, "timeoutSeconds": -1e999}}'
    )
    with pytest.raises(EvalSpecError) as caught:
        parse_eval(text)
    assert caught.value.problems == [
        "validation.expectedExitCode: expected a finite number",
        "validation.timeoutSeconds: expected a finite number",
    ]


def test_every_problem_is_reported_at_once() -> None:
    found = problems({"description": 1, "validation": {"expectedFiles": [1, 2]}, "humanResponses": {"q": 1}})
    assert found == [
        "taskType: required (a non-empty string)",
        "description: expected a string, got number",
        "validation.command: required (a non-empty string)",
        "validation.expectedFiles[0]: expected a string, got number",
        "validation.expectedFiles[1]: expected a string, got number",
        "humanResponses.q: expected a string, got number",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{not json", "(root): not valid JSON"),
        ("[1, 2]", "(root): expected a JSON object, got array"),
        ("null", "(root): expected a JSON object, got null"),
    ],
)
def test_the_root_must_be_a_json_object(text: str, expected: str) -> None:
    with pytest.raises(EvalSpecError) as caught:
        parse_eval(text)
    assert caught.value.problems[0].startswith(expected)


def test_load_eval_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "eval.json"
    path.write_text(json.dumps(doc(taskType=None)))
    with pytest.raises(EvalSpecError) as caught:
        load_eval(path)
    assert str(caught.value) == f"{path}: taskType: required (a non-empty string)"
    with pytest.raises(EvalSpecError, match="cannot be read"):
        load_eval(tmp_path / "missing.json")


def test_every_shipped_benchmark_is_valid() -> None:
    files = sorted((REPO / "benchmarks").glob("*/eval.json"))
    assert len(files) >= 8
    for path in files:
        spec = load_eval(path)
        assert spec.validation.command
