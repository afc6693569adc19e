"""Tool dispatch support and the native tools the executor implements against the workspace.

Every file tool is contained to the workspace (``paths.resolve_path``); see docs/tools.md.
"""

from orchestrator.tools.base import NativeTool, ToolContext, ToolError, ToolOutcome, failure, success
from orchestrator.tools.checkers import run_checks
from orchestrator.tools.files import list_directory, read_file, read_file_partial, write_file
from orchestrator.tools.gitexclude import ensure_git_exclude
from orchestrator.tools.plan import read_plan, write_plan
from orchestrator.tools.repomap import repo_map
from orchestrator.tools.search import glob_files, search_text
from orchestrator.tools.shell import run_shell
from orchestrator.tools.web import fetch_url, web_search

__all__ = [
    "NATIVE_TOOLS",
    "NativeTool",
    "ToolContext",
    "ToolError",
    "ToolOutcome",
    "default_native_tools",
    "ensure_git_exclude",
    "failure",
    "success",
]

NATIVE_TOOLS: tuple[str, ...] = (
    "read_file",
    "read_file_partial",
    "write_file",
    "list_directory",
    "glob_files",
    "search_text",
    "repo_map",
    "read_plan",
    "write_plan",
    "run_shell",
    "typecheck",
    "test",
    "fetch_url",
    "web_search",
)


def default_native_tools() -> dict[str, NativeTool]:
    """A fresh name → implementation table of every native tool (``NATIVE_TOOLS``, in that order)."""
    table: dict[str, NativeTool] = {
        "read_file": read_file,
        "read_file_partial": read_file_partial,
        "write_file": write_file,
        "list_directory": list_directory,
        "glob_files": glob_files,
        "search_text": search_text,
        "repo_map": repo_map,
        "read_plan": read_plan,
        "write_plan": write_plan,
        "run_shell": run_shell,
        "typecheck": run_checks,
        "test": run_checks,
        "fetch_url": fetch_url,
        "web_search": web_search,
    }
    assert tuple(table) == NATIVE_TOOLS
    return table
