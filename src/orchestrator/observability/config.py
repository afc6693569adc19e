"""Whether and where the trace export goes: the standard OpenTelemetry variables, then the deployment's
``observability`` block for what they do not cover (pure: the environment is passed in).

Off unless configured: an ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``…_TRACES_ENDPOINT``) turns it on, and so
does an ``observability`` block that does not say ``"enabled": false``. ``OTEL_SDK_DISABLED=true`` and
``OTEL_TRACES_EXPORTER=none`` turn it off whatever else is set. A variable wins over the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

from orchestrator.config.deployment import ObservabilityConfig

__all__ = ["CAPTURE_VARIABLE", "DEFAULT_ENDPOINT", "ExportConfig", "export_config", "parse_headers"]

#: Where an OTLP/HTTP collector listens by default (its traces path is appended).
DEFAULT_ENDPOINT = "http://localhost:4318"
CAPTURE_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_TRUE = frozenset({"true", "1", "yes", "on"})


@dataclass(frozen=True)
class ExportConfig:
    """A resolved trace export. ``headers`` may hold credentials: never print them."""

    endpoint: str
    service_name: str = "orchestrator"
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    capture_content: bool = False
    #: spans waiting for the exporter beyond this are dropped (counted), never waited for
    max_queue_size: int | None = None
    #: one export request's bound (the exporter's own retries stay inside it)
    export_timeout_seconds: float = 10.0
    #: how long the end of a process waits for the spans still queued
    shutdown_timeout_seconds: float = 3.0


def parse_headers(text: str) -> dict[str, str]:
    """``OTEL_EXPORTER_OTLP_HEADERS``: ``key=value`` pairs, comma-separated, URL-encoded; a malformed pair
    is skipped."""
    headers: dict[str, str] = {}
    for pair in text.split(","):
        key, sep, value = pair.partition("=")
        if sep and key.strip():
            headers[unquote(key.strip()).lower()] = unquote(value.strip())
    return headers


def _traces_url(base: str) -> str:
    return base.rstrip("/") + "/v1/traces"


def export_config(env: Mapping[str, str], block: ObservabilityConfig | None) -> ExportConfig | None:
    """The export this process should run, or ``None`` when it is off."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return None
    traces = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if not traces and not base and (block is None or not block.enabled):
        return None
    endpoint = traces or _traces_url(base or (block.endpoint if block and block.endpoint else DEFAULT_ENDPOINT))
    headers = env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or env.get("OTEL_EXPORTER_OTLP_HEADERS") or ""
    capture = env.get(CAPTURE_VARIABLE)
    service = env.get("OTEL_SERVICE_NAME", "").strip() or (block.service_name if block else None)
    return ExportConfig(
        endpoint=endpoint,
        service_name=service or "orchestrator",
        headers=parse_headers(headers),
        capture_content=capture.strip().lower() in _TRUE
        if capture is not None
        else bool(block and block.capture_message_content),
        max_queue_size=block.max_queue_size if block else None,
        export_timeout_seconds=block.export_timeout_seconds if block and block.export_timeout_seconds else 10.0,
        shutdown_timeout_seconds=block.shutdown_timeout_seconds
        if block and block.shutdown_timeout_seconds is not None
        else 3.0,
    )
