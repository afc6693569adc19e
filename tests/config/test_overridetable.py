"""``config/overridetable.py``: the override table is the seed's sixteen variables, and it imports nothing of ours."""

from __future__ import annotations

import ast
from pathlib import Path

from orchestrator.config import overridetable
from orchestrator.config.overridetable import ENV_OVERRIDES


def test_the_table_is_the_seeds_sixteen_variables() -> None:
    assert {row.variable: row.field for row in ENV_OVERRIDES} == {
        "ORCHESTRATOR_MODEL": "model.name",
        "ORCHESTRATOR_API_BASE": "model.apiBase",
        "ORCHESTRATOR_MODEL_CONTEXT_WINDOW": "model.contextWindow",
        "ORCHESTRATOR_TEMPERATURE": "model.generation.temperature",
        "ORCHESTRATOR_MAX_TOKENS": "model.generation.maxTokens",
        "ORCHESTRATOR_MAX_AGENT_DEPTH": "executor.maxAgentDepth",
        "ORCHESTRATOR_TOOL_TIMEOUT_SECONDS": "executor.defaultToolTimeoutSeconds",
        "ORCHESTRATOR_MAX_COMPACTION_ATTEMPTS": "executor.maxCompactionAttempts",
        "ORCHESTRATOR_CONTEXT_PRESSURE_THRESHOLD": "executor.contextPressureThreshold",
        "ORCHESTRATOR_CONTEXT_HANDLER_ROLE": "executor.contextHandlerRole",
        "ORCHESTRATOR_INQUIRY_HANDLER_ROLE": "executor.inquiryHandlerRole",
        "ORCHESTRATOR_INTERRUPT_HANDLER_ROLE": "executor.interruptTriggers.handlerRole",
        "ORCHESTRATOR_INTERRUPT_EVERY_TOOL_CALLS": "executor.interruptTriggers.everyToolCalls",
        "ORCHESTRATOR_INTERRUPT_EVERY_TOKENS": "executor.interruptTriggers.everyTokens",
        "ORCHESTRATOR_INTERRUPT_PLAN_OWNER_ROLE": "executor.interruptTriggers.planOwnerRole",
        "ORCHESTRATOR_MAX_TOOL_OUTPUT_CHARS": "contextPolicy.maxToolOutputChars",
    }
    assert len(ENV_OVERRIDES) == 16


def test_the_table_is_a_leaf() -> None:
    """``secrets.py`` reads it and ``overrides.py`` (which builds on the deployment, which reads secrets)
    parses by it: the table importing any of them would close a cycle."""
    tree = ast.parse(Path(overridetable.__file__).read_text())
    imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)} | {
        alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    assert not {name for name in imported if name.startswith("orchestrator")}
