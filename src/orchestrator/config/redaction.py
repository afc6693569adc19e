"""Finding secrets in text and replacing them with ``<redacted>``; recognising one in an outgoing request.

Two kinds of secret are found:

* **known values** (``Redactor(values)``): the orchestrator's keys and token and the values
  ``config.secrets.secret_values`` gathers from the environment, each at least ``MIN_SCRUB_LENGTH``
  characters, found by plain substring search;
* **credential shapes** (``SHAPES``): text that is a secret whatever its source — GitHub, OpenAI-style,
  Slack, AWS, Google, Stripe and GitLab tokens, private-key blocks, and the userinfo of
  a URL (``postgres://user:<password>@host``, ``https://<token>@sentry.example``). Each shape starts
  with a literal, so ``re`` scans for it at C speed; ordinary text (code, git hashes, UUIDs) has none.

``Redactor.outbound_secret`` is the stricter check for text about to leave the machine on the model's
behalf (``fetch_url``): a known value in any common encoding (raw, URL-encoded, base64 at every byte
alignment, hex) or a credential shape.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Iterator
from urllib.parse import quote, quote_plus, unquote, unquote_plus

import msgspec

__all__ = [
    "KEY_FOOTER",
    "KEY_HEADER",
    "KEY_REACH",
    "MIN_SCRUB_LENGTH",
    "REDACTED",
    "SHAPES",
    "Redactor",
    "encoded_forms",
    "replaced",
    "without_userinfo",
]

#: The one replacement text, in rendered configuration and in redacted text alike.
REDACTED = "<redacted>"
#: Shorter values are not scrubbed from text: replacing every "x" (or "true") would garble messages,
#: and a value that short protects nothing.
MIN_SCRUB_LENGTH = 8

#: The one shape that may span whitespace: a private-key block, from its header to its footer (which
#: must start within ``KEY_REACH`` characters), else over the base64 and whitespace that follow it.
KEY_HEADER = r"-----BEGIN[A-Z ]{0,20}PRIVATE KEY-----"
KEY_FOOTER = r"-----END[A-Z ]{0,20}PRIVATE KEY-----"
KEY_REACH = 16000

_USER = r"[^\s/?#@:'\"<>\\]"
_PASSWORD = r"[^\s/?#@'\"<>\\]"

#: ``(name, pattern, lead)``: the group ``s`` or ``u`` (else the whole match) is the secret. ``lead``:
#: ``None`` when the shape may start anywhere; else the match must follow a word boundary, and when
#: ``lead`` is not empty, one of its characters, which belongs to the secret (``sk-…`` is searched as
#: ``k-…``: ``re`` finds a rare first character much faster than a common one).
SHAPES: tuple[tuple[str, str, str | None], ...] = (
    (  # one scan for the three: re finds the literal "g" fast, then tries each branch
        "a GitHub or GitLab token",
        r"g(?:h[pousr]_[A-Za-z0-9]{36,}|ithub_pat_[A-Za-z0-9_]{22,}|lpat-[0-9A-Za-z_-]{20,})",
        "",
    ),
    (
        "an API key (sk-…)",
        r"k(?:-(?=[A-Za-z0-9_-]{20})[A-Za-z0-9_-]*[0-9][A-Za-z0-9_-]*|_(?:live|test)_[0-9A-Za-z]{16,})",
        "sr",
    ),
    ("a Slack token", r"xox[abposr]-[A-Za-z0-9-]{10,}", ""),
    ("an AWS or Google key", r"A(?:KIA[0-9A-Z]{16}|SIA[0-9A-Z]{16}|Iza[0-9A-Za-z_-]{35})(?![0-9A-Za-z])", ""),
    ("a private key", rf"{KEY_HEADER}(?:[\s\S]{{0,{KEY_REACH}}}?{KEY_FOOTER}|[A-Za-z0-9+/=\s]*)", None),
    ("a URL's credentials", rf"://(?:{_USER}*:(?P<s>{_PASSWORD}+)|(?P<u>{_USER}{{8,}}))@", None),
)


class _Shape:
    __slots__ = ("data", "lead", "name", "text")

    def __init__(self, name: str, pattern: str, lead: str | None) -> None:
        self.name = name
        self.text = re.compile(pattern)
        self.data = re.compile(pattern.encode())
        self.lead = lead


_COMPILED = tuple(_Shape(*shape) for shape in SHAPES)


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _start(lead: str | None, text: str, start: int) -> int:
    """Where a match at ``start`` really begins (its lead character included), or -1 if it does not count."""
    if lead is None:
        return start
    if lead:
        if not start or text[start - 1] not in lead:
            return -1
        start -= 1
    return -1 if start and _word(text[start - 1]) else start


def _spans(shape: _Shape, text: str) -> Iterator[tuple[int, int]]:
    for match in shape.text.finditer(text):
        start = _start(shape.lead, text, match.start())
        if start < 0:
            continue
        group = next((g for g in shape.text.groupindex if match.group(g)), None)
        yield match.span(group) if group else (start, match.end())


def _shape_spans(text: str) -> Iterator[tuple[int, int]]:
    for shape in _COMPILED:
        yield from _spans(shape, text)


def _shape_named(text: str) -> str | None:
    return next((shape.name for shape in _COMPILED if next(_spans(shape, text), None) is not None), None)


def _shape_in(data: bytes) -> bool:
    """Whether encoded JSON ``data`` holds a shape. A JSON escape ends a word: a secret at the start of
    a line follows ``\\n`` (a false alarm, say after a literal backslash, only costs a precise look)."""
    for shape in _COMPILED:
        for match in shape.data.finditer(data):
            start = match.start()
            if shape.lead:
                if not start or chr(data[start - 1]) not in shape.lead:
                    continue
                start -= 1
            if shape.lead is None or not start or not _word(chr(data[start - 1])):
                return True
            if start >= 2 and data[start - 2] == 0x5C:  # the letter of an escape ("\n", "\t")
                return True
    return False


_USERINFO = re.compile(r"://[^\s/?#@]*@")
_SPACE = re.compile(r"\s")
_SHAPE_OF_CREDENTIALS = _COMPILED[-1].text


def _credentials_in(values: list[str]) -> Iterator[str]:
    """The password (or token) inside each known value that is a URL with credentials: it is a secret on
    its own too (the ``<password>`` of ``postgres://u:<password>@h/db``)."""
    for value in values:
        if "://" in value:
            for match in _SHAPE_OF_CREDENTIALS.finditer(value):
                yield match.group("s") or match.group("u")


def replaced(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each of the sorted, disjoint ``spans`` replaced by ``<redacted>`` (``text`` itself
    when there are none)."""
    if not spans:
        return text
    parts: list[str] = []
    kept_to = 0  # text before this index is emitted (or redacted)
    for start, end in spans:
        parts += [text[kept_to:start], REDACTED]
        kept_to = end
    parts.append(text[kept_to:])
    return "".join(parts)


def without_userinfo(text: str) -> str:
    """``text`` with the userinfo of every URL in it dropped (``http://user:<password>@host/v1``
    → ``http://host/v1``): where a URL is shown, its credentials are not, recognised or not."""
    return _USERINFO.sub("://", text)


def _base64_cores(raw: bytes) -> Iterator[str]:
    """The base64 text of ``raw`` at each of the three byte alignments it can have inside a longer
    encoded stream, without the characters its neighbours would change."""
    for shift in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(b"\0" * shift + raw).decode().rstrip("=")
            lead = (0, 2, 3)[shift]
            tail = (len(raw) + shift) % 3  # a partial last group: its last character depends on what follows
            yield text[lead : len(text) - (1 if tail else 0)]


def encoded_forms(value: str) -> dict[str, str]:
    """Each common encoding of ``value`` (at least ``MIN_SCRUB_LENGTH`` characters) → its name."""
    raw = value.encode()
    forms = {value: "as is"}
    for form in (quote(value, safe=""), quote_plus(value, safe=""), quote(value)):
        forms.setdefault(form, "URL-encoded")
    for form in _base64_cores(raw):
        forms.setdefault(form, "base64-encoded")
    hexed = binascii.hexlify(raw).decode()
    forms.setdefault(hexed, "hex-encoded")
    forms.setdefault(hexed.upper(), "hex-encoded")
    return {form: how for form, how in forms.items() if len(form) >= MIN_SCRUB_LENGTH}


class Redactor:
    """Replaces each known secret value and each credential shape in text with ``<redacted>``; values
    shorter than ``MIN_SCRUB_LENGTH`` are ignored. ``shapes=False`` (benchmarks, tests) looks for the
    values only; a redactor with neither returns its input unchanged at no cost.

    Overlapping or adjacent occurrences become one ``<redacted>``, so no fragment of a secret survives
    next to the marker. ``needles`` are the UTF-8 bytes to look for in encoded JSON: each value and
    its JSON-escaped form. Cost when nothing matches: one substring search per value and one regex
    scan per shape (a literal prefix search), about 3 ms per MB of text with a handful of values.
    """

    __slots__ = ("_encoded", "_forms", "_shapes", "_values", "needles")

    def __init__(self, values: Iterable[str] = (), *, shapes: bool = True) -> None:
        whole = list(values)
        self._values: tuple[str, ...] = tuple(
            sorted({v for v in [*whole, *_credentials_in(whole)] if len(v) >= MIN_SCRUB_LENGTH}, key=len, reverse=True)
        )
        needles = {v.encode() for v in self._values} | {msgspec.json.encode(v)[1:-1] for v in self._values}
        self.needles: tuple[bytes, ...] = tuple(needles)
        self._shapes = shapes
        self._forms: dict[str, str] | None = None
        self._encoded: Redactor | None = None

    def __bool__(self) -> bool:
        return bool(self._values) or self._shapes

    def __repr__(self) -> str:
        return f"Redactor({len(self._values)} values)"

    @property
    def values(self) -> tuple[str, ...]:
        """The values replaced, longest first."""
        return self._values

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where ``text`` holds a known secret or a credential shape: sorted ``(start, end)`` pairs,
        overlapping or adjacent occurrences merged into one."""
        found: list[tuple[int, int]] = []
        for value in self._values:
            start = text.find(value)
            while start >= 0:
                found.append((start, start + len(value)))
                start = text.find(value, start + 1)
        if self._shapes:
            found.extend(_shape_spans(text))
        found.sort()
        merged: list[tuple[int, int]] = []
        for start, end in found:
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        return merged

    @property
    def spaced_values(self) -> tuple[str, ...]:
        """The known values with whitespace in them (rare: a passphrase), the ones a secret may reach
        back across a space with (``StreamRedactor`` holds back a tail that could begin one)."""
        return tuple(v for v in self._values if _SPACE.search(v))

    def redact(self, text: str) -> str:
        """``text`` with every known secret and credential shape replaced (the same object when none occurs)."""
        return replaced(text, self.spans(text))

    def redact_all(self, texts: Iterable[str]) -> list[str]:
        return [self.redact(text) for text in texts]

    def found_in(self, data: bytes) -> bool:
        """Whether encoded JSON ``data`` holds a secret (a value raw or JSON-escaped, or a shape): the
        log writer's and the tool boundary's fast check."""
        if any(needle in data for needle in self.needles):
            return True
        return self._shapes and _shape_in(data)

    def redact_value(self, value: object) -> object:
        """A JSON-like value with every string in it (dict keys too) redacted; other leaves unchanged.

        A msgspec struct is turned into builtins first, so the answer is plain data.
        """
        if not self:
            return value
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, msgspec.Struct):
            value = msgspec.to_builtins(value)
        if isinstance(value, dict):
            return {self.redact_value(key): self.redact_value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact_value(item) for item in value]
        return value

    def forms(self) -> dict[str, str]:
        """Every known value in every encoding :func:`encoded_forms` makes → the encoding's name."""
        if self._forms is None:
            self._forms = {form: how for value in self._values for form, how in encoded_forms(value).items()}
        return self._forms

    def encoded(self) -> Redactor:
        """A redactor over every encoded form of the known values too: for short texts the model wrote
        (its tool calls), where a secret may come base64- or hex-encoded."""
        if self._encoded is None:
            self._encoded = Redactor(self.forms(), shapes=self._shapes)
        return self._encoded

    def outbound_secret(self, text: str) -> str | None:
        """What secret ``text`` (a URL, a header, a body about to be sent) carries, described without
        the value (``"a known secret, base64-encoded"``, ``"a GitHub token"``), or ``None``.

        Looks for every known value raw, URL-encoded, base64-encoded (standard and URL-safe alphabet, at
        every byte alignment) and hex-encoded, in ``text`` and in its URL-decoded forms; and for every
        credential shape.
        """
        forms = self.forms()
        candidates = dict.fromkeys((text, unquote(text), unquote_plus(text)))
        for candidate in candidates:
            for form, how in forms.items():
                if form in candidate:
                    return "a known secret" + ("" if how == "as is" else f", {how}")
            shape = _shape_named(candidate) if self._shapes else None
            if shape is not None:
                return shape
        return None
