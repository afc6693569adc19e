"""Wire text for tool results: JSON with 2-space indent, YAML without line folding."""

from __future__ import annotations

import re
from typing import Any

import msgspec
import yaml

__all__ = ["SEPARATOR", "needs_quotes", "to_json", "to_yaml"]

#: Between the two parts of a two-part answer (a bundle of Markdown, then its YAML summary).
SEPARATOR = "\n\n---\n\n"

_BaseDumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_BaseDumper):  # type: ignore[misc, valid-type]
    """Safe dumper: block style, no folding, multi-line strings as literal blocks."""


# Plain scalars that a YAML 1.2 reader (core schema, and the wider forms ruamel.yaml and js-yaml accept:
# underscores, 0b/0o/0x, sexagesimal, timestamps) takes for a number, boolean or null. PyYAML's dumper
# already quotes what YAML 1.1 would read as a non-string (yes/no/on/off, 0777, 1_000 …) but not these
# (``08`` is a string under 1.1, the number 8 under 1.2).
_YAML12_NOT_STRING = re.compile(
    r"""(?x)
    (?: ~ | null | Null | NULL | true | True | TRUE | false | False | FALSE
      | [-+]? (?: 0b[01_]+ | 0o?[0-7_]+ | 0x[0-9a-fA-F_]+ | [0-9][0-9_]* (?: :[0-5]?[0-9] )* )
      | [-+]? (?: [0-9][0-9_]* )? \.? [0-9_]* (?: [eE] [-+]? [0-9]+ )?
      | [-+]? \. (?: inf | Inf | INF ) | \. (?: nan | NaN | NAN )
      | [0-9]{4}-[0-9]{1,2}-[0-9]{1,2} (?: (?:[Tt]|[ \t]+) .* )?
    )"""
)


def needs_quotes(value: str) -> bool:
    """Whether ``value`` must be quoted so that every YAML reader (1.1 or 1.2) reads a string back."""
    return value == "" or (_YAML12_NOT_STRING.fullmatch(value) is not None and any(c not in "._" for c in value))


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    if needs_quotes(value):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="'")
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
