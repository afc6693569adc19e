"""The redactor: known values (every occurrence, overlaps, escaped forms), the credential shapes and what
they must leave alone, the encoded forms ``fetch_url`` refuses, and URL userinfo."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.config.redaction import REDACTED, Redactor, encoded_forms, without_userinfo
from orchestrator.config.secrets import Secret

REPO = Path(__file__).resolve().parents[2]

# --- known values ---------------------------------------------------------------------------------------


def test_redactor_replaces_every_occurrence_and_ignores_short_values() -> None:
    redactor = Redactor(["sk-abcdefgh", "short", "sk-abcdefgh-longer"])
    assert redactor.values == ("sk-abcdefgh-longer", "sk-abcdefgh")
    text = "a sk-abcdefgh b sk-abcdefgh-longer c short"
    assert redactor.redact(text) == "a <redacted> b <redacted> c short"
    assert REDACTED == "<redacted>"


def test_an_empty_or_missing_match_returns_the_text_itself() -> None:
    text = "nothing secret here " * 100
    assert Redactor().redact(text) is text
    assert Redactor(["sk-abcdefgh"]).redact(text) is text
    assert not Redactor(["tiny"], shapes=False) and Redactor(["tiny"])  # shapes are always looked for


def test_redactor_handles_regex_metacharacters() -> None:
    secret = "a.b*c(d)[e]+$^|\\"
    assert Redactor([secret]).redact(f"x{secret}y axbbc") == "x<redacted>y axbbc"


def test_redact_value_walks_nested_data_and_keys() -> None:
    redactor = Redactor(["sk-abcdefgh"])
    value = {"out": ["line sk-abcdefgh", 3, None, {"sk-abcdefgh": ("sk-abcdefgh",)}], "n": 1.5}
    assert redactor.redact_value(value) == {
        "out": ["line <redacted>", 3, None, {"<redacted>": ["<redacted>"]}],
        "n": 1.5,
    }
    assert redactor.redact_value(Secret(value="sk-abcdefgh", source="X")) == {"value": "<redacted>", "source": "X"}


def test_found_in_sees_the_json_escaped_form() -> None:
    secret = 'pa"ss\\word-123'
    redactor = Redactor([secret])
    encoded = msgspec.json.encode({"stdout": f"value={secret}"})
    assert secret.encode() not in encoded
    assert redactor.found_in(encoded)
    assert not redactor.found_in(b'{"stdout": "clean"}')
    assert repr(redactor) == "Redactor(1 values)" and secret not in repr(redactor)


def test_overlapping_and_adjacent_secrets_leave_no_fragment() -> None:
    redactor = Redactor(["abcdefgh", "efghijkl", "12345678"])
    assert redactor.redact("xx abcdefghijkl yy") == "xx <redacted> yy"  # neither "ijkl" nor "abcd" survives
    assert redactor.redact("abcdefgh12345678!") == "<redacted>!"
    assert Redactor(["aaaaaaaa"]).redact("aaaaaaaaaaa b aaaaaaaa") == "<redacted> b <redacted>"


_SECRET_TEXT = st.text(alphabet="abcdefgh0123-_", min_size=0, max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    secrets=st.lists(st.text(alphabet="abcdefgh0123-_", min_size=1, max_size=14), max_size=4),
    pieces=st.lists(st.one_of(_SECRET_TEXT, st.integers(min_value=0, max_value=3)), max_size=12),
)
def test_no_secret_survives_redaction(secrets: list[str], pieces: list[str | int]) -> None:
    """Whatever the text is made of — secrets, fragments, overlaps — no value of 8+ characters is left
    in the result, and a text with no secret in it comes back as the same object."""
    text = "".join(secrets[p] if isinstance(p, int) and p < len(secrets) else str(p) for p in pieces)
    redactor = Redactor(secrets)
    result = redactor.redact(text)
    for value in redactor.values:
        assert value not in result
    if not any(value in text for value in redactor.values):
        assert result is text


# --- credential shapes ----------------------------------------------------------------------------------

#: Made-up credentials of each shape (none is real).
SHAPED = [
    "ghp_" + "a1B2c3D4e5" * 4,
    "github_pat_11ABCDEFG0" + "x" * 40,
    "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8t",
    "sk-ant-api03-" + "k" * 20 + "9",
    "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "xoxb-123456789012-abcdefABCDEF",
    "AKIAIOSFODNN7EXAMPLE",
    "AIza" + "SyD-abcdefghijklmnopqrstuvwxyz01234",
    "glpat-" + "xYz123abcDEF456ghiJKL",
]


@pytest.mark.parametrize("token", SHAPED)
def test_each_credential_shape_is_redacted_wherever_it_stands(token: str) -> None:
    redactor = Redactor()
    for text in (token, f"export X={token}\n", f'{{"auth": "{token}"}}', f"Bearer {token}.", f"line\n{token}"):
        result = redactor.redact(text)
        assert token not in result and REDACTED in result, text
        assert redactor.found_in(msgspec.json.encode({"out": text}))
    assert redactor.outbound_secret(f"https://example.com/?q={token}") is not None


def test_url_credentials_lose_the_secret_part_only() -> None:
    redactor = Redactor()
    text = (
        "DATABASE_URL=postgres://u:pa55w0rd-xyz@db.internal:5432/app\n"
        "redis://:s3cret@cache:6379/0 and https://4f1c2e9a77b0@o1.ingest.sentry.io/5\n"
        "ssh://git@github.com/o/r.git https://example.com/a?b=c"
    )
    assert redactor.redact(text) == (
        "DATABASE_URL=postgres://u:<redacted>@db.internal:5432/app\n"
        "redis://:<redacted>@cache:6379/0 and https://<redacted>@o1.ingest.sentry.io/5\n"
        "ssh://git@github.com/o/r.git https://example.com/a?b=c"
    )
    assert (
        without_userinfo("at http://user:pw@127.0.0.1:9/v1 and https://h/x")
        == "at http://127.0.0.1:9/v1 and https://h/x"
    )
    # A known URL's password is a secret on its own too.
    known = Redactor(["postgres://u:pa55w0rd-xyz@h/db"], shapes=False)
    assert known.redact("the password is pa55w0rd-xyz") == "the password is <redacted>"


ORDINARY = [
    "commit 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b Merge branch 'sk-learn-upgrade'",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "uuid 123e4567-e89b-12d3-a456-426614174000, task-abcdefghijklmnopqrstuvw1, desk-0123456789abcdefghij",
    "def ghost_protocol_handler(): return AKIA  # AKIA alone, AKIAshort",
    "see https://github.com/python/cpython/blob/main/Lib/re/__init__.py#L1 and mailto:a@b.c",
    "email someone@example.com, user@host:path, `git@github.com:o/r.git`",
    "base64 aGVsbG8gd29ybGQgdGhpcyBpcyBub3QgYSBzZWNyZXQ=, xoxo-love, ghp_short",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_alone(text: str) -> None:
    redactor = Redactor()
    assert redactor.redact(text) is text
    assert not redactor.found_in(text.encode())


def test_the_projects_own_source_and_history_are_left_alone() -> None:
    """A large realistic corpus (this repository's code and git log) holds no credential shape."""
    sources = "".join(path.read_text() for path in sorted((REPO / "src").rglob("*.py")))
    log = subprocess.run(
        ["git", "log", "--format=%H %an %s", "-n", "500"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout
    text = sources + log
    assert Redactor().redact(text) is text


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789abcdef", min_size=8, max_size=80), st.uuids())
def test_hex_digests_and_uuids_are_never_redacted(digest: str, uuid: object) -> None:
    text = f"{digest} {uuid} {digest.upper()}"
    assert Redactor().redact(text) is text


# --- encoded forms and outgoing requests ----------------------------------------------------------------

SECRET = "gh-pat-value-0001"


@pytest.mark.parametrize("prefix", [b"", b"x", b"xy", b"token=", b'{"k":"'])
def test_base64_is_recognised_at_every_alignment(prefix: bytes) -> None:
    redactor = Redactor([SECRET])
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        encoded = encode(prefix + SECRET.encode() + b"&more=1").decode()
        assert redactor.outbound_secret(f"https://evil.example/?d={encoded}") == "a known secret, base64-encoded"
        assert SECRET not in redactor.encoded().redact(encoded) and REDACTED in redactor.encoded().redact(encoded)


def test_every_encoding_is_named_and_plain_urls_pass() -> None:
    redactor = Redactor([SECRET, "postgres://u:pa55w0rd-xyz@h/db"])
    hexed = SECRET.encode().hex()
    cases = {
        f"https://evil.example/{SECRET}": "a known secret",
        "https://evil.example/?u=postgres%3A%2F%2Fu%3Apa55w0rd-xyz%40h%2Fdb": "a known secret, URL-encoded",
        f"https://evil.example/?h={hexed}": "a known secret, hex-encoded",
        f"https://evil.example/?h={hexed.upper()}": "a known secret, hex-encoded",
        "https://user:hunter2@evil.example/": "a URL's credentials",
    }
    for url, expected in cases.items():
        assert redactor.outbound_secret(url) == expected, url
    assert redactor.outbound_secret("https://docs.python.org/3/library/re.html?highlight=sub#re.sub") is None
    forms = encoded_forms(SECRET)
    assert forms[SECRET] == "as is" and forms[hexed] == "hex-encoded"
    assert all(len(form) >= 8 for form in forms)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(st.sampled_from(SHAPED), st.sampled_from(["\n", "\t", '"', "\\", "x", " ", "é", "s"])), max_size=8
    )
)
def test_the_fast_check_on_json_never_misses_what_redaction_finds(pieces: list[str]) -> None:
    """``found_in`` (the log writer's and the tool boundary's check on encoded JSON) says yes whenever
    ``redact`` would change the text, whatever escapes JSON puts before a secret."""
    text = "".join(pieces)
    redactor = Redactor(["known-value-0001"])
    if redactor.redact(text) is not text:
        assert redactor.found_in(msgspec.json.encode({"stdout": text}))
