"""Pure translations: model-facing names and call results (built from the SDK's own types)."""

from __future__ import annotations

from mcp import types

from orchestrator.mcpclient.results import model_tool_name, scrub_value, to_tool_result


def test_model_names_are_namespaced_and_safe() -> None:
    assert model_tool_name("github", "create_issue") == "github__create_issue"
    assert model_tool_name("fs", "read.file/v2") == "fs__read_file_v2"
    assert len(model_tool_name("s", "x" * 100)) == 64


def test_results_prefer_structured_content_and_scrub_secrets() -> None:
    text = types.CallToolResult(content=[types.TextContent(type="text", text="key=abcdefghij")])
    assert to_tool_result("s", "t", text, ["abcdefghij"]).data == {"text": "key=<redacted>"}
    structured = types.CallToolResult(content=[], structured_content={"n": 1, "k": "abcdefghij"})
    assert to_tool_result("s", "t", structured, ["abcdefghij"]).data == {"n": 1, "k": "<redacted>"}
    error = types.CallToolResult(content=[types.TextContent(type="text", text="boom")], is_error=True)
    result = to_tool_result("s", "t", error, [])
    assert result.kind == "tool_error" and result.message == "MCP tool s/t failed: boom"
    image = types.CallToolResult(content=[types.ImageContent(type="image", data="AA==", mime_type="image/png")])
    assert to_tool_result("s", "t", image, []).data == {"text": "[image content omitted]"}


def test_short_values_are_not_scrubbed() -> None:
    assert scrub_value({"a": ["abc"]}, ["abc"]) == {"a": ["abc"]}
