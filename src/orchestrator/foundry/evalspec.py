"""``eval.json``: the validation spec of one benchmark, checked rule by rule with dotted-path errors.

The file is decoded to plain values first and then walked by hand, so one pass reports every problem
(``validation.command: required``, ``validation.expectedFiles[1]: expected a string, got number``)
rather than only the first one msgspec would stop at. Unknown keys are tolerated at every level: a
newer spec still loads here. The checked result is an immutable :class:`EvalSpec`.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec

from orchestrator.vocabulary import json_type

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "EvalSpec",
    "EvalSpecError",
    "ValidationSpec",
    "load_eval",
    "parse_eval",
]

#: ``validation.timeoutSeconds`` when the file does not set it.
DEFAULT_TIMEOUT_SECONDS = 60.0

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ValidationSpec(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    """How the final workspace is judged: files that must exist, then one shell command."""

    command: str
    expected_exit_code: float = 0
    expected_files: tuple[str, ...] = ()
    #: Normalized: a single string in the file becomes a one-element tuple.
    expected_stdout_contains: tuple[str, ...] = ()
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    #: Whether the file set ``timeoutSeconds`` (the timeout reason says so).
    timeout_given: bool = False


class EvalSpec(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    """A checked ``eval.json``."""

    task_type: str
    description: str
    validation: ValidationSpec
    human_responses: dict[str, str] = {}


class EvalSpecError(ValueError):
    """An ``eval.json`` that breaks the schema; ``problems`` has one entry per finding, each path first."""

    def __init__(self, problems: list[str], source: str = "eval.json") -> None:
        self.problems = list(problems)
        self.source = source
        super().__init__(f"{source}: " + "; ".join(self.problems))


def _key_path(parent: str, key: str) -> str:
    """``parent.key`` for identifier-like keys, else ``parent["the key"]`` (JSON-quoted)."""
    if _IDENTIFIER.match(key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{msgspec.json.encode(key).decode()}]"


class _Checker:
    """Collects problems while pulling typed values out of the decoded document."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def fail(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}")

    def string(self, obj: dict[str, Any], key: str, path: str, *, required: bool) -> str | None:
        if key not in obj:
            if required:
                self.fail(path, "required (a non-empty string)")
            return None
        value = obj[key]
        if not isinstance(value, str):
            self.fail(path, f"expected a string, got {json_type(value)}")
            return None
        if not value.strip():
            self.fail(path, "must not be empty")
            return None
        return value

    def number(self, obj: dict[str, Any], key: str, path: str) -> float | None:
        if key not in obj:
            return None
        value = obj[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(path, f"expected a finite number, got {json_type(value)}")
            return None
        if not math.isfinite(value):
            self.fail(path, "expected a finite number")
            return None
        return value

    def strings(self, value: Any, path: str) -> tuple[str, ...] | None:
        if not isinstance(value, list):
            self.fail(path, f"expected an array of strings, got {json_type(value)}")
            return None
        good = True
        for index, item in enumerate(value):
            if not isinstance(item, str):
                self.fail(f"{path}[{index}]", f"expected a string, got {json_type(item)}")
                good = False
        return tuple(value) if good else None


def _check_files(checker: _Checker, files: tuple[str, ...], path: str) -> tuple[str, ...]:
    for index, name in enumerate(files):
        pure = PurePosixPath(name)
        if not name.strip():
            checker.fail(f"{path}[{index}]", "must not be empty")
        elif pure.is_absolute() or ".." in pure.parts:
            checker.fail(f"{path}[{index}]", f"{name!r} must be a relative path inside the workspace")
    return files


def _check_validation(checker: _Checker, value: Any) -> ValidationSpec | None:
    if not isinstance(value, dict):
        checker.fail("validation", f"expected an object, got {json_type(value)}")
        return None
    before = len(checker.problems)
    command = checker.string(value, "command", "validation.command", required=True)
    exit_code = checker.number(value, "expectedExitCode", "validation.expectedExitCode")
    files: tuple[str, ...] = ()
    if "expectedFiles" in value:
        files = checker.strings(value["expectedFiles"], "validation.expectedFiles") or ()
        files = _check_files(checker, files, "validation.expectedFiles")
    needles: tuple[str, ...] = ()
    if "expectedStdoutContains" in value:
        raw = value["expectedStdoutContains"]
        if isinstance(raw, str):
            needles = (raw,)
        elif isinstance(raw, list):
            needles = checker.strings(raw, "validation.expectedStdoutContains") or ()
        else:
            checker.fail(
                "validation.expectedStdoutContains", f"expected a string or an array of strings, got {json_type(raw)}"
            )
    timeout = checker.number(value, "timeoutSeconds", "validation.timeoutSeconds")
    if timeout is not None and timeout <= 0:
        checker.fail("validation.timeoutSeconds", "must be greater than 0")
    if len(checker.problems) > before or command is None:
        return None
    return ValidationSpec(
        command=command,
        expected_exit_code=0 if exit_code is None else exit_code,
        expected_files=files,
        expected_stdout_contains=needles,
        timeout_seconds=DEFAULT_TIMEOUT_SECONDS if timeout is None else timeout,
        timeout_given=timeout is not None,
    )


def _check_responses(checker: _Checker, value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        checker.fail("humanResponses", f"expected an object of question → answer strings, got {json_type(value)}")
        return {}
    for question, answer in value.items():
        if not isinstance(answer, str):
            checker.fail(_key_path("humanResponses", question), f"expected a string, got {json_type(answer)}")
    return {q: a for q, a in value.items() if isinstance(a, str)}


def parse_eval(data: bytes | str, source: str = "eval.json") -> EvalSpec:
    """Check ``eval.json`` text against the schema; raises :class:`EvalSpecError` listing every problem."""
    try:
        # The standard library, not msgspec: it turns 1e999 and NaN into floats the finiteness rule
        # can then name by path, where msgspec would only say "out of range" for the whole document.
        document = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise EvalSpecError([f"(root): not valid JSON ({exc})"], source) from None
    if not isinstance(document, dict):
        raise EvalSpecError([f"(root): expected a JSON object, got {json_type(document)}"], source)
    checker = _Checker()
    task_type = checker.string(document, "taskType", "taskType", required=True)
    description = checker.string(document, "description", "description", required=True)
    validation: ValidationSpec | None = None
    if "validation" not in document:
        checker.fail("validation", "required (an object with at least `command`)")
    else:
        validation = _check_validation(checker, document["validation"])
    responses = _check_responses(checker, document["humanResponses"]) if "humanResponses" in document else {}
    if checker.problems or task_type is None or description is None or validation is None:
        raise EvalSpecError(checker.problems, source)
    return EvalSpec(task_type=task_type, description=description, validation=validation, human_responses=responses)


def load_eval(path: Path) -> EvalSpec:
    """Read and check one ``eval.json``; an unreadable file is an :class:`EvalSpecError` too."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EvalSpecError([f"(root): cannot be read ({exc.strerror or exc})"], str(path)) from None
    return parse_eval(data, str(path))
