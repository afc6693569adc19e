"""Secret lookup order, trimming, empty-means-unset; which values are secret; the tool environment;
the redactor."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.config.secrets import (
    REDACTED,
    TOOL_ENV_ALLOW_VARIABLE,
    Redactor,
    Secret,
    load_redactor,
    looks_secret,
    read_api_key,
    read_secret,
    scrub,
    secret_values,
    tool_environment,
)


def test_environment_variable_wins(secrets_dir: Path) -> None:
    (secrets_dir / "orchestrator_api_key").write_text("from-file")
    secret, problems = read_api_key({"ORCHESTRATOR_API_KEY": "  from-env\n"}, secrets_dir)
    assert problems == []
    assert secret == Secret(value="from-env", source="ORCHESTRATOR_API_KEY")


def test_lowercase_file_before_upper_snake_file(secrets_dir: Path) -> None:
    (secrets_dir / "orchestrator_api_key").write_text("lower\n")
    (secrets_dir / "ORCHESTRATOR_API_KEY").write_text("upper\n")
    secret, _ = read_api_key({}, secrets_dir)
    assert secret is not None
    assert (secret.value, secret.source) == ("lower", str(secrets_dir / "orchestrator_api_key"))


def test_upper_snake_file_is_the_last_resort(secrets_dir: Path) -> None:
    (secrets_dir / "ORCHESTRATOR_API_KEY").write_text("\tupper \n")
    secret, _ = read_api_key({}, secrets_dir)
    assert secret is not None and secret.value == "upper"


@pytest.mark.parametrize("blank", ["", "   ", "\n\t\n"])
def test_empty_values_mean_unset_and_fall_through(secrets_dir: Path, blank: str) -> None:
    (secrets_dir / "orchestrator_api_key").write_text(blank)
    (secrets_dir / "ORCHESTRATOR_API_KEY").write_text("upper")
    secret, _ = read_api_key({"ORCHESTRATOR_API_KEY": blank}, secrets_dir)
    assert secret is not None and secret.value == "upper"


def test_nothing_set(secrets_dir: Path) -> None:
    assert read_api_key({}, secrets_dir) == (None, [])
    assert read_api_key({}, secrets_dir / "does-not-exist") == (None, [])


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_secret_file_is_a_problem_without_its_content(secrets_dir: Path) -> None:
    path = secrets_dir / "orchestrator_api_key"
    path.write_text("sk-hidden")
    path.chmod(0)
    secret, problems = read_api_key({}, secrets_dir)
    assert secret is None
    assert len(problems) == 1
    assert str(path) in problems[0]
    assert "sk-hidden" not in problems[0]


def test_a_directory_where_the_file_should_be_is_a_problem(secrets_dir: Path) -> None:
    (secrets_dir / "orchestrator_api_key").mkdir()
    secret, problems = read_api_key({}, secrets_dir)
    assert secret is None
    assert "orchestrator_api_key" in problems[0]


def test_secret_repr_is_redacted() -> None:
    secret = Secret(value="sk-hidden", source="X")
    assert "sk-hidden" not in repr(secret)
    assert "sk-hidden" not in str(secret)


def test_generic_lookup_serves_other_keys(secrets_dir: Path) -> None:
    (secrets_dir / "kagi_api_key").write_text("kagi")
    secret, _ = read_secret({}, "ORCHESTRATOR_KAGI_API_KEY", ("kagi_api_key",), secrets_dir)
    assert secret is not None and secret.value == "kagi"


# --- which values are secret, and the tool environment ----------------------------------------------


@pytest.mark.parametrize(
    "name", ["GITHUB_TOKEN", "aws_secret_access_key", "MyPassword", "OPENAI_API_KEY", "keyring_dir", "X_SECRET_Y"]
)
def test_secret_looking_names(name: str) -> None:
    assert looks_secret(name)


@pytest.mark.parametrize(
    "name", ["PATH", "HOME", "LANG", "PYTHONPATH", "ORCHESTRATOR_MODEL", "TERM", "ORCHESTRATOR_MAX_TOKENS"]
)
def test_ordinary_names(name: str) -> None:
    assert not looks_secret(name)


def test_tool_environment_strips_secrets_and_keeps_the_rest() -> None:
    env = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "ORCHESTRATOR_API_KEY": "sk-model-key-123",
        "ORCHESTRATOR_KAGI_API_KEY": "kagi-key-4567",
        "ORCHESTRATOR_TOKEN": "service-token-89",
        "GITHUB_TOKEN": "ghp_abcdefgh",
        "db_password": "hunter22hunter",
        "ORCHESTRATOR_MODEL": "qwen",
    }
    assert tool_environment(env) == {"PATH": "/usr/bin", "HOME": "/home/u", "ORCHESTRATOR_MODEL": "qwen"}


def test_the_allow_list_keeps_named_variables_but_never_the_orchestrators_own() -> None:
    env = {
        "GITHUB_TOKEN": "ghp_abcdefgh",
        "NPM_TOKEN": "npm_abcdefgh",
        "ORCHESTRATOR_API_KEY": "sk-model-key-123",
        TOOL_ENV_ALLOW_VARIABLE: " GITHUB_TOKEN , ORCHESTRATOR_API_KEY,,github_token",
    }
    kept = tool_environment(env)
    assert kept["GITHUB_TOKEN"] == "ghp_abcdefgh"
    assert "NPM_TOKEN" not in kept and "ORCHESTRATOR_API_KEY" not in kept
    assert kept[TOOL_ENV_ALLOW_VARIABLE] == env[TOOL_ENV_ALLOW_VARIABLE]  # names only, nothing secret


def test_secret_values_gather_variables_files_and_the_workspace_token(tmp_path: Path, secrets_dir: Path) -> None:
    (secrets_dir / "orchestrator_api_key").write_text("file-model-key\n")
    (secrets_dir / "kagi_api_key").write_text("file-kagi-key\n")
    (secrets_dir / "orchestrator_token").write_text("file-token-value\n")
    workspace = tmp_path / "ws"
    (workspace / ".orchestration").mkdir(parents=True)
    (workspace / ".orchestration" / "token").write_text("workspace-token-value\n")
    env = {"ORCHESTRATOR_API_KEY": " env-model-key ", "GITHUB_TOKEN": "ghp_abcdefgh", "PATH": "/usr/bin", "K": ""}
    values = secret_values(env, secrets_dir, workspace)
    assert sorted(values) == sorted(
        [
            "env-model-key",
            "ghp_abcdefgh",
            "file-model-key",
            "file-kagi-key",
            "file-token-value",
            "workspace-token-value",
        ]
    )
    assert secret_values({}, secrets_dir / "missing", tmp_path / "no-workspace") == []


# --- the redactor -------------------------------------------------------------------------------------


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
    assert not Redactor(["tiny"])


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


def test_scrub_keeps_its_contract() -> None:
    assert scrub(["key sk-abcdefgh"], "sk-abcdefgh") == ["key <redacted>"]
    assert scrub(["x"], None) == ["x"] and scrub(["ab"], "ab") == ["ab"]


def test_load_redactor_reads_the_same_sources(tmp_path: Path, secrets_dir: Path) -> None:
    (secrets_dir / "ORCHESTRATOR_KAGI_API_KEY").write_text("kagi-upper-file\n")
    redactor = load_redactor({"MY_PASSWORD": "correct horse"}, secrets_dir, tmp_path)
    assert redactor.redact("kagi-upper-file / correct horse") == "<redacted> / <redacted>"


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
