"""The one place the OpenTelemetry SDK is used: the sink's own thread folds what is handed to it into
``SpanData`` and turns those into the SDK's spans → a ``BatchSpanProcessor`` with a bounded queue → the
OTLP/HTTP exporter, in the processor's own thread.

``defer`` (a run's log lines, ``observability.live``) and ``submit`` (finished spans) only append to the
sink's bounded hand-off (a deque): the trio code that calls them never waits on the network, nor folds or
converts anything (the sink's thread does, every 200 ms). A collector that is down, slow or refusing costs
spans, not time: a full hand-off refuses what is handed to it (a refused log line cuts its run's trace,
see ``live``), a full processor queue drops its oldest, a failed export drops its batch (and a collector
not known to answer is probed with a few spans before a whole batch is encoded for it); all are counted
(``ExportReport``) and the first failure is logged once. ``close`` is the one blocking call, bounded by
``shutdownTimeoutSeconds``; async callers run it in a worker thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from orchestrator import __version__
from orchestrator.observability.config import ExportConfig
from orchestrator.observability.report import ExportReport
from orchestrator.observability.spans import SpanData

__all__ = ["ExportReport", "SpanSink", "to_readable"]

logger = logging.getLogger("orchestrator.observability")
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_SCOPE = InstrumentationScope("orchestrator", __version__)
_KINDS = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT, "server": SpanKind.SERVER}
_STATUS = {"unset": StatusCode.UNSET, "ok": StatusCode.OK, "error": StatusCode.ERROR}
#: The SDK's own loggers repeat every failed attempt; the sink reports drops itself, once.
_QUIET = ("opentelemetry.exporter", "opentelemetry.sdk._shared_internal")
#: The processor's queue size when the configuration leaves it to the SDK (its default).
_DEFAULT_QUEUE = 2048
#: How often the sink's thread folds and converts what was handed to it (a wake per event would cost the
#: run more).
_POLL_SECONDS = 0.2
#: After a failed export, batches are dropped unsent for this long, doubling while it fails, up to the max.
_BACKOFF_FIRST = 1.0
_BACKOFF_MAX = 30.0
#: The spans a probe sends: the first export, and the first after a back-off, sends only these first.
_PROBE_SPANS = 8
T = TypeVar("T")
#: one hand-off entry: a fold and its input (``_given`` for spans already finished)
_Work = tuple[Callable[[Any], Sequence[SpanData]], object]


def _given(spans: Sequence[SpanData]) -> Sequence[SpanData]:
    return spans


def to_readable(span: SpanData, resource: Resource) -> ReadableSpan:
    """The SDK's read-only span for one finished ``SpanData`` (ids, times and tree kept as they are)."""
    context = SpanContext(span.trace_id, span.span_id, is_remote=False, trace_flags=_SAMPLED)
    parent = (
        None
        if span.parent_id is None
        else SpanContext(span.trace_id, span.parent_id, is_remote=False, trace_flags=_SAMPLED)
    )
    return ReadableSpan(
        name=span.name,
        context=context,
        parent=parent,
        resource=resource,
        attributes=dict(span.attributes),
        events=[Event(e.name, dict(e.attributes), e.time_ns) for e in span.events],
        links=[Link(SpanContext(t, s, is_remote=True, trace_flags=_SAMPLED)) for t, s in span.links],
        kind=_KINDS[span.kind],
        status=Status(_STATUS[span.status], span.status_message or None)
        if span.status == "error"
        else Status(_STATUS[span.status]),
        start_time=span.start_ns,
        end_time=span.end_ns,
        instrumentation_scope=_SCOPE,
    )


class _Counting(SpanExporter):
    """Wraps the real exporter: counts what it delivered and logs the first failure once. Encoding a batch
    costs the process ~30 µs a span (the SDK's protobuf encoder, under the interpreter lock the runs share),
    so a collector not known to answer is never sent a whole batch:

    - after a failed export, batches are dropped without being encoded or sent for a while (``_BACKOFF_*``,
      doubling while it fails): a collector that is down or refusing costs a request now and then, not one
      per batch;
    - the first export, and the first after each back-off, is a probe: only the batch's first
      ``_PROBE_SPANS`` spans are sent, and the rest follows only once the collector took them (when it did
      not, the rest is dropped unsent, counted).
    """

    def __init__(self, inner: SpanExporter, endpoint: str) -> None:
        self.inner = inner
        self.endpoint = endpoint
        self.exported = 0
        self._warned = False
        self._answering = False  # the last export succeeded: whole batches go out
        self._backoff = 0.0
        self._resume_at = 0.0
        self._lock = threading.Lock()

    @property
    def paused(self) -> bool:
        """Within the back-off after a failed export: spans are dropped unsent (counted)."""
        return time.monotonic() < self._resume_at

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self.paused:
            return SpanExportResult.FAILURE
        if self._answering or len(spans) <= _PROBE_SPANS:
            return self._send(spans)
        if self._send(spans[:_PROBE_SPANS]) is SpanExportResult.FAILURE:
            return SpanExportResult.FAILURE
        return self._send(spans[_PROBE_SPANS:])

    def _send(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception:  # an exporter must not take the worker thread down
            result = SpanExportResult.FAILURE
        with self._lock:
            self._answering = result is SpanExportResult.SUCCESS
            if self._answering:
                self.exported += len(spans)
                self._backoff = 0.0
            else:
                self._backoff = min(max(2 * self._backoff, _BACKOFF_FIRST), _BACKOFF_MAX)
                self._resume_at = time.monotonic() + self._backoff
                if not self._warned:
                    self._warned = True
                    logger.warning(
                        "trace export to %s failed; spans are dropped until it answers (the run goes on)",
                        self.endpoint,
                    )
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class SpanSink:
    """A process's trace export: many runs may submit to one sink; ``close`` once at the end."""

    def __init__(
        self,
        config: ExportConfig,
        exporter: SpanExporter | None = None,
        *,
        schedule_delay_millis: float | None = None,
        handoff: int | None = None,
    ) -> None:
        """``handoff``: the hand-off's bound in entries (default: the processor's queue size in spans)."""
        for name in _QUIET:
            logging.getLogger(name).setLevel(logging.CRITICAL)
        self.config = config
        inner = exporter or OTLPSpanExporter(
            endpoint=config.endpoint, headers=config.headers or None, timeout=config.export_timeout_seconds
        )
        self._exporter = _Counting(inner, config.endpoint)
        size = config.max_queue_size
        self._processor = BatchSpanProcessor(
            self._exporter,
            max_queue_size=size,
            schedule_delay_millis=schedule_delay_millis,
            max_export_batch_size=min(size, 512) if size is not None else None,
        )
        self.resource = Resource.create({"service.name": config.service_name})
        self.unfolded = 0
        self._submitted = 0  # spans handed over finished (``submit``; the callers' threads)
        self._folded = 0  # spans the folds produced (the sink's thread)
        self._closed = False
        #: folds and batches handed over, not run yet: an append is atomic and wakes no thread; at most as
        #: many entries as the processor's queue holds spans (more are refused, counted)
        self._handoff: deque[_Work] = deque()
        self._handed = 0  # entries appended (the callers' threads)
        self._done = 0  # entries folded and converted (the sink's thread)
        #: the sink's thread's CPU time spent folding and converting (bench/otel_overhead.py reports it)
        self.busy_seconds = 0.0
        self._bound = handoff or (size if size is not None else _DEFAULT_QUEUE)
        self._stop = threading.Event()
        self._converter = threading.Thread(target=self._convert, name="otel-sink-convert", daemon=True)
        self._converter.start()

    @property
    def capture_content(self) -> bool:
        return self.config.capture_content

    @property
    def submitted(self) -> int:
        return self._submitted + self._folded

    def submit(self, spans: Sequence[SpanData]) -> None:
        """Hand finished spans to the sink's thread; never blocks (a full hand-off drops them, counted)."""
        if self._closed:
            return
        self._submitted += len(spans)
        if len(self._handoff) < self._bound:
            self._handed += 1
            self._handoff.append((_given, spans))

    def defer(self, fold: Callable[[T], Sequence[SpanData]], item: T, *, always: bool = False) -> bool:
        """Run ``fold(item)`` on the sink's thread, in the order handed over, and send the spans it returns.
        ``item`` must be immutable (``bytes``, a tuple …). Never blocks: ``False`` (counted in ``unfolded``)
        when the hand-off is full, unless ``always`` (a run's one closing fold)."""
        if self._closed:
            return False
        if not always and len(self._handoff) >= self._bound:
            self.unfolded += 1
            return False
        self._handed += 1
        self._handoff.append((fold, item))
        return True

    @property
    def pending(self) -> int:
        """Entries handed over and not folded and converted yet (the bench waits for 0)."""
        return self._handed - self._done

    def _convert(self) -> None:
        """The sink's thread: every ``_POLL_SECONDS`` (and once at ``close``), each handed-off fold → its
        spans → the SDK's spans → the processor's queue."""
        while True:
            stopping = self._stop.wait(_POLL_SECONDS)
            started = time.thread_time()
            while self._handoff:
                fold, item = self._handoff.popleft()
                try:
                    spans = fold(item)
                    if fold is not _given:
                        self._folded += len(spans)
                    if self._exporter.paused:  # they would be dropped unsent: not converted either
                        continue
                    for span in spans:
                        self._processor.on_end(to_readable(span, self.resource))
                except Exception:  # never take the thread down: the batch is dropped (counted: never exported)
                    logger.exception("trace export: could not convert a span")
                finally:
                    self._done += 1
            self.busy_seconds += time.thread_time() - started
            if stopping:
                return

    def _drain(self) -> None:
        self._converter.join()  # every span handed off before ``close`` reaches the processor
        self._processor.shutdown()

    def report(self) -> ExportReport:
        return ExportReport(submitted=self.submitted, exported=self._exporter.exported, unfolded=self.unfolded)

    def close(self) -> ExportReport:
        """Send what is queued, waiting at most ``shutdownTimeoutSeconds``; the rest is dropped."""
        if not self._closed:
            self._closed = True
            self._stop.set()
            # The processor's own shutdown waits up to 30 s on a slow collector: bound it from outside
            # (a daemon thread left behind ends with the process).
            stopper = threading.Thread(target=self._drain, name="otel-sink-close", daemon=True)
            stopper.start()
            stopper.join(self.config.shutdown_timeout_seconds)
        report = self.report()
        if report.dropped:
            logger.warning(
                "trace export: %d of %d spans dropped (collector at %s)",
                report.dropped,
                report.submitted,
                self.config.endpoint,
            )
        if report.unfolded:
            logger.warning(
                "trace export: %d run-log events not folded (the hand-off was full): their runs' traces are cut",
                report.unfolded,
            )
        return report
