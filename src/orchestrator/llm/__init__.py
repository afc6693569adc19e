"""Responses-API streaming client: request building, SSE parsing, stall deadlines and retries."""

from orchestrator.llm.client import (
    ContextRejected,
    LlmClient,
    LlmTimeouts,
    OnRetry,
    Publish,
    RetryNotice,
    TurnOutcome,
    Unavailable,
    timeouts_from_env,
)
from orchestrator.llm.wire import FunctionTool, ResponsesRequest, Turn, build_request

__all__ = [
    "ContextRejected",
    "FunctionTool",
    "LlmClient",
    "LlmTimeouts",
    "OnRetry",
    "Publish",
    "ResponsesRequest",
    "RetryNotice",
    "Turn",
    "TurnOutcome",
    "Unavailable",
    "build_request",
    "timeouts_from_env",
]
