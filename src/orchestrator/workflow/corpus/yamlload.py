"""YAML loading for corpus files: PyYAML ``CSafeLoader`` semantics, about twice as fast on plain documents.

PyYAML's ``CSafeLoader`` parses in C but composes and constructs in Python, which dominates the corpus
load time. ``load_yaml`` builds containers straight from the C parser's events and resolves plain
scalars with PyYAML's own implicit-resolver table. Any document using a feature that path does not
replicate exactly (anchors/aliases, explicit tags, merge keys, timestamps, non-decimal or sexagesimal
numbers, complex keys) is re-read with ``CSafeLoader``, so the result always equals what ``CSafeLoader``
gives. Errors are ``yaml.YAMLError``.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml import events as _ev
from yaml.resolver import Resolver

__all__ = ["NotPlain", "load_yaml", "plain_scalar"]

try:  # pragma: no cover - libyaml is present in every supported environment
    from yaml import CSafeLoader as _SafeLoader
    from yaml._yaml import CParser as _CParser
except ImportError:  # pragma: no cover
    from yaml import SafeLoader as _SafeLoader  # type: ignore[assignment]

    _CParser = None  # type: ignore[assignment,misc]


class _Fallback(Exception):
    """The fast path met a feature it does not replicate; re-read with the full loader."""


NotPlain = _Fallback
"""Raised by ``plain_scalar`` for a scalar whose value needs the full loader."""


_ANY_FIRST = tuple(Resolver.yaml_implicit_resolvers.get(None, ()))
_TABLE: dict[str, tuple[Any, ...]] = {
    key: (*value, *_ANY_FIRST) for key, value in Resolver.yaml_implicit_resolvers.items() if key is not None
}
_BOOL = {
    "yes": True,
    "Yes": True,
    "YES": True,
    "true": True,
    "True": True,
    "TRUE": True,
    "on": True,
    "On": True,
    "ON": True,
    "no": False,
    "No": False,
    "NO": False,
    "false": False,
    "False": False,
    "FALSE": False,
    "off": False,
    "Off": False,
    "OFF": False,
}
_NO_KEY = object()
_SCALAR = _ev.ScalarEvent
_MAPPING_START = _ev.MappingStartEvent
_MAPPING_END = _ev.MappingEndEvent
_SEQUENCE_START = _ev.SequenceStartEvent
_SEQUENCE_END = _ev.SequenceEndEvent
_SIMPLE_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_SIMPLE_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+][0-9]+)?")
_STR = "tag:yaml.org,2002:str"


def plain_scalar(value: str) -> Any:
    """The value of a plain (unquoted) YAML scalar as the safe loader reads it; raises ``NotPlain`` for a
    timestamp, non-decimal or sexagesimal number or other tag this module leaves to the full loader."""
    tag = _STR
    for candidate, regexp in _TABLE.get(value[:1], _ANY_FIRST):
        if regexp.match(value):
            tag = candidate
            break
    if tag == _STR:
        return value
    if tag == "tag:yaml.org,2002:null":
        return None
    if tag == "tag:yaml.org,2002:bool":
        return _BOOL[value]
    if tag == "tag:yaml.org,2002:int" and _SIMPLE_INT.fullmatch(value):
        return int(value)
    if tag == "tag:yaml.org,2002:float" and _SIMPLE_FLOAT.fullmatch(value):
        return float(value)
    raise _Fallback(value)


def _fast(text: str) -> Any:
    get_event = _CParser(text).get_event
    containers: list[Any] = []  # open collections, innermost last
    keys: list[Any] = []  # per open collection: the pending mapping key, or _NO_KEY
    root: Any = None
    documents = 0
    table = _TABLE
    any_first = bool(_ANY_FIRST)
    while True:
        event = get_event()
        kind = type(event)
        if kind is _SCALAR:
            if event.anchor is not None or event.tag is not None:
                raise _Fallback("anchor or tag")
            value: Any = event.value
            if event.implicit[0] and not event.style and (any_first or value[:1] in table):
                value = plain_scalar(value)
        elif kind is _MAPPING_START or kind is _SEQUENCE_START:
            if event.anchor is not None or event.tag is not None:
                raise _Fallback("anchor or tag")
            containers.append({} if kind is _MAPPING_START else [])
            keys.append(_NO_KEY)
            continue
        elif kind is _MAPPING_END or kind is _SEQUENCE_END:
            keys.pop()
            value = containers.pop()
        elif kind is _ev.AliasEvent:
            raise _Fallback("alias")
        elif kind is _ev.DocumentStartEvent:
            documents += 1
            if documents > 1:
                raise _Fallback("several documents")
            continue
        elif kind is _ev.StreamEndEvent:
            return root
        else:
            continue
        if not containers:
            root = value
            continue
        container = containers[-1]
        if type(container) is list:
            container.append(value)
            continue
        key = keys[-1]
        if key is _NO_KEY:
            if type(value) in (list, dict) or value == "<<":
                raise _Fallback("complex or merge key")
            keys[-1] = value
        else:
            container[key] = value
            keys[-1] = _NO_KEY


def load_yaml(text: str) -> Any:
    """Parse one YAML document exactly as ``CSafeLoader`` would (``None`` for an empty document).

    Raises ``yaml.YAMLError`` for malformed input (and for several documents in one stream).
    """
    if _CParser is not None:
        try:
            return _fast(text)
        except _Fallback:
            pass
        except yaml.YAMLError:
            pass  # let the full loader produce its own (identical-kind) error below
    return yaml.load(text, Loader=_SafeLoader)
