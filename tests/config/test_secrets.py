"""Secret lookup order, trimming, empty-means-unset; which names and values are secret; the allow-listed
tool environment; the redactor over those values."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.config.secrets import (
    BASE_TOOL_ENVIRONMENT,
    REDACTED,
    TOOL_ENV_ALLOW_VARIABLE,
    Secret,
    load_redactor,
    looks_secret,
    read_api_key,
    read_secret,
    scrub,
    secret_values,
    tool_environment,
    withheld_value_is_secret,
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
    "name",
    [
        "GITHUB_TOKEN",
        "aws_secret_access_key",
        "MyPassword",
        "OPENAI_API_KEY",
        "keyring_dir",
        "X_SECRET_Y",
        "MYSQL_PWD",
        "SENTRY_DSN",
        "GH_PAT",
        "PAT_FOR_CI",
        "SLACK_WEBHOOK_URL",
        "BASIC_AUTH",
        "DBUS_SESSION_BUS_ADDRESS",
    ],
)
def test_secret_looking_names(name: str) -> None:
    assert looks_secret(name)


@pytest.mark.parametrize(
    "name",
    [
        "PATH",
        "HOME",
        "LANG",
        "PYTHONPATH",
        "LD_LIBRARY_PATH",
        "ORCHESTRATOR_MODEL",
        "TERM",
        "ORCHESTRATOR_MAX_TOKENS",
        "PWD",
        "OLDPWD",
        "GIT_AUTHOR_NAME",
    ],
)
def test_ordinary_names(name: str) -> None:
    assert not looks_secret(name)


ENV = {
    "PATH": "/usr/bin",
    "HOME": "/home/u",
    "LC_ALL": "C.UTF-8",
    "ORCHESTRATOR_API_KEY": "sk-model-key-123",
    "ORCHESTRATOR_KAGI_API_KEY": "kagi-key-4567",
    "ORCHESTRATOR_TOKEN": "service-token-89",
    "GITHUB_TOKEN": "ghp_abcdefgh",
    "db_password": "hunter22hunter",
    "ORCHESTRATOR_MODEL": "qwen",
    "DATABASE_URL": "postgres://u:pa55w0rd-xyz@h/db",
    "GH_PAT": "gh-pat-value-0001",
    "PLAIN_SETTING": "kept",
}


def test_tools_get_the_allow_listed_variables_only() -> None:
    """Everything not on the list is withheld, whatever its name: ``DATABASE_URL``, ``GH_PAT``, a plain
    setting, the orchestrator's own configuration."""
    assert tool_environment(ENV) == {"PATH": "/usr/bin", "HOME": "/home/u", "LC_ALL": "C.UTF-8"}
    assert {"PATH", "HOME", "LANG", "TMPDIR", "SSL_CERT_FILE"} <= BASE_TOOL_ENVIRONMENT


def test_the_deployment_and_the_variable_add_names_but_never_the_orchestrators_own() -> None:
    env = {**ENV, TOOL_ENV_ALLOW_VARIABLE: " GITHUB_TOKEN , ORCHESTRATOR_API_KEY,,github_token"}
    kept = tool_environment(env, ["GH_PAT", "ORCHESTRATOR_TOKEN", "PLAIN_SETTING"])
    assert kept["GITHUB_TOKEN"] == "ghp_abcdefgh" and kept["GH_PAT"] == "gh-pat-value-0001"
    assert kept["PLAIN_SETTING"] == "kept"
    assert not {"ORCHESTRATOR_API_KEY", "ORCHESTRATOR_TOKEN", "DATABASE_URL", "db_password"} & set(kept)
    assert TOOL_ENV_ALLOW_VARIABLE not in kept  # configuration of the orchestrator, not the tool's business


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MYSQL_PWD", "pa55w0rd-xyz"),
        ("DATABASE_URL", "postgres://u:pa55w0rd-xyz@h/db"),
        ("SENTRY_DSN", "https://4f1c2e9a77b@o1.ingest.sentry.io/5"),
        ("UNNAMED", "c2VjcmV0LXZhbHVlLTAwMDE"),
        ("DEPLOY_WEBHOOK", "https://hooks.example.com/T0/B0/XyZ"),  # a plain URL, but a secret-looking name
        ("WEIRD", "a1 b2 c3 d4"),
    ],
)
def test_withheld_values_are_secret_unless_plainly_not(name: str, value: str) -> None:
    assert withheld_value_is_secret(name, value)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("VIRTUAL_ENV", "/work/project/.venv"),
        ("PYTHONPATH", "/a/src:/b/lib:"),
        ("PWD", "/work/project"),
        ("HOSTNAME", "8f3a2b1c9d0e"),
        ("GITHUB_SHA", "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"),
        ("XDG_RUNTIME_DIR", "/run/user/1000"),
        ("SSH_CONNECTION", "10.0.0.1 51234 10.0.0.2 22"),
        ("DEBIAN_FRONTEND", "noninteractive"),
        ("PIP_INDEX_URL", "https://pypi.org/simple"),
        ("ORCHESTRATOR_API_BASE", "http://127.0.0.1:8080/v1"),
        ("SHORT", "1234567"),
        ("GIT_AUTHOR_NAME", "Jane Q. Doe-Smith"),
        ("MAINTAINER", "Jane Doe"),
        ("CONTACT", "jane.doe+ci@example.co.uk"),
    ],
)
def test_plain_values_and_known_names_are_not(name: str, value: str) -> None:
    assert not withheld_value_is_secret(name, value)


def test_secret_values_gather_variables_files_and_the_workspace_token(tmp_path: Path, secrets_dir: Path) -> None:
    (secrets_dir / "orchestrator_api_key").write_text("file-model-key\n")
    (secrets_dir / "kagi_api_key").write_text("file-kagi-key\n")
    (secrets_dir / "orchestrator_token").write_text("file-token-value\n")
    workspace = tmp_path / "ws"
    (workspace / ".orchestration").mkdir(parents=True)
    (workspace / ".orchestration" / "token").write_text("workspace-token-value\n")
    env = {
        "ORCHESTRATOR_API_KEY": " env-model-key ",
        "GITHUB_TOKEN": "ghp_abcdefgh",
        "PATH": "/usr/bin",
        "K": "",
        "DATABASE_URL": "postgres://u:pa55w0rd-xyz@h/db",
        "ALLOWED_BY_DEPLOYMENT": "allowed-and-plain-42",
        "VIRTUAL_ENV": "/work/.venv",
    }
    values = secret_values(env, secrets_dir, workspace, allow=["ALLOWED_BY_DEPLOYMENT"])
    assert sorted(values) == sorted(
        [
            "env-model-key",
            "ghp_abcdefgh",
            "postgres://u:pa55w0rd-xyz@h/db",
            "file-model-key",
            "file-kagi-key",
            "file-token-value",
            "workspace-token-value",
        ]
    )
    assert secret_values({}, secrets_dir / "missing", tmp_path / "no-workspace") == []


# --- the redactor over these values -------------------------------------------------------------------


def test_scrub_keeps_its_contract() -> None:
    assert scrub(["key sk-abcdefgh"], "sk-abcdefgh") == ["key <redacted>"]
    assert scrub(["x"], None) == ["x"] and scrub(["ab"], "ab") == ["ab"]


def test_load_redactor_reads_the_same_sources(tmp_path: Path, secrets_dir: Path) -> None:
    (secrets_dir / "ORCHESTRATOR_KAGI_API_KEY").write_text("kagi-upper-file\n")
    redactor = load_redactor({"MY_PASSWORD": "correct horse", "MYSQL_PWD": "pa55w0rd-xyz"}, secrets_dir, tmp_path)
    text = "kagi-upper-file / correct horse / pa55w0rd-xyz"
    assert redactor.redact(text) == "<redacted> / <redacted> / <redacted>"
    assert REDACTED == "<redacted>"
