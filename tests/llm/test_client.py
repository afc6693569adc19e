"""The client's pure pieces: stall bounds from the environment and the HTTP error excerpt."""

from __future__ import annotations

import pytest

from orchestrator.errors import ConfigError
from orchestrator.llm.client import (
    ERROR_HEAD,
    ERROR_TAIL,
    LlmTimeouts,
    deterministic_http_error,
    error_excerpt,
    timeouts_from_env,
)


def test_an_empty_environment_gives_the_defaults() -> None:
    assert timeouts_from_env({}) == LlmTimeouts()
    assert timeouts_from_env({"ORCHESTRATOR_STALL_HEADERS_SECONDS": ""}) == LlmTimeouts()


def test_each_variable_sets_its_bound_and_nothing_else() -> None:
    env = {
        "ORCHESTRATOR_STALL_HEADERS_SECONDS": "60",
        "ORCHESTRATOR_STALL_IDLE_SECONDS": "2.5",
        "ORCHESTRATOR_LLM_BACKOFF_SECONDS": "0.01",
        "UNRELATED": "x",
    }
    timeouts = timeouts_from_env(env)
    assert (timeouts.headers_seconds, timeouts.idle_seconds, timeouts.backoff_seconds) == (60.0, 2.5, 0.01)
    defaults = LlmTimeouts()
    assert (timeouts.attempts, timeouts.backoff_cap_seconds, timeouts.load_wait_seconds) == (
        defaults.attempts,
        defaults.backoff_cap_seconds,
        defaults.load_wait_seconds,
    )


@pytest.mark.parametrize("text", ["0", "-1", "soon", "inf", "nan", " 5", "5 "])
def test_a_value_that_is_not_a_positive_finite_number_names_the_variable(text: str) -> None:
    with pytest.raises(ConfigError) as info:
        timeouts_from_env({"ORCHESTRATOR_STALL_IDLE_SECONDS": text})
    assert info.value.problems == [f"ORCHESTRATOR_STALL_IDLE_SECONDS={text!r}: expected a positive number of seconds"]


def test_every_bad_variable_is_reported_at_once() -> None:
    env = {"ORCHESTRATOR_STALL_HEADERS_SECONDS": "x", "ORCHESTRATOR_LLM_BACKOFF_SECONDS": "0"}
    with pytest.raises(ConfigError) as info:
        timeouts_from_env(env)
    assert [problem.split("=")[0] for problem in info.value.problems] == [
        "ORCHESTRATOR_STALL_HEADERS_SECONDS",
        "ORCHESTRATOR_LLM_BACKOFF_SECONDS",
    ]


def test_an_error_body_up_to_the_bound_is_kept_whole() -> None:
    body = "y" * (ERROR_HEAD + ERROR_TAIL + 20)
    assert error_excerpt(body.encode()) == body


def test_a_longer_body_keeps_head_and_tail_and_counts_the_gap() -> None:
    body = "h" * ERROR_HEAD + "m" * 500 + "t" * ERROR_TAIL
    assert error_excerpt(body.encode()) == f"{'h' * ERROR_HEAD} … [500 chars] … {'t' * ERROR_TAIL}"


def test_undecodable_bytes_are_replaced_not_raised() -> None:
    assert error_excerpt(b"bad \xff byte") == "bad \ufffd byte"


_JINJA = b'{"error":{"code":500,"message":"Jinja Exception: System message must be at the beginning."}}'


@pytest.mark.parametrize(
    ("status", "body", "deterministic"),
    [
        (500, _JINJA, True),  # llama-server's template exception: the same request fails every time
        (500, b'{"error":{"message":"Failed to parse tool call arguments as JSON: x"}}', True),
        (500, b"tools param requires --jinja flag", True),
        (500, b'{"error":{"code":500,"message":"sim: scripted failure (HTTP 500)","type":"server_error"}}', False),
        (500, b"", False),
        (502, b"bad gateway", False),
        (503, b'{"error":{"message":"Loading model"}}', False),
        (503, b"busy", False),
        (504, b"", False),
        (400, b'{"error":{"message":"bad field"}}', True),
        (401, b"", True),
        (404, b"not found", True),
        (422, b"", True),
        (408, b"", False),
        (409, b"", False),
        (429, b"slow down", False),
        (501, b"", True),
    ],
)
def test_deterministic_errors_are_told_from_transient_ones(status: int, body: bytes, deterministic: bool) -> None:
    assert deterministic_http_error(status, body) is deterministic
