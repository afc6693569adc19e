"""Explicit JSON schemas for tool parameters, and the validator that enforces them before a handler runs.

The schemas are advertised verbatim in ``tools/list``; ``validate_args`` implements the subset they use
(``type``, ``enum``, ``minimum``, ``exclusiveMinimum``, ``minLength``, ``minItems``, ``items``, ``properties``,
``required``, ``additionalProperties: false``) and raises ``ParameterError`` naming the offending parameter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from orchestrator.vocabulary import json_type
from orchestrator.workflow.errors import ParameterError

__all__ = [
    "AGENT_ID",
    "SESSION_INDEX",
    "arr",
    "boolean",
    "integer",
    "number",
    "obj",
    "params",
    "string",
    "validate_args",
]

Schema = dict[str, Any]


def string(
    description: str, *, enum: Sequence[str] | None = None, min_length: int | None = None, path: bool = False
) -> Schema:
    """A string schema; ``path`` marks a filesystem path or folder name (``format: path``): no NUL byte, no
    component longer than the filesystem allows."""
    out: Schema = {"type": "string", "description": description}
    if path:
        out["format"] = "path"
    if enum is not None:
        out["enum"] = list(enum)
    if min_length is not None:
        out["minLength"] = min_length
    return out


def integer(description: str, *, minimum: int | None = None, exclusive_minimum: int | None = None) -> Schema:
    out: Schema = {"type": "integer", "description": description}
    if minimum is not None:
        out["minimum"] = minimum
    if exclusive_minimum is not None:
        out["exclusiveMinimum"] = exclusive_minimum
    return out


def number(description: str) -> Schema:
    return {"type": "number", "description": description}


def boolean(description: str) -> Schema:
    return {"type": "boolean", "description": description}


def arr(description: str, items: Schema, *, min_items: int | None = None) -> Schema:
    out: Schema = {"type": "array", "description": description, "items": items}
    if min_items is not None:
        out["minItems"] = min_items
    return out


def obj(
    properties: Mapping[str, Schema] | None = None,
    *,
    required: Sequence[str] = (),
    closed: bool = True,
    description: str | None = None,
) -> Schema:
    """An object schema; ``closed`` refuses unknown keys (``additionalProperties: false``)."""
    out: Schema = {"type": "object"}
    if description:
        out["description"] = description
    if properties is not None:
        out["properties"] = dict(properties)
    if required:
        out["required"] = list(required)
    if closed:
        out["additionalProperties"] = False
    return out


def params(
    properties: Mapping[str, Schema] | None = None, *, required: Sequence[str] = (), closed: bool = False
) -> Schema:
    """The top-level input schema of a tool."""
    return obj(properties or {}, required=required, closed=closed)


SESSION_INDEX = string("Six-character session index returned by start_session or dispatch_child (A-Z, 2-7).")
AGENT_ID = string("Calling agent's id (the delivery/trace scope); defaults to the session's agent.")

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def _type_ok(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES[kind])


def _fail(path: str, message: str) -> ParameterError:
    return ParameterError(f"Invalid parameter '{path}': {message}" if path else message)


#: the largest integer a tool accepts anywhere (JSON's exactly representable range)
MAX_INTEGER = 2**53
_MAX_NAME_BYTES = 255
_MAX_PATH_BYTES = 4096


def _check_numbers(value: Any, path: str, depth: int = 0) -> None:
    """Refuse numbers no session file or budget calculation can hold: non-finite floats (``NaN``,
    ``Infinity``, or ``1e400`` overflowing to it) and integers beyond ``MAX_INTEGER``, at any depth."""
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise _fail(path, "numbers must be finite (NaN and Infinity have no JSON form)")
    elif isinstance(value, int) and not isinstance(value, bool):
        if abs(value) > MAX_INTEGER:
            raise _fail(path, f"integer out of range (at most {MAX_INTEGER} in magnitude)")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_numbers(item, f"{path}.{key}" if path else str(key), depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_numbers(item, f"{path}[{i}]", depth + 1)


def _check_path(value: str, path: str) -> None:
    if "\x00" in value:
        raise _fail(path, "must not contain a NUL byte")
    encoded = value.encode("utf-8", errors="surrogatepass")
    if len(encoded) > _MAX_PATH_BYTES:
        raise _fail(path, f"longer than {_MAX_PATH_BYTES} bytes")
    if any(len(part) > _MAX_NAME_BYTES for part in encoded.split(b"/")):
        raise _fail(path, f"has a folder or file name longer than {_MAX_NAME_BYTES} bytes")


def _check(value: Any, schema: Schema, path: str) -> None:
    kind = schema.get("type")
    if kind is not None and not _type_ok(value, kind):
        raise _fail(path, f"expected {kind}, got {json_type(value, integer=True)}")
    if schema.get("format") == "path" and isinstance(value, str):
        _check_path(value, path)
    if "enum" in schema and value not in schema["enum"]:
        raise _fail(path, f"{value!r} is not one of [{', '.join(map(str, schema['enum']))}]")
    if "minimum" in schema and value < schema["minimum"]:
        raise _fail(path, f"must be >= {schema['minimum']}")
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        raise _fail(path, f"must be > {schema['exclusiveMinimum']}")
    if "minLength" in schema and len(value) < schema["minLength"]:
        raise _fail(path, "must not be empty" if schema["minLength"] == 1 else f"shorter than {schema['minLength']}")
    if kind == "array":
        if "minItems" in schema and len(value) < schema["minItems"]:
            raise _fail(path, f"needs at least {schema['minItems']} item(s)")
        if "items" in schema:
            for i, item in enumerate(value):
                _check(item, schema["items"], f"{path}[{i}]")
    if kind == "object":
        _check_object(value, schema, path)


def _check_object(value: Mapping[str, Any], schema: Schema, path: str) -> None:
    props: Mapping[str, Schema] = schema.get("properties", {})
    for key in schema.get("required", ()):
        if key not in value or value[key] is None:
            where = f"{path}.{key}" if path else key
            raise ParameterError(f"Missing required parameter '{where}'")
    if schema.get("additionalProperties") is False:
        unknown = sorted(k for k in value if k not in props)
        if unknown:
            where = f" in '{path}'" if path else ""
            raise ParameterError(
                f"Unknown parameter(s){where}: {', '.join(unknown)} (accepted: {', '.join(props) or 'none'})"
            )
    for key, sub in props.items():
        if key in value and value[key] is not None:
            _check(value[key], sub, f"{path}.{key}" if path else key)


def validate_args(arguments: Mapping[str, Any] | None, schema: Schema) -> dict[str, Any]:
    """Check ``arguments`` against a tool's input schema; return them as a dict with ``None`` values dropped.

    Raises ``ParameterError`` (``InvalidParams: …``) naming the first offending parameter.
    """
    args = dict(arguments or {})
    _check_object(args, schema, "")
    for key in schema.get("properties", {}):  # what a handler reads; ignored unknown keys stay ignored
        if key in args:
            _check_numbers(args[key], key)
    for key, sub in schema.get("properties", {}).items():  # an integral float (2.0) counts as an integer
        if sub.get("type") == "integer" and isinstance(args.get(key), float):
            args[key] = int(args[key])
    return {k: v for k, v in args.items() if v is not None}
