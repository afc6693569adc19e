"""The ORCHESTRATOR_* environment overrides: strict parsing of each variable and the per-field merge.

Precedence is file first, environment second: each set, non-empty variable replaces exactly one field of
the decoded deployment. The nested ``generation`` and ``interruptTriggers`` objects merge per field,
never wholesale. An empty variable means "not set", so an override can replace a value but never clear
it. Everything here is pure: the environment arrives as a mapping, nothing is read or written.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import msgspec

from orchestrator.config.deployment import Deployment, InterruptTriggers, attr_name
from orchestrator.config.overridetable import ENV_OVERRIDES, ValueKind

__all__ = [
    "Override",
    "apply_overrides",
    "parse_finite_float",
    "parse_fraction",
    "parse_overrides",
    "parse_positive_int",
]

_TRIGGERS = "executor.interruptTriggers"
#: The variables that must arrive together to introduce an interruptTriggers section.
_TRIGGER_REQUIRED: tuple[str, ...] = (
    "ORCHESTRATOR_INTERRUPT_HANDLER_ROLE",
    "ORCHESTRATOR_INTERRUPT_EVERY_TOOL_CALLS",
    "ORCHESTRATOR_INTERRUPT_EVERY_TOKENS",
)

_DIGITS = re.compile(r"[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class Override(msgspec.Struct, frozen=True, kw_only=True):
    """One parsed override: which variable set which field to which value."""

    variable: str
    field: str
    value: str | int | float


def parse_positive_int(text: str) -> int:
    """A plain ASCII digit string with a positive value; anything else raises ``ValueError``.

    ``0x1a``, ``1e3``, ``8080.0``, ``+5``, ``-3``, ``0`` and padded values are all rejected.
    """
    if _DIGITS.fullmatch(text) is None or int(text) <= 0:
        raise ValueError(f"must be a positive integer written as plain digits (got {text!r})")
    return int(text)


def parse_finite_float(text: str) -> float:
    """A plain decimal number (optional sign, fraction, exponent) that is finite; else ``ValueError``.

    Python's ``float()`` is deliberately not trusted alone: it accepts padding, ``_`` separators,
    ``nan`` and ``inf``.
    """
    if _DECIMAL.fullmatch(text) is None:
        raise ValueError(f"must be a finite number (got {text!r})")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"must be a finite number (got {text!r})")
    return value


def parse_fraction(text: str) -> float:
    """A finite number strictly between 0 and 1; else ``ValueError``."""
    try:
        value = parse_finite_float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:
        raise ValueError(f"must be a number strictly between 0 and 1 (got {text!r})")
    return value


def _parse(kind: ValueKind, text: str) -> str | int | float:
    if kind == "positive_int":
        return parse_positive_int(text)
    if kind == "finite_float":
        return parse_finite_float(text)
    if kind == "fraction":
        return parse_fraction(text)
    return text


def parse_overrides(env: Mapping[str, str]) -> tuple[list[Override], list[str]]:
    """Parse every set, non-empty override variable; return the overrides and one problem per bad one.

    Each problem reads ``<VARIABLE>: <field> <what is wrong>``.
    """
    overrides: list[Override] = []
    problems: list[str] = []
    for row in ENV_OVERRIDES:
        text = env.get(row.variable, "")
        if text == "":
            continue
        try:
            overrides.append(Override(variable=row.variable, field=row.field, value=_parse(row.kind, text)))
        except ValueError as exc:
            problems.append(f"{row.variable}: {row.field} {exc}")
    return overrides, problems


def apply_overrides(deployment: Deployment, overrides: list[Override]) -> tuple[Deployment, list[str]]:
    """Merge the overrides into the deployment, one field each; return the result and any problems.

    The only problem that can arise here is structural: a file without ``executor.interruptTriggers``
    can only gain the section when the environment supplies its three required fields together. In that
    case the trigger overrides are left out of the result and the problem lists the missing variables.
    The merged deployment still needs :func:`~orchestrator.config.deployment.deployment_problems`.
    """
    problems: list[str] = []
    pending = list(overrides)
    triggers = [o for o in pending if o.field.startswith(f"{_TRIGGERS}.")]
    if triggers and deployment.executor.interrupt_triggers is None:
        given = {o.variable: o.value for o in triggers}
        missing = [variable for variable in _TRIGGER_REQUIRED if variable not in given]
        if missing:
            set_names = ", ".join(o.variable for o in triggers)
            problems.append(
                f"{', '.join(missing)}: must be set (the deployment file has no {_TRIGGERS} section, so "
                f"introducing one from the environment needs {', '.join(_TRIGGER_REQUIRED)} together; "
                f"got only {set_names})"
            )
            pending = [o for o in pending if o not in triggers]
        else:
            seeded = InterruptTriggers(
                handler_role=str(given["ORCHESTRATOR_INTERRUPT_HANDLER_ROLE"]),
                every_tool_calls=int(given["ORCHESTRATOR_INTERRUPT_EVERY_TOOL_CALLS"]),
                every_tokens=int(given["ORCHESTRATOR_INTERRUPT_EVERY_TOKENS"]),
            )
            deployment = _set(deployment, [*_TRIGGERS.split(".")], seeded)
    merged = deployment
    for override in pending:
        merged = _set(merged, override.field.split("."), override.value)
    return merged, problems


def _set(node: Any, parts: list[str], value: object) -> Any:
    """A copy of ``node`` with the field at the wire path ``parts`` replaced; siblings untouched."""
    name = attr_name(parts[0])
    if len(parts) == 1:
        return msgspec.structs.replace(node, **{name: value})
    return msgspec.structs.replace(node, **{name: _set(getattr(node, name), parts[1:], value)})
