"""The workflow server's MCP tool calls as spans: the pure conversion, and ``orchestrator mcp`` (stdio,
behind the official MCP client) sending one span per call to a loopback collector."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.observability.collector import collector
from tests.workflow.conftest import McpProcess

from orchestrator.observability.mcpspans import call_span
from orchestrator.observability.tracestate import trace_id_for
from orchestrator.workflow.server import CallRecord


def test_a_call_becomes_a_server_span_in_its_sessions_trace() -> None:
    record = CallRecord(
        tool="next_activity",
        started_ns=1_700_000_000_000_000_000,
        ms=2.5,
        session_index="ABCDEF",
        workflow="code-review",
        activity="scope-review",
        agent_id="",
        error_code=None,
    )
    span = call_span(record)
    assert span.name == "tools/call next_activity" and span.kind == "server" and span.parent_id is None
    assert span.trace_id == trace_id_for("workflow-session:ABCDEF")
    assert span.end_ns - span.start_ns == 2_500_000
    assert span.attributes == {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "next_activity",
        "orchestrator.workflow.session_index": "ABCDEF",
        "orchestrator.workflow.id": "code-review",
        "orchestrator.workflow.activity": "scope-review",
    }
    failed = call_span(CallRecord("discover", 1, 0.1, None, "", "", "", "UnknownTool"))
    assert failed.status == "error" and failed.attributes["error.type"] == "UnknownTool"
    assert failed.trace_id != span.trace_id


def test_orchestrator_mcp_sends_a_span_per_tool_call(tmp_path: Path) -> None:
    with collector("record") as c:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": c.url, "OTEL_SERVICE_NAME": "workflow-test"}
        mcp = McpProcess(tmp_path, env=env).start()
        try:
            mcp.ok("discover")
            index = mcp.ok("start_session", workflow_id="code-review").parsed["session_index"]
            mcp.ok("get_workflow", session_index=index)
            mcp.err("get_workflow", session_index="ZZZZZZ")
        finally:
            mcp.stop()  # stdin closes: the server sends what it holds before it exits
    spans: dict[str, Any] = {}
    for span in c.spans:
        spans.setdefault(span.name, []).append(span)
    assert set(spans) == {"tools/call discover", "tools/call start_session", "tools/call get_workflow"}
    (got, missing) = sorted(spans["tools/call get_workflow"], key=lambda s: s.status.code)
    attributes = {kv.key: kv.value.string_value for kv in got.attributes}
    assert attributes["orchestrator.workflow.session_index"] == index
    assert attributes["orchestrator.workflow.id"] == "code-review"
    assert missing.status.code == 2  # ERROR
    (start,) = spans["tools/call start_session"]
    assert start.trace_id == got.trace_id  # one session, one trace
