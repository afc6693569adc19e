"""The ORCHESTRATOR_* override table: each variable, the deployment field it sets, how its text parses.

A leaf (pure data, no imports from the rest of the package): ``overrides.py`` parses and merges by it,
and ``secrets.py`` reads it to know that these variables are configuration, not secrets, whatever their
names say.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

__all__ = ["ENV_OVERRIDES", "EnvOverride", "ValueKind"]

ValueKind = Literal["string", "positive_int", "finite_float", "fraction"]


class EnvOverride(NamedTuple):
    """One row of the override table: the variable, the dotted wire path it sets, how it parses."""

    variable: str
    field: str
    kind: ValueKind


#: The seed's table, in its order. Nothing else named ORCHESTRATOR_* touches the deployment.
ENV_OVERRIDES: tuple[EnvOverride, ...] = (
    EnvOverride("ORCHESTRATOR_MODEL", "model.name", "string"),
    EnvOverride("ORCHESTRATOR_API_BASE", "model.apiBase", "string"),
    EnvOverride("ORCHESTRATOR_MODEL_CONTEXT_WINDOW", "model.contextWindow", "positive_int"),
    EnvOverride("ORCHESTRATOR_TEMPERATURE", "model.generation.temperature", "finite_float"),
    EnvOverride("ORCHESTRATOR_MAX_TOKENS", "model.generation.maxTokens", "positive_int"),
    EnvOverride("ORCHESTRATOR_MAX_AGENT_DEPTH", "executor.maxAgentDepth", "positive_int"),
    EnvOverride("ORCHESTRATOR_TOOL_TIMEOUT_SECONDS", "executor.defaultToolTimeoutSeconds", "positive_int"),
    EnvOverride("ORCHESTRATOR_MAX_COMPACTION_ATTEMPTS", "executor.maxCompactionAttempts", "positive_int"),
    EnvOverride("ORCHESTRATOR_CONTEXT_PRESSURE_THRESHOLD", "executor.contextPressureThreshold", "fraction"),
    EnvOverride("ORCHESTRATOR_CONTEXT_HANDLER_ROLE", "executor.contextHandlerRole", "string"),
    EnvOverride("ORCHESTRATOR_INQUIRY_HANDLER_ROLE", "executor.inquiryHandlerRole", "string"),
    EnvOverride("ORCHESTRATOR_INTERRUPT_HANDLER_ROLE", "executor.interruptTriggers.handlerRole", "string"),
    EnvOverride("ORCHESTRATOR_INTERRUPT_EVERY_TOOL_CALLS", "executor.interruptTriggers.everyToolCalls", "positive_int"),
    EnvOverride("ORCHESTRATOR_INTERRUPT_EVERY_TOKENS", "executor.interruptTriggers.everyTokens", "positive_int"),
    EnvOverride("ORCHESTRATOR_INTERRUPT_PLAN_OWNER_ROLE", "executor.interruptTriggers.planOwnerRole", "string"),
    EnvOverride("ORCHESTRATOR_MAX_TOOL_OUTPUT_CHARS", "contextPolicy.maxToolOutputChars", "positive_int"),
)
