"""What a workflow or activity definition must satisfy beyond its schema, checked while it loads.

Pure: each check takes decoded values and raises ``LoadFailure`` with a user-facing message; the loader
turns that into a ``load_errors`` / ``activity_load_errors`` entry. Values a definition carries to the
agent (defaults, action values, technique inputs, ``setVariable`` effects) must be plain JSON data;
variable names are snake_case with at least two words, or one of ``EXEMPT_VARIABLE_NAMES``.
"""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec
import yaml

from orchestrator.workflow.corpus.schema import CheckpointStep, LoopStep, TechniqueStep, WorkflowDef

__all__ = ["EXEMPT_VARIABLE_NAMES", "PARSE_ERRORS", "LoadFailure", "check_activity_values", "check_workflow_def"]

_QUALIFIED_NAME = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+$")
# Bare single words a variable may still be named (plural collections, mirrors of external field names,
# the cross-workflow dispatch name, discriminators), as the reference corpus's identifier rule allows.
# fmt: off
EXEMPT_VARIABLE_NAMES = frozenset(
    (
        "requirements", "features", "exclusions", "dimensions", "tasks", "results", "submodules", "paths", "fields",
        "filters", "stats", "effects", "substitutions", "findings", "assumptions", "subsystems", "transitions",
        "options", "branches", "agents", "changes", "failures", "items", "files", "gaps", "outcomes", "body", "query",
        "repo", "owner", "number", "title", "branch", "diff", "limit", "name", "sha", "url", "head", "base", "ref",
        "labels", "path", "cursor", "cql", "jql", "description", "assignee", "depth", "direction", "summary", "state",
        "target", "adr", "type", "mode", "kind",
    )
)
# fmt: on
#: What decoding a definition may raise for bad content (beyond ``LoadFailure``).
PARSE_ERRORS = (yaml.YAMLError, RecursionError, msgspec.ValidationError)


class LoadFailure(Exception):
    """A load-time problem with one workflow or activity; the message is user-facing."""


def _json_problem(value: Any) -> str | None:
    """Why ``value`` is not plain JSON data (finite numbers, string keys), or ``None``."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else "a non-finite number"
    if isinstance(value, list):
        return next((p for p in map(_json_problem, value) if p), None)
    if isinstance(value, dict):
        if any(not isinstance(k, str) for k in value):
            return "a mapping with a non-string key"
        return next((p for p in map(_json_problem, value.values()) if p), None)
    return f"a YAML {type(value).__name__} (quote it to make a string)"


def _require_json(value: Any, where: str) -> None:
    problem = _json_problem(value)
    if problem is not None:
        raise LoadFailure(f"{where} is {problem}; values must be plain JSON data")


def _check_options(options: Any, where: str) -> None:
    for option in options or ():
        if option.effect is not None and option.effect.set_variable is not None:
            _require_json(option.effect.set_variable, f"{where} option '{option.id}' setVariable")


def check_activity_values(steps: Any) -> None:
    """Every value an activity's steps carry (nested loops included) is plain JSON data."""
    for step in steps:
        where = f"step '{step.id}'"
        for action in getattr(step, "actions", None) or ():
            if action.value is not msgspec.UNSET:
                _require_json(action.value, f"{where} action value")
        if isinstance(step, CheckpointStep):
            _check_options(step.options, where)
        elif isinstance(step, TechniqueStep) and not isinstance(step.technique, str):
            _require_json(step.technique.inputs, f"{where} technique inputs")
        elif isinstance(step, LoopStep):
            check_activity_values(step.steps)


def check_workflow_def(definition: WorkflowDef) -> None:
    """A manifest's values beyond its schema: checkpoint fragment effects and variable defaults are plain
    JSON data, every variable is well named."""
    for name, fragment in ((definition.fragments.checkpoints or {}) if definition.fragments else {}).items():
        _check_options(fragment.options, f"checkpoint fragment '{name}'")
    for variable in definition.variables or ():
        if variable.default_value is not msgspec.UNSET:
            _require_json(variable.default_value, f"variable '{variable.name}' defaultValue")
        if not (_QUALIFIED_NAME.match(variable.name) or variable.name in EXEMPT_VARIABLE_NAMES):
            raise LoadFailure(
                f"variable name '{variable.name}' must be snake_case with at least two words (or an exempt bare word)"
            )
