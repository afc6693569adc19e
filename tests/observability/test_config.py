"""Resolving the trace export from the standard OTEL_* variables and the deployment's block."""

from __future__ import annotations

import logging

from orchestrator.config.deployment import ObservabilityConfig
from orchestrator.config.secrets import looks_secret, tool_environment
from orchestrator.observability.config import DEFAULT_ENDPOINT, export_config, parse_headers
from orchestrator.observability.live import open_sink
from orchestrator.observability.report import ExportReport

BLOCK = ObservabilityConfig(endpoint="http://collector:4318/", service_name="from-file", capture_message_content=True)


def test_off_unless_configured() -> None:
    assert export_config({}, None) is None
    assert export_config({}, ObservabilityConfig(enabled=False)) is None


def test_the_endpoint_variable_turns_it_on_and_gets_the_traces_path() -> None:
    config = export_config({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318/"}, None)
    assert config is not None and config.endpoint == "http://127.0.0.1:4318/v1/traces"
    assert config.service_name == "orchestrator" and not config.capture_content
    traces = export_config({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://h:1/custom"}, None)
    assert traces is not None and traces.endpoint == "http://h:1/custom"


def test_a_block_turns_it_on_and_variables_win_over_it() -> None:
    config = export_config({}, BLOCK)
    assert config is not None
    assert (config.endpoint, config.service_name, config.capture_content) == (
        "http://collector:4318/v1/traces",
        "from-file",
        True,
    )
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318",
        "OTEL_SERVICE_NAME": "from-env",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "false",
    }
    config = export_config(env, BLOCK)
    assert config is not None
    assert (config.endpoint, config.service_name, config.capture_content) == (
        "http://env:4318/v1/traces",
        "from-env",
        False,
    )
    assert export_config({}, ObservabilityConfig()).endpoint == DEFAULT_ENDPOINT + "/v1/traces"  # type: ignore[union-attr]


def test_disabled_by_the_sdk_switches_whatever_else_is_set() -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318"}
    assert export_config({**env, "OTEL_SDK_DISABLED": "TRUE"}, BLOCK) is None
    assert export_config({**env, "OTEL_TRACES_EXPORTER": "none"}, BLOCK) is None


def test_headers_are_parsed_and_kept_secret() -> None:
    assert parse_headers("Authorization=Basic%20abc%3D, x-team = blue,broken") == {
        "authorization": "Basic abc=",
        "x-team": "blue",
    }
    config = export_config({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_HEADERS": "k=v"}, None)
    assert config is not None and config.headers == {"k": "v"} and "k" not in repr(config)
    assert looks_secret("OTEL_EXPORTER_OTLP_HEADERS") and looks_secret("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
    assert "OTEL_EXPORTER_OTLP_HEADERS" not in tool_environment({"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=x"})


def test_a_sink_that_cannot_start_leaves_the_process_untraced(caplog) -> None:
    """The SDK refuses the configuration in the export's own process (``sidecar``): it says so here, and
    takes what is shipped to it without exporting it."""
    caplog.set_level(logging.WARNING)
    block = ObservabilityConfig(max_queue_size=-5)  # refused by the SDK (the file's rules refuse it too)
    sink = open_sink({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}, block)
    assert sink is not None
    sink.submit([])
    assert sink.close() == ExportReport(submitted=0, exported=0)
    assert "trace export is off: it could not start (ValueError" in caplog.text
    assert open_sink({}, None) is None
