"""Tool-call checks before anything runs (pure): allow-list, JSON parsing, JSON-Schema validation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema
import msgspec

from orchestrator.conversation import ToolResult
from orchestrator.tools.base import failure

__all__ = ["SchemaCache", "parse_arguments"]

_decoder = msgspec.json.Decoder()


def parse_arguments(raw: str) -> dict[str, Any] | ToolResult:
    """The call's JSON arguments as an object, or an ``invalid_tool_call`` result saying why not."""
    text = raw.strip() or "{}"
    try:
        value = _decoder.decode(text)
    except (msgspec.DecodeError, RecursionError) as exc:
        return failure("invalid_tool_call", f"arguments are not valid JSON: {exc}", {"arguments": raw[:500]})
    if not isinstance(value, dict):
        return failure("invalid_tool_call", f"arguments must be a JSON object, got {type(value).__name__}")
    return value


class SchemaCache:
    """Compiled validators per tool name; built once per run from the Guild's manifests."""

    def __init__(self, schemas: Mapping[str, Mapping[str, Any]]) -> None:
        self._validators: dict[str, jsonschema.protocols.Validator] = {}
        for name, schema in schemas.items():
            cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
            self._validators[name] = cls(schema)

    def check(self, tool: str, arguments: dict[str, Any]) -> ToolResult | None:
        """``None`` when valid, else an ``invalid_arguments`` result naming the offending field."""
        validator = self._validators.get(tool)
        if validator is None:
            return None
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path) or "(arguments)"
        return failure("invalid_arguments", f"{where}: {error.message}", {"path": list(error.absolute_path)})
