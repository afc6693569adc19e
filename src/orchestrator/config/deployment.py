"""The deployment file's schema, its strict decoding, and its value and role-reference checks.

The file (``deployment/deployment.json``) holds the operator's knobs: the model endpoint, the executor
budgets, the context policy and the logging default. Unknown keys are rejected at every level by
``StrictBase``; the types are checked by msgspec while decoding (errors keep msgspec's ``$.path``); the
value rules (positive budgets, a threshold in (0, 1), handler roles declared in the Guild) are checked
afterwards by :func:`deployment_problems`, a pure function that reports every finding at once as
``(field, message)`` pairs so the caller can attribute each one to the file or to the environment
variable that set the field.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterator
from typing import Any
from urllib.parse import urlsplit

import msgspec

from orchestrator.config.mcpservers import McpServer, mcp_server_problems, server_decode_problems
from orchestrator.schema import StrictBase
from orchestrator.vocabulary import LogLevel

__all__ = [
    "DEFAULT_CONTEXT_PRESSURE_THRESHOLD",
    "ROLE_FIELDS",
    "ContextPolicy",
    "Deployment",
    "ExecutorConfig",
    "FetchUrlConfig",
    "FieldProblem",
    "Generation",
    "InterruptTriggers",
    "LoggingConfig",
    "ModelConfig",
    "ObservabilityConfig",
    "api_base_problem",
    "attr_name",
    "decode_deployment",
    "deployment_problems",
    "fetch_host_allowed",
    "field_value",
    "observability_problems",
    "role_reference_problems",
]

DEFAULT_CONTEXT_PRESSURE_THRESHOLD = 0.8

#: The deployment fields that must name a role declared in the Guild (dotted wire paths).
ROLE_FIELDS: tuple[str, ...] = (
    "executor.contextHandlerRole",
    "executor.inquiryHandlerRole",
    "executor.interruptTriggers.handlerRole",
    "executor.interruptTriggers.planOwnerRole",
)

_POSITIVE_INT_FIELDS: tuple[str, ...] = (
    "model.contextWindow",
    "model.generation.maxTokens",
    "executor.maxAgentDepth",
    "executor.defaultToolTimeoutSeconds",
    "executor.maxCompactionAttempts",
    "executor.interruptTriggers.everyToolCalls",
    "executor.interruptTriggers.everyTokens",
    "contextPolicy.maxToolOutputChars",
)

_NON_EMPTY_STRING_FIELDS: tuple[str, ...] = ("model.name", "model.apiBase", *ROLE_FIELDS)

_API_KEY_HINT = (
    "the model credential does not belong in the deployment file: set the ORCHESTRATOR_API_KEY "
    "environment variable or provide the secret file /run/secrets/orchestrator_api_key instead"
)


class Generation(StrictBase):
    """Default sampling parameters applied to every role."""

    temperature: float
    max_tokens: int


class ModelConfig(StrictBase):
    """The model endpoint. ``name`` and ``context_window`` may be left to the startup probe."""

    api_base: str
    generation: Generation
    name: str | None = None
    context_window: int | None = None


class InterruptTriggers(StrictBase):
    """The interrupt platform's loop-check cadence (base thresholds before effort scaling)."""

    handler_role: str
    every_tool_calls: int
    every_tokens: int
    plan_owner_role: str | None = None


class ExecutorConfig(StrictBase):
    """Safety budgets and the Guild roles the engine invokes as handlers."""

    max_agent_depth: int
    default_tool_timeout_seconds: int
    max_compaction_attempts: int
    context_pressure_threshold: float = DEFAULT_CONTEXT_PRESSURE_THRESHOLD
    context_handler_role: str | None = None
    inquiry_handler_role: str | None = None
    interrupt_triggers: InterruptTriggers | None = None


class ContextPolicy(StrictBase):
    """Inline truncation of tool results."""

    max_tool_output_chars: int


class LoggingConfig(StrictBase):
    """The deployment-wide default run-log level."""

    level: LogLevel


class FetchUrlConfig(StrictBase):
    """``fetch_url``'s egress rule: ``allow_hosts`` (``None``: any public host) lists the only hosts it
    may reach — ``example.com`` exactly, ``*.example.com`` any name under it."""

    allow_hosts: list[str] | None = None


class ObservabilityConfig(StrictBase):
    """The trace export (docs/observability.md): what the standard ``OTEL_*`` variables do not cover.

    A variable wins over a field here; the block's presence turns the export on unless ``enabled`` is
    false. Credentials (``OTEL_EXPORTER_OTLP_HEADERS``) never belong in the file.
    """

    enabled: bool = True
    #: the collector's OTLP/HTTP base URL (``/v1/traces`` is appended), when ``OTEL_EXPORTER_OTLP_ENDPOINT``
    #: is not set
    endpoint: str | None = None
    service_name: str | None = None
    capture_message_content: bool = False
    max_queue_size: int | None = None
    export_timeout_seconds: float | None = None
    shutdown_timeout_seconds: float | None = None


class Deployment(StrictBase):
    """The whole deployment file."""

    model: ModelConfig
    executor: ExecutorConfig
    context_policy: ContextPolicy
    logging: LoggingConfig | None = None
    #: MCP servers whose tools roles may list as ``mcp:<server>/<tool>`` (see config/mcpservers.py).
    mcp_servers: dict[str, McpServer] = {}
    #: Variables tool subprocesses get besides the base list (``config.secrets.BASE_TOOL_ENVIRONMENT``).
    tool_environment: list[str] = []
    fetch_url: FetchUrlConfig | None = None
    #: the OpenTelemetry trace export (off unless configured)
    observability: ObservabilityConfig | None = None


#: One value finding: the dotted wire path of the field, and what is wrong with it.
FieldProblem = tuple[str, str]

_DECODER = msgspec.json.Decoder(Deployment)


def decode_deployment(data: bytes) -> tuple[Deployment | None, list[str]]:
    """Decode the file's bytes strictly; return the deployment, or ``None`` and the problems.

    Problems are msgspec's messages (naming the key and its ``$.path``). An ``apiKey`` key anywhere in
    the document gets a dedicated message pointing at ``ORCHESTRATOR_API_KEY``; the rest of the document
    is still checked so other typos are reported in the same pass. Value rules are not checked here.
    """
    try:
        return _DECODER.decode(data), []
    except msgspec.ValidationError as exc:
        first = str(exc)
    except msgspec.DecodeError as exc:
        return None, [f"not valid JSON: {exc}"]
    try:
        raw = msgspec.json.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None, [first]
    if "$.mcpServers[...]" in first and isinstance(raw, dict):
        named = server_decode_problems(raw.get("mcpServers"))
        first = named[0] if named else first
    key_paths = list(_api_key_paths(raw, "$"))
    if not key_paths:
        return None, [first]
    problems = [f"`apiKey` is not allowed - at `{path}`: {_API_KEY_HINT}" for path in key_paths]
    try:
        _DECODER.decode(msgspec.json.encode(_without_api_keys(raw)))
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        problems.append(str(exc))
    return None, problems


def _api_key_paths(value: Any, path: str) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "apiKey":
                yield f"{path}.apiKey"
            else:
                yield from _api_key_paths(item, f"{path}.{key}")


def _without_api_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_api_keys(item) for key, item in value.items() if key != "apiKey"}
    return value


def field_value(deployment: Deployment, field: str) -> Any:
    """The value at a dotted wire path (``"executor.interruptTriggers.handlerRole"``), or ``None``."""
    node: Any = deployment
    for part in field.split("."):
        if node is None:
            return None
        node = getattr(node, attr_name(part))
    return node


def attr_name(camel: str) -> str:
    """The Python attribute behind one camelCase wire key (``maxTokens`` -> ``max_tokens``)."""
    return "".join(f"_{char.lower()}" if char.isupper() else char for char in camel)


def deployment_problems(deployment: Deployment, role_names: Collection[str] | None = None) -> list[FieldProblem]:
    """Every value-rule violation in a decoded (or merged) deployment, as ``(field, message)`` pairs.

    With ``role_names`` (the Guild's declared roles) the handler-role fields are cross-checked too.
    Pure: no I/O, and the order of the result is stable (the order of the fields in the file).
    """
    problems: list[FieldProblem] = []
    for field in _NON_EMPTY_STRING_FIELDS:
        value = field_value(deployment, field)
        if value is not None and not value.strip():
            problems.append((field, "must be a non-empty string"))
    for field in _POSITIVE_INT_FIELDS:
        value = field_value(deployment, field)
        if value is not None and value <= 0:
            problems.append((field, f"must be a positive integer (got {value})"))
    api_base = deployment.model.api_base
    if api_base.strip():
        problem = api_base_problem(api_base)
        if problem is not None:
            problems.append(("model.apiBase", problem))
    temperature = deployment.model.generation.temperature
    if not math.isfinite(temperature):
        problems.append(("model.generation.temperature", f"must be a finite number (got {temperature})"))
    threshold = deployment.executor.context_pressure_threshold
    if not 0.0 < threshold < 1.0:
        problems.append(
            ("executor.contextPressureThreshold", f"must be a number strictly between 0 and 1 (got {threshold})")
        )
    problems.extend(mcp_server_problems(deployment.mcp_servers))
    problems.extend(_tool_environment_problems(deployment.tool_environment))
    if deployment.fetch_url is not None and deployment.fetch_url.allow_hosts is not None:
        problems.extend(_allow_host_problems(deployment.fetch_url.allow_hosts))
    if deployment.observability is not None:
        problems.extend(observability_problems(deployment.observability))
    if role_names is not None:
        problems.extend(role_reference_problems(deployment, role_names))
    return problems


_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HOST_PATTERN = re.compile(r"(?:\*\.)?(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
#: The orchestrator's own secrets: never passed to a tool (``config.secrets.SECRET_FILES``).
_NEVER_TO_TOOLS = ("ORCHESTRATOR_API_KEY", "ORCHESTRATOR_KAGI_API_KEY", "ORCHESTRATOR_TOKEN")


def _tool_environment_problems(names: list[str]) -> list[FieldProblem]:
    problems: list[FieldProblem] = []
    for index, name in enumerate(names):
        field = f"toolEnvironment[{index}]"
        if not _VARIABLE_NAME.fullmatch(name):
            problems.append((field, f"must be an environment variable name like GH_PAT (got {name!r})"))
        elif name in _NEVER_TO_TOOLS:
            problems.append((field, f"{name} is the orchestrator's own secret and is never passed to tools"))
    return problems


def _allow_host_problems(hosts: list[str]) -> list[FieldProblem]:
    return [
        (
            f"fetchUrl.allowHosts[{index}]",
            "must be a lower-case host name like docs.python.org or *.python.org, without scheme, port or path "
            f"(got {host!r})",
        )
        for index, host in enumerate(hosts)
        if not _HOST_PATTERN.fullmatch(host)
    ]


def fetch_host_allowed(host: str, allow_hosts: list[str]) -> bool:
    """Whether ``fetchUrl.allowHosts`` lets ``fetch_url`` reach ``host`` (any case; ``*.x`` is any name under x)."""
    host = host.lower().rstrip(".")
    for allowed in allow_hosts:
        if allowed.startswith("*."):
            if host.endswith(allowed[1:]):
                return True
        elif host == allowed:
            return True
    return False


def api_base_problem(url: str) -> str | None:
    """What is wrong with ``model.apiBase`` as an address to send requests to, or ``None``: an http(s) URL
    with a host, and a port, if a colon announces one, of digits in 1 … 65535 (``http://127.0.0.1:/v1``
    would otherwise be sent to port 80)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"must be an http:// or https:// URL with a host, like http://127.0.0.1:8080/v1 (got {url!r})"
    host_port = parts.netloc.rpartition("@")[2]
    if host_port.endswith(":"):
        return (
            f"has a colon but no port (got {url!r}): write the port after it, like http://127.0.0.1:8080/v1, "
            "or drop the colon for the scheme's default port"
        )
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        return f"has an invalid port (got {url!r}): the port must be a number from 1 to 65535"
    return None


def observability_problems(block: ObservabilityConfig) -> list[FieldProblem]:
    """The ``observability`` block's value rules: an http(s) endpoint, positive bounds."""
    problems: list[FieldProblem] = []
    if block.endpoint is not None:
        parts = urlsplit(block.endpoint.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            problems.append(
                (
                    "observability.endpoint",
                    f"must be the collector's http:// or https:// base URL, like http://127.0.0.1:4318 "
                    f"(got {block.endpoint!r})",
                )
            )
    if block.max_queue_size is not None and block.max_queue_size <= 0:
        problems.append(("observability.maxQueueSize", f"must be a positive integer (got {block.max_queue_size})"))
    for field, value in (
        ("observability.exportTimeoutSeconds", block.export_timeout_seconds),
        ("observability.shutdownTimeoutSeconds", block.shutdown_timeout_seconds),
    ):
        if value is not None and not (math.isfinite(value) and value > 0):
            problems.append((field, f"must be a positive number of seconds (got {value})"))
    if block.service_name is not None and not block.service_name.strip():
        problems.append(("observability.serviceName", "must be a non-empty string"))
    return problems


def role_reference_problems(deployment: Deployment, role_names: Collection[str]) -> list[FieldProblem]:
    """The handler-role fields that name a role the Guild does not declare."""
    declared = ", ".join(sorted(role_names)) or "(none)"
    problems: list[FieldProblem] = []
    for field in ROLE_FIELDS:
        role = field_value(deployment, field)
        if role is not None and role.strip() and role not in role_names:
            problems.append(
                (field, f"names role `{role}`, which the Guild does not declare (declared roles: {declared})")
            )
    return problems
