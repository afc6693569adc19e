"""Tool dispatch support and the native tools the executor implements against the workspace."""

from orchestrator.tools.base import NativeTool, ToolContext, ToolOutcome, failure, success
from orchestrator.tools.shell import run_shell

__all__ = ["NATIVE_TOOLS", "NativeTool", "ToolContext", "ToolOutcome", "default_native_tools", "failure", "success"]

NATIVE_TOOLS: tuple[str, ...] = ("run_shell",)


def default_native_tools() -> dict[str, NativeTool]:
    """A fresh name → implementation table of every native tool."""
    return {"run_shell": run_shell}
