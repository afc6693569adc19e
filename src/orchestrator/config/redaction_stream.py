"""Redacting text that arrives in pieces (the model's streamed deltas) exactly as the whole would be.

A secret may be split over deltas (``ghp_ab`` + ``cd…``), so a delta cannot be redacted on its own.
``StreamRedactor`` holds back what a secret still arriving could be part of and emits the rest redacted:

* secrets and credential shapes hold no whitespace, so it emits up to the last whitespace and holds the
  trailing run of other characters (the latency is one word);
* a known value that does hold whitespace (a passphrase; rare) may reach back over a space: a tail that
  could be the beginning of one (a suffix of the text that is a prefix of the value) is held too, and
  nothing else for it;
* a private-key block (the one shape spanning whitespace) is held from its ``-----BEGIN`` until it is
  settled: its footer came, or no footer can come any more (``KEY_REACH``) and its base64 run ended;
* a cut never falls inside or at the end of a secret found in the held text.

So every cut is a place the whole text's redaction would not cross either, and the pieces emitted,
joined, equal ``Redactor.redact`` of the whole text (``flush`` emits the held rest at the end).

``TurnRedactor`` applies it to a model turn's ``publish(field, text, reset)`` stream: one
``StreamRedactor`` per field, the attempt's first delta (``reset``) sent at once even when all its text
is held, and ``flush`` for when the turn's text ends or its attempt broke off.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from orchestrator.config.redaction import KEY_FOOTER, KEY_HEADER, KEY_REACH, SHAPES, Redactor, replaced

__all__ = ["StreamRedactor", "TurnRedactor"]

#: ``publish(field, text, reset)``: one streamed delta (``llm.Publish``).
Publish = Callable[[str, str, bool], None]

_SPACE = re.compile(r"\s")
_BEGIN = "-----BEGIN"
_KEY = re.compile(next(pattern for name, pattern, _ in SHAPES if name == "a private key"))
_KEY_HEADER = re.compile(KEY_HEADER)
_KEY_CLOSED = re.compile(rf"{KEY_HEADER}[\s\S]{{0,{KEY_REACH}}}?{KEY_FOOTER}")
#: What a header still arriving looks like, and how long a whole header or footer can be.
_HEADER_SO_FAR = re.compile(r"-----BEGIN[A-Z \-]*")
_HEADER_MAX = len("-----BEGIN") + 20 + len("PRIVATE KEY-----")
_FOOTER_MAX = len("-----END") + 20 + len("PRIVATE KEY-----")


def _last_space(text: str, before: int) -> int:
    """The index just past the last whitespace character of ``text[:before]`` (0 when there is none)."""
    for index in range(min(before, len(text)) - 1, -1, -1):
        if text[index].isspace():  # the regex's \s for str patterns
            return index + 1
    return 0


def _could_begin(text: str, value: str) -> int:
    """Where the earliest suffix of ``text`` that is a proper prefix of ``value`` starts (``len(text)``
    when none is): an occurrence of ``value`` that the text's next pieces could complete starts there."""
    first = value[0]
    start = text.find(first, max(0, len(text) - len(value) + 1))
    while start >= 0:
        if value.startswith(text[start:]):
            return start
        start = text.find(first, start + 1)
    return len(text)


def _key_settled(text: str, begin: int) -> bool:
    """Whether the private-key match at ``begin`` (a ``-----BEGIN``) is what it will be whatever follows."""
    header = _KEY_HEADER.match(text, begin)
    if header is None:  # not a key's header, unless it is one still arriving
        return len(text) - begin >= _HEADER_MAX or _HEADER_SO_FAR.fullmatch(text, begin) is None
    if _KEY_CLOSED.match(text, begin) is not None:
        return True
    if len(text) - header.end() < KEY_REACH + _FOOTER_MAX:  # a footer may still come
        return False
    key = _KEY.match(text, begin)
    return key is not None and key.end() < len(text)  # its base64 run ended


class StreamRedactor:
    """One stream of text redacted as it arrives: ``feed`` each piece, emit what it returns, and
    ``flush`` at the end; the emitted pieces joined equal ``redactor.redact`` of the whole text."""

    __slots__ = ("_chunks", "_redactor", "_spaced")

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._spaced = redactor.spaced_values
        self._chunks: list[str] = []

    def feed(self, text: str) -> str:
        """Take the next piece; returns the redacted text now safe to emit (often ``""``)."""
        if not self._redactor:
            return text
        self._chunks.append(text)
        if _SPACE.search(text) is None:  # no new place to cut (or one a little later)
            return ""
        held = "".join(self._chunks)
        cut, spans = self._cut(held)
        if not cut:
            return ""
        self._chunks = [held[cut:]]
        return replaced(held[:cut], [span for span in spans if span[1] <= cut])

    def flush(self) -> str:
        """The rest, redacted: the text ended (or broke off)."""
        held = "".join(self._chunks)
        self._chunks = []
        return self._redactor.redact(held) if held else ""

    def _cut(self, text: str) -> tuple[int, list[tuple[int, int]]]:
        """Where ``text`` can be split without a secret (found or still arriving) crossing the split, and
        the secrets found in it (those before the split are the first part's: nothing there changes)."""
        limit = min((_could_begin(text, value) for value in self._spaced), default=len(text))
        begin = text.find(_BEGIN)
        while 0 <= begin < limit:
            if not _key_settled(text, begin):
                limit = begin
                break
            begin = text.find(_BEGIN, begin + 1)
        cut = _last_space(text, limit)
        if not cut:
            return 0, []
        spans = self._redactor.spans(text)
        for start, end in reversed(spans):
            if start < cut <= end:  # inside a secret, or right after one a next one could join
                cut = _last_space(text, start)
            elif end < cut:
                break
        return cut, spans


class TurnRedactor:
    """A model turn's streamed deltas, redacted per field before ``publish`` hears them.

    Call it as the ``publish`` of ``LlmClient.complete``; call ``flush`` when an attempt broke off (before
    its retry) and when the turn's streaming ends, so the held words come out before the turn's message
    is logged — the text streamed then equals that message's (redacted) text. A ``reset`` (an attempt's
    first delta) drops what an earlier attempt still held and is passed on at once, its text possibly
    empty, so a client clears its text and a turn's start is timed when the model's first token came.
    """

    __slots__ = ("_publish", "_redactor", "_streams")

    def __init__(self, redactor: Redactor, publish: Publish) -> None:
        self._redactor = redactor
        self._publish = publish
        self._streams: dict[str, StreamRedactor] = {}

    def __call__(self, field: str, text: str, reset: bool) -> None:
        if reset:
            self._streams = {}
        stream = self._streams.get(field)
        if stream is None:
            stream = self._streams[field] = StreamRedactor(self._redactor)
        out = stream.feed(text)
        if out or reset:
            self._publish(field, out, reset)

    def flush(self) -> None:
        """Publish what each field still holds."""
        for field, stream in self._streams.items():
            out = stream.flush()
            if out:
                self._publish(field, out, False)
