"""Wire text for tool results: JSON with 2-space indent, YAML without line folding (§3 of the spec)."""

from __future__ import annotations

from typing import Any

import msgspec
import yaml

__all__ = ["to_json", "to_yaml"]

_BaseDumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_BaseDumper):  # type: ignore[misc, valid-type]
    """Safe dumper: block style, no folding, multi-line strings as literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def to_yaml(data: Any) -> str:
    """Block-style YAML, insertion order kept, unicode as is, no wrapping, no trailing newline."""
    text = yaml.dump(
        msgspec.to_builtins(data),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=2**31 - 1,
    )
    return text.rstrip("\n")


def to_json(data: Any) -> str:
    """JSON with a 2-space indent and insertion-ordered keys (msgspec Structs are encoded by field)."""
    return msgspec.json.format(msgspec.json.encode(data), indent=2).decode()
