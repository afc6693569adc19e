"""The workflow server's MCP tool calls as spans: one ``tools/call <tool>`` span per call (pure conversion,
plus the listener ``orchestrator mcp`` registers on ``WorkflowMCP.call_listeners``).

A workflow session is one trace: its id is derived from the ``session_index`` (a cold call without one is
a trace of its own), so every call of a session lines up in one view, each span a root of its own.
"""

from __future__ import annotations

from orchestrator.observability import attributes as a
from orchestrator.observability.live import TraceSink
from orchestrator.observability.tracestate import AttrValue, SpanData, span_id_for, trace_id_for
from orchestrator.workflow.server import CallRecord

__all__ = ["McpCallExporter", "call_span"]


def call_span(record: CallRecord) -> SpanData:
    """The span of one finished tool call."""
    scope = f"workflow-session:{record.session_index}" if record.session_index else f"workflow-call:{record.started_ns}"
    attrs: dict[str, AttrValue] = {
        a.MCP_METHOD_NAME: "tools/call",
        a.OPERATION_NAME: a.OP_EXECUTE_TOOL,
        a.TOOL_NAME: record.tool,
    }
    for name, value in (
        (a.WORKFLOW_SESSION_INDEX, record.session_index),
        (a.WORKFLOW_ID, record.workflow),
        (a.WORKFLOW_ACTIVITY, record.activity),
        (a.WORKFLOW_AGENT_ID, record.agent_id),
    ):
        if value:
            attrs[name] = value
    if record.error_code is not None:
        attrs[a.ERROR_TYPE] = record.error_code
    return SpanData(
        key=f"call:{record.tool}:{record.started_ns}",
        name=f"tools/call {record.tool}",
        trace_id=trace_id_for(scope),
        span_id=span_id_for(scope, f"call:{record.tool}:{record.started_ns}"),
        parent_id=None,
        start_ns=record.started_ns,
        end_ns=record.started_ns + round(record.ms * 1_000_000),
        attributes=attrs,
        events=(),
        links=(),
        status="error" if record.error_code is not None else "unset",
        status_message=record.error_code or "",
        kind="server",
    )


class McpCallExporter:
    """``WorkflowMCP.call_listeners`` entry: each call's span to the sink (an enqueue, never a wait)."""

    def __init__(self, sink: TraceSink) -> None:
        self.sink = sink

    def __call__(self, record: CallRecord) -> None:
        self.sink.submit([call_span(record)])
