"""``errors.py``: the error tree's API-visible kinds and ``ConfigError``'s list of problems."""

from __future__ import annotations

from orchestrator.errors import ERROR_KINDS, ConfigError, LlmUnavailable, OrchestratorError


def test_each_error_has_a_stable_kind_and_derives_from_the_root() -> None:
    assert (ConfigError.kind, LlmUnavailable.kind) == ("invalid_configuration", "llm_unavailable")
    assert issubclass(ConfigError, OrchestratorError) and issubclass(LlmUnavailable, OrchestratorError)
    assert LlmUnavailable.kind in ERROR_KINDS  # a run that ends on it carries it as its card's kind


def test_a_config_error_keeps_every_problem_and_joins_them_in_its_message() -> None:
    error = ConfigError(["`executor.x`: unknown key", "`roles.a`: missing prompt"])
    assert error.problems == ["`executor.x`: unknown key", "`roles.a`: missing prompt"]
    assert str(error) == error.message == "`executor.x`: unknown key; `roles.a`: missing prompt"
    assert ConfigError("one problem").problems == ["one problem"]


def test_an_error_keeps_its_details() -> None:
    error = LlmUnavailable("endpoint down", attempts=3)
    assert (error.message, error.detail) == ("endpoint down", {"attempts": 3})


def test_incomplete_is_a_card_kind() -> None:
    """Issue 25: an implicit finish after a cut-off, or one repeating a platform notice, is ``incomplete``."""
    assert "incomplete" in ERROR_KINDS
