"""``schema.py``: the two base Structs that set the msgspec policy for every file and wire format."""

from __future__ import annotations

import msgspec
import pytest

from orchestrator.schema import Base, StrictBase


class Lenient(Base):
    some_field: int = 0
    other: str | None = None


class Strict(StrictBase):
    some_field: int = 0


def test_keys_are_camel_case_and_defaults_are_omitted_never_null() -> None:
    assert msgspec.json.encode(Lenient(some_field=3)) == b'{"someField":3}'
    assert msgspec.json.encode(Lenient()) == b"{}"


def test_the_lenient_base_ignores_unknown_keys() -> None:
    assert msgspec.json.decode(b'{"someField": 1, "typo": 2}', type=Lenient) == Lenient(some_field=1)


def test_the_strict_base_rejects_an_unknown_key_naming_it() -> None:
    with pytest.raises(msgspec.ValidationError, match="typo"):
        msgspec.json.decode(b'{"someField": 1, "typo": 2}', type=Strict)
