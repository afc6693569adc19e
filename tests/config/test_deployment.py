"""The deployment file: strict decoding, value rules, the apiKey pointer, handler-role cross-checks, and the
`toolEnvironment` and `fetchUrl.allowHosts` sections."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.config.deployment import (
    DEFAULT_CONTEXT_PRESSURE_THRESHOLD,
    Deployment,
    decode_deployment,
    deployment_problems,
    fetch_host_allowed,
    field_value,
)
from orchestrator.errors import ConfigError

FIXTURES = Path(__file__).parent / "fixtures"
BASE: dict[str, Any] = json.loads((FIXTURES / "deployment.json").read_text())
MINIMAL: dict[str, Any] = json.loads((FIXTURES / "deployment-minimal.json").read_text())
ROLES = {"lead", "writer", "janitor", "watcher", "answerer"}
DELETE = object()


def _with(path: str, value: Any, base: dict[str, Any] = BASE) -> bytes:
    """``base`` with the value at a dotted path set (``...=DELETE`` removes the key)."""
    document = json.loads(json.dumps(base))
    *parents, leaf = path.split(".")
    node = document
    for part in parents:
        node = node[part]
    if value is DELETE:
        del node[leaf]
    else:
        node[leaf] = value
    return json.dumps(document).encode()


def _decode_ok(data: bytes) -> Deployment:
    deployment, problems = decode_deployment(data)
    assert problems == []
    assert deployment is not None
    return deployment


def test_full_fixture_decodes_to_snake_case_attributes() -> None:
    deployment = _decode_ok(json.dumps(BASE).encode())
    assert deployment.model.name == "test-model"
    assert deployment.model.context_window == 32768
    assert deployment.model.generation.max_tokens == 4096
    assert deployment.executor.context_pressure_threshold == 0.75
    assert deployment.executor.interrupt_triggers is not None
    assert deployment.executor.interrupt_triggers.plan_owner_role == "lead"
    assert deployment.logging is not None and deployment.logging.level == "standard"
    assert deployment_problems(deployment, ROLES) == []


def test_minimal_file_takes_defaults() -> None:
    deployment = _decode_ok(json.dumps(MINIMAL).encode())
    assert deployment.model.name is None
    assert deployment.model.context_window is None
    assert deployment.executor.context_pressure_threshold == DEFAULT_CONTEXT_PRESSURE_THRESHOLD
    assert deployment.executor.interrupt_triggers is None
    assert deployment.executor.context_handler_role is None
    assert deployment.logging is None
    assert deployment_problems(deployment, ROLES) == []


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (_with("modle", {}), ["unknown field `modle`"]),
        (_with("model.modelName", "x"), ["unknown field `modelName`", "`$.model`"]),
        (_with("model.generation.topP", 1), ["unknown field `topP`", "`$.model.generation`"]),
        (_with("executor.maxDepth", 1), ["unknown field `maxDepth`", "`$.executor`"]),
        (_with("executor.interruptTriggers.every", 1), ["unknown field `every`", "`$.executor.interruptTriggers`"]),
        (_with("contextPolicy.compactAt", 1), ["unknown field `compactAt`", "`$.contextPolicy`"]),
        (_with("logging.levels", "full"), ["unknown field `levels`", "`$.logging`"]),
        (_with("logging.level", "verbose"), ["verbose", "`$.logging.level`"]),
        (_with("schemaVersion", 2), ["unknown field `schemaVersion`"]),
        (_with("model.apiBase", DELETE), ["missing required field `apiBase`", "`$.model`"]),
        (_with("model.generation", DELETE), ["missing required field `generation`", "`$.model`"]),
        (_with("model.generation.maxTokens", DELETE), ["missing required field `maxTokens`"]),
        (_with("executor.maxAgentDepth", DELETE), ["missing required field `maxAgentDepth`", "`$.executor`"]),
        (_with("executor.defaultToolTimeoutSeconds", DELETE), ["`defaultToolTimeoutSeconds`"]),
        (_with("executor.maxCompactionAttempts", DELETE), ["`maxCompactionAttempts`"]),
        (_with("executor.interruptTriggers.everyTokens", DELETE), ["missing required field `everyTokens`"]),
        (_with("contextPolicy", DELETE), ["missing required field `contextPolicy`"]),
        (_with("executor", DELETE), ["missing required field `executor`"]),
        (_with("executor.maxAgentDepth", "8"), ["Expected `int`, got `str`", "`$.executor.maxAgentDepth`"]),
        (_with("executor.maxAgentDepth", 8.5), ["Expected `int`, got `float`", "`$.executor.maxAgentDepth`"]),
        (_with("executor.maxAgentDepth", True), ["Expected `int`, got `bool`"]),
        (_with("model.contextWindow", "big"), ["Expected `int | null`", "`$.model.contextWindow`"]),
        (_with("model.generation.temperature", "hot"), ["`$.model.generation.temperature`"]),
        (b'{"model": {"generation": {"temperature": 1e999}}}', ["out of range"]),
        (b"[]", ["Expected `object`, got `array`"]),
        (b"{not json", ["not valid JSON", "malformed"]),
        (b"", ["not valid JSON", "truncated"]),
    ],
)
def test_decode_rejects_naming_the_key(data: bytes, expected: list[str]) -> None:
    deployment, problems = decode_deployment(data)
    assert deployment is None
    assert len(problems) == 1
    for fragment in expected:
        assert fragment in problems[0]


@pytest.mark.parametrize(
    ("data", "path"),
    [
        (_with("model.apiKey", "sk-secret"), "$.model.apiKey"),
        (_with("apiKey", "sk-secret"), "$.apiKey"),
        (_with("model.generation.apiKey", "sk-secret"), "$.model.generation.apiKey"),
    ],
)
def test_api_key_in_file_points_at_the_variable(data: bytes, path: str) -> None:
    deployment, problems = decode_deployment(data)
    assert deployment is None
    assert len(problems) == 1
    assert f"`{path}`" in problems[0]
    assert "ORCHESTRATOR_API_KEY" in problems[0]
    assert "/run/secrets/orchestrator_api_key" in problems[0]
    assert "sk-secret" not in problems[0]


def test_api_key_and_a_typo_are_both_reported() -> None:
    document = json.loads(_with("model.apiKey", "sk-secret"))
    document["executor"]["maxDepth"] = 3
    _, problems = decode_deployment(json.dumps(document).encode())
    assert len(problems) == 2
    assert "ORCHESTRATOR_API_KEY" in problems[0]
    assert "unknown field `maxDepth`" in problems[1]


@pytest.mark.parametrize(
    ("path", "value", "field", "fragment"),
    [
        ("executor.maxAgentDepth", 0, "executor.maxAgentDepth", "positive integer (got 0)"),
        ("executor.defaultToolTimeoutSeconds", -5, "executor.defaultToolTimeoutSeconds", "positive"),
        ("executor.maxCompactionAttempts", 0, "executor.maxCompactionAttempts", "positive"),
        ("model.contextWindow", 0, "model.contextWindow", "positive"),
        ("model.generation.maxTokens", -1, "model.generation.maxTokens", "positive"),
        ("contextPolicy.maxToolOutputChars", 0, "contextPolicy.maxToolOutputChars", "positive"),
        ("executor.interruptTriggers.everyToolCalls", 0, "executor.interruptTriggers.everyToolCalls", "positive"),
        ("executor.interruptTriggers.everyTokens", -2, "executor.interruptTriggers.everyTokens", "positive"),
        ("executor.contextPressureThreshold", 1, "executor.contextPressureThreshold", "between 0 and 1"),
        ("executor.contextPressureThreshold", 0, "executor.contextPressureThreshold", "between 0 and 1"),
        ("executor.contextPressureThreshold", 1.5, "executor.contextPressureThreshold", "between 0 and 1"),
        ("executor.contextPressureThreshold", -0.1, "executor.contextPressureThreshold", "between 0 and 1"),
        ("model.name", "", "model.name", "non-empty"),
        ("model.apiBase", " ", "model.apiBase", "non-empty"),
        ("executor.contextHandlerRole", "", "executor.contextHandlerRole", "non-empty"),
    ],
)
def test_value_rules_name_the_field(path: str, value: Any, field: str, fragment: str) -> None:
    deployment = _decode_ok(_with(path, value))
    problems = deployment_problems(deployment, ROLES)
    assert len(problems) == 1
    assert problems[0][0] == field
    assert fragment in problems[0][1]


def test_value_rules_report_every_finding_at_once() -> None:
    document = json.loads(json.dumps(BASE))
    document["executor"]["maxAgentDepth"] = 0
    document["contextPolicy"]["maxToolOutputChars"] = 0
    document["executor"]["contextPressureThreshold"] = 2
    problems = deployment_problems(_decode_ok(json.dumps(document).encode()), ROLES)
    assert [field for field, _ in problems] == [
        "executor.maxAgentDepth",
        "contextPolicy.maxToolOutputChars",
        "executor.contextPressureThreshold",
    ]


@pytest.mark.parametrize(
    "field",
    [
        "executor.contextHandlerRole",
        "executor.inquiryHandlerRole",
        "executor.interruptTriggers.handlerRole",
        "executor.interruptTriggers.planOwnerRole",
    ],
)
def test_handler_roles_must_be_declared(field: str) -> None:
    deployment = _decode_ok(_with(field, "ghost"))
    problems = deployment_problems(deployment, ROLES)
    assert len(problems) == 1
    name, message = problems[0]
    assert name == field
    assert "`ghost`" in message
    assert "answerer, janitor, lead, watcher, writer" in message
    # Without the Guild's role names the cross-check is skipped (the Guild failed to load).
    assert deployment_problems(deployment, None) == []


def test_field_value_walks_wire_paths() -> None:
    deployment = _decode_ok(json.dumps(MINIMAL).encode())
    assert field_value(deployment, "model.generation.maxTokens") == 4096
    assert field_value(deployment, "executor.interruptTriggers.handlerRole") is None


def test_config_error_carries_every_problem() -> None:
    error = ConfigError(["a", "b"])
    assert error.problems == ["a", "b"]
    assert error.kind == "invalid_configuration"


def test_an_api_base_with_an_empty_or_bad_port_or_no_host_is_refused() -> None:
    from orchestrator.config.deployment import api_base_problem

    assert api_base_problem("http://127.0.0.1:8080/v1") is None
    assert api_base_problem("https://models.example/v1") is None and api_base_problem("http://[::1]:80/v1") is None
    empty = api_base_problem("http://127.0.0.1:/v1")
    assert empty is not None and "no port" in empty and "'http://127.0.0.1:/v1'" in empty
    assert "invalid port" in (api_base_problem("http://127.0.0.1:99999/v1") or "")
    assert "invalid port" in (api_base_problem("http://127.0.0.1:80a/v1") or "")
    assert "invalid port" in (api_base_problem("http://127.0.0.1:0/v1") or "")
    assert "http:// or https://" in (api_base_problem("127.0.0.1:8080/v1") or "")
    assert "http:// or https://" in (api_base_problem("http:///v1") or "")


def test_tool_environment_and_allow_hosts_decode_and_default() -> None:
    assert _decode_ok(json.dumps(BASE).encode()).tool_environment == []
    assert _decode_ok(json.dumps(BASE).encode()).fetch_url is None
    document = {**BASE, "toolEnvironment": ["GH_PAT", "npm_config_cache"], "fetchUrl": {"allowHosts": ["*.python.org"]}}
    deployment = _decode_ok(json.dumps(document).encode())
    assert deployment.tool_environment == ["GH_PAT", "npm_config_cache"]
    assert deployment.fetch_url is not None and deployment.fetch_url.allow_hosts == ["*.python.org"]
    assert deployment_problems(deployment, ROLES) == []


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"toolEnvironment": "GH_PAT"}, "Expected `array`, got `str` - at `$.toolEnvironment`"),
        ({"fetchUrl": {"allowhosts": []}}, "Object contains unknown field `allowhosts` - at `$.fetchUrl`"),
        ({"fetchUrl": {"allowHosts": "docs.python.org"}}, "Expected `array | null`, got `str`"),
    ],
)
def test_the_new_sections_are_decoded_strictly(document: dict[str, Any], expected: str) -> None:
    deployment, problems = decode_deployment(json.dumps({**BASE, **document}).encode())
    assert deployment is None and any(expected in problem for problem in problems), problems


def test_tool_environment_and_allow_hosts_values_are_checked() -> None:
    document = {
        **BASE,
        "toolEnvironment": ["GH_PAT", "BAD NAME", "ORCHESTRATOR_API_KEY"],
        "fetchUrl": {"allowHosts": ["docs.python.org", "https://example.com", "example.com:443", "Example.com"]},
    }
    problems = deployment_problems(_decode_ok(json.dumps(document).encode()), ROLES)
    assert problems == [
        ("toolEnvironment[1]", "must be an environment variable name like GH_PAT (got 'BAD NAME')"),
        ("toolEnvironment[2]", "ORCHESTRATOR_API_KEY is the orchestrator's own secret and is never passed to tools"),
        *[
            (
                f"fetchUrl.allowHosts[{index}]",
                "must be a lower-case host name like docs.python.org or *.python.org, without scheme, port or path "
                f"(got {host!r})",
            )
            for index, host in ((1, "https://example.com"), (2, "example.com:443"), (3, "Example.com"))
        ],
    ]


def test_allowed_hosts_match_exactly_or_below_a_wildcard() -> None:
    hosts = ["docs.python.org", "*.example.com"]
    assert fetch_host_allowed("docs.python.org", hosts) and fetch_host_allowed("DOCS.python.org.", hosts)
    assert fetch_host_allowed("a.b.example.com", hosts)
    assert not fetch_host_allowed("example.com", hosts) and not fetch_host_allowed("evilexample.com", hosts)
    assert not fetch_host_allowed("python.org", hosts) and not fetch_host_allowed("anything", [])


def _observability(block: Any) -> Deployment:
    document = json.loads(json.dumps(MINIMAL))
    document["observability"] = block
    deployment, problems = decode_deployment(json.dumps(document).encode())
    assert deployment is not None, problems
    return deployment


def test_observability_block_decodes_with_defaults() -> None:
    block = _observability({}).observability
    assert block is not None and block.enabled and block.endpoint is None and not block.capture_message_content
    assert (
        _observability({"endpoint": "http://127.0.0.1:4318", "maxQueueSize": 100}).observability.max_queue_size == 100
    )  # type: ignore[union-attr]


def test_observability_block_rejects_unknown_keys() -> None:
    document = json.loads(json.dumps(MINIMAL))
    document["observability"] = {"endpoitn": "http://x"}
    deployment, problems = decode_deployment(json.dumps(document).encode())
    assert deployment is None and "endpoitn" in problems[0] and "$.observability" in problems[0]


@pytest.mark.parametrize(
    ("block", "field", "fragment"),
    [
        ({"endpoint": "localhost:4318"}, "observability.endpoint", "http:// or https://"),
        ({"maxQueueSize": 0}, "observability.maxQueueSize", "positive integer (got 0)"),
        ({"exportTimeoutSeconds": -1}, "observability.exportTimeoutSeconds", "positive number"),
        ({"shutdownTimeoutSeconds": 0}, "observability.shutdownTimeoutSeconds", "positive number"),
        ({"serviceName": " "}, "observability.serviceName", "non-empty"),
    ],
)
def test_observability_value_rules_name_the_field(block: dict[str, Any], field: str, fragment: str) -> None:
    problems = deployment_problems(_observability(block))
    assert [f for f, _ in problems] == [field] and fragment in problems[0][1]
