"""Secret lookup order, trimming, empty-means-unset, and that a value never shows up in text."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.config.secrets import Secret, read_api_key, read_secret


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
