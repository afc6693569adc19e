"""The span and attribute names of the trace export, defined once.

The ``gen_ai.*`` names are those of the OpenTelemetry GenAI semantic conventions as shipped in
``opentelemetry-semantic-conventions`` 0.66b2 (the package ``opentelemetry-sdk`` 1.45.2 installs;
``tests/observability/test_attributes.py`` holds them equal to its constants). Everything the conventions
do not name is under ``orchestrator.*``. A leaf module: no OpenTelemetry import, so the fold stays pure and
importable without the ``otel`` extra.
"""

from __future__ import annotations

from typing import Final

SEMCONV_PACKAGE: Final = "opentelemetry-semantic-conventions 0.66b2"

# --- GenAI semantic conventions ---------------------------------------------------------------------
OPERATION_NAME: Final = "gen_ai.operation.name"
PROVIDER_NAME: Final = "gen_ai.provider.name"
CONVERSATION_ID: Final = "gen_ai.conversation.id"
AGENT_NAME: Final = "gen_ai.agent.name"
AGENT_ID: Final = "gen_ai.agent.id"
REQUEST_MODEL: Final = "gen_ai.request.model"
REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
#: the model the endpoint says answered (``llm_call``'s ``responseModel``)
RESPONSE_MODEL: Final = "gen_ai.response.model"
#: seconds from the request to the first streamed chunk (live export only: the log does not record it)
RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
#: The general semantic conventions' error attribute.
ERROR_TYPE: Final = "error.type"

# --- operation names (values of gen_ai.operation.name) ----------------------------------------------
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_CHAT: Final = "chat"
OP_EXECUTE_TOOL: Final = "execute_tool"
#: The model speaks the OpenAI Responses API: the wire protocol names the provider.
PROVIDER: Final = "openai"

# --- orchestrator.* ----------------------------------------------------------------------------------
RUN_ID: Final = "orchestrator.run.id"
RUN_STATUS: Final = "orchestrator.run.status"
RUN_EFFORT: Final = "orchestrator.run.effort"
RUN_CONTINUES_FROM: Final = "orchestrator.run.continues_from"
RUN_RESUMES: Final = "orchestrator.run.resumes"
ROLE_DEPTH: Final = "orchestrator.role.depth"
ROLE_STATUS: Final = "orchestrator.role.status"
ROLE_HANDLER_FOR: Final = "orchestrator.role.handler_for"
ROLE_TASK: Final = "orchestrator.role.task"
ROLE_SUMMARY: Final = "orchestrator.role.summary"
LLM_MESSAGE_COUNT: Final = "orchestrator.llm.message_count"
LLM_SENT_FROM: Final = "orchestrator.llm.sent_from"
LLM_RETRIES: Final = "orchestrator.llm.retries"
TOOL_ARGUMENTS_SIZE: Final = "orchestrator.tool.arguments_size"
TOOL_RESULT_SIZE: Final = "orchestrator.tool.result_size"
TOOL_OUTCOME: Final = "orchestrator.tool.outcome"
TOOL_SEVERITY: Final = "orchestrator.tool.severity"
TOOL_EXIT_CODE: Final = "orchestrator.tool.exit_code"
INTERLUDE_TRIGGER: Final = "orchestrator.interlude.trigger"
INTERLUDE_HANDLER: Final = "orchestrator.interlude.handler"
INTERLUDE_TARGET: Final = "orchestrator.interlude.target"
INTERLUDE_ACTION: Final = "orchestrator.interlude.action"
INTERLUDE_HANDLER_STATUS: Final = "orchestrator.interlude.handler_status"
PLAN_ABORTED: Final = "orchestrator.plan.aborted"
PLAN_MESSAGE: Final = "orchestrator.plan.message"
COMPACTION_PREFIX: Final = "orchestrator.compaction."
QUESTION_ID: Final = "orchestrator.question.id"
QUESTION_WAIT_MS: Final = "orchestrator.question.wait_ms"
QUESTION_ANSWERED: Final = "orchestrator.question.answered"
QUESTION_TEXT: Final = "orchestrator.question.text"
QUESTION_ANSWER: Final = "orchestrator.question.answer"
RESUME_GAP_MS: Final = "orchestrator.resume.gap_ms"
RESUME_FRAMES: Final = "orchestrator.resume.frames"

# --- the workflow server's MCP tool calls -------------------------------------------------------------
#: The MCP semantic conventions' method attribute (``tools/call``).
MCP_METHOD_NAME: Final = "mcp.method.name"
WORKFLOW_SESSION_INDEX: Final = "orchestrator.workflow.session_index"
WORKFLOW_ID: Final = "orchestrator.workflow.id"
WORKFLOW_ACTIVITY: Final = "orchestrator.workflow.activity"
WORKFLOW_AGENT_ID: Final = "orchestrator.workflow.agent_id"
