"""OpenTelemetry trace export of runs (docs/observability.md): a pure fold of log events into spans
(``spans``), the export's configuration (``config``), the SDK edge (``sink``), the live listener
(``live``) and ``orchestrator export-trace`` (``exporttrace``)."""
