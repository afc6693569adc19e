"""Redacting streamed text: any split of a text into pieces gives what redacting the whole text gives
(known values, a passphrase with spaces, every credential shape, private-key blocks), holding back only
the trailing word; the turn publisher's reset, fields and flush."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.config.redaction import Redactor
from orchestrator.config.redaction_stream import StreamRedactor, TurnRedactor

VALUES = ["hunter2hunter2", "s3cr3t-Pa55w0rd", "postgres://app:dbpassw0rd@db.internal/app"]
PASSPHRASE = "correct horse battery"
GITHUB = "ghp_" + "A1b2" * 9
KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK\nj4Ou+/=\n-----END RSA PRIVATE KEY-----"

PIECES = st.sampled_from(
    [
        *VALUES,
        PASSPHRASE,
        GITHUB,
        KEY,
        KEY.split("\n-----END")[0],  # a block that never ends
        "-----BEGIN NOT A KEY",
        "sk-" + "abc123XYZ" * 3,
        "xoxb-1234567890-abcdef",
        "AKIA" + "ABCDEFGHIJKLMNOP",
        "https://tok3ntok3n@sentry.example/1",
        "hunter2",  # a fragment
        "correct horse",
        "ghp_",
        "://",
        "@",
        "word",
        "the",
        "x",
        "-----",
        ",",
        ".",
        "<redacted>",
    ]
)
SPACES = st.sampled_from([" ", "  ", "\n", "\t", "\u00a0", ""])


@st.composite
def texts(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(PIECES, SPACES), max_size=14))
    return "".join(piece + space for piece, space in parts)


@st.composite
def splits(draw: st.DrawFn, text: str) -> list[str]:
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=30)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def _streamed(redactor: Redactor, pieces: list[str]) -> list[str]:
    stream = StreamRedactor(redactor)
    return [stream.feed(piece) for piece in pieces] + [stream.flush()]


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_any_split_redacts_like_the_whole_text(data: st.DataObject) -> None:
    text = data.draw(texts())
    pieces = data.draw(splits(text))
    redactor = Redactor(VALUES)
    assert "".join(_streamed(redactor, pieces)) == redactor.redact(text)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_known_value_with_spaces_is_found_across_pieces_too(data: st.DataObject) -> None:
    text = data.draw(texts())
    pieces = data.draw(splits(text))
    redactor = Redactor([*VALUES, PASSPHRASE])
    assert redactor.spaced_values == (PASSPHRASE,)
    assert "".join(_streamed(redactor, pieces)) == redactor.redact(text)


def test_a_value_with_spaces_holds_back_only_a_tail_that_could_begin_it() -> None:
    """A passphrase among the known values delays nothing that could not be its beginning."""
    redactor = Redactor([PASSPHRASE])
    first, rest = PASSPHRASE.split(" ", 1)
    assert _streamed(redactor, ["plain words go out ", "at once "]) == ["plain words go out ", "at once ", ""]
    out = _streamed(redactor, ["say ", first + " ", rest[:3], rest[3:] + " next "])
    assert out == ["say ", "", "", "<redacted> next ", ""]


def test_a_secret_split_over_deltas_never_comes_out_and_only_the_last_word_waits() -> None:
    redactor = Redactor(VALUES)
    out = _streamed(redactor, ["the pass", "word is hun", "ter2hun", "ter2 and ", GITHUB[:10], GITHUB[10:], " ok"])
    assert out == ["the ", "password is ", "", "<redacted> and ", "", "", "<redacted> ", "ok"]
    assert not any("hunter2" in piece or "ghp_" in piece for piece in out)


def test_a_private_key_block_is_held_until_its_footer() -> None:
    redactor = Redactor()
    lines = ["here: ", *(line + "\n" for line in KEY.split("\n")), "done ", "now"]
    out = _streamed(redactor, lines)
    assert out == ["here: ", "", "", "", "<redacted>\n", "done ", "", "now"]


def test_a_text_without_secrets_streams_word_by_word_and_no_redactor_holds_nothing() -> None:
    assert _streamed(Redactor(), ["Hello wor", "ld, ", "fine"]) == ["Hello ", "world, ", "", "fine"]
    assert _streamed(Redactor(shapes=False), ["Hello wor", "ld"]) == ["Hello wor", "ld", ""]


def test_the_turn_publisher_sends_resets_at_once_and_flushes_each_field() -> None:
    sent: list[tuple[str, str, bool]] = []
    publish = TurnRedactor(Redactor(VALUES), lambda field, text, reset: sent.append((field, text, reset)))
    publish("reasoning", "Thinking", True)  # held, but the attempt's start goes out now
    publish("reasoning", " about hunter2", False)
    publish("content", "Broken off", False)
    publish.flush()  # the attempt broke off: what it held comes out
    publish("content", "Again hunter2", True)  # the retry starts afresh
    publish("content", "hunter2 done", False)
    publish.flush()
    assert sent == [
        ("reasoning", "", True),
        ("reasoning", "Thinking about ", False),
        ("content", "Broken ", False),
        ("reasoning", "hunter2", False),
        ("content", "off", False),
        ("content", "Again ", True),
        ("content", "<redacted> ", False),
        ("content", "done", False),
    ]


def test_a_private_key_block_without_a_footer_is_released_once_none_can_come() -> None:
    redactor = Redactor()
    text = "see -----BEGIN PRIVATE KEY-----\nMIIB\n" + "then, no footer ever comes. " * 700 + "end"
    out = _streamed(redactor, [text[i : i + 40] for i in range(0, len(text), 40)])
    assert "".join(out) == redactor.redact(text) == "see <redacted>" + text[text.index(", no footer") :]
    assert "".join(out[:-1]).startswith("see <redacted>")  # streamed before the end, past the footer's reach
