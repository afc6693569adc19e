"""``orchestrator mcp``'s flags and its start, importable without the rest of the ``orchestrator`` command.

``orchestrator/__main__.py`` (the console script and ``python -m orchestrator``) hands ``mcp …`` here
before ``orchestrator.cli`` is imported: the service's engine, config probe and HTTP client stack cost
about a second of imports that the workflow server never uses. ``orchestrator.cli`` builds its ``mcp``
subcommand from ``add_mcp_arguments`` so the flags are defined once.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence

__all__ = ["EXIT_CONFIG", "add_mcp_arguments", "main", "run_mcp"]

EXIT_CONFIG = 2
HELP = "serve the workflow server (MCP over stdio or Streamable HTTP)"


def add_mcp_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workflow-dir", metavar="DIR", help="workflow corpus (default WORKFLOW_DIR or ./workflows)")
    parser.add_argument("--workspace", metavar="DIR", help="project whose .engineering holds the sessions")
    parser.add_argument("--repo", metavar="R", help="pin sessions to one repository (owner/repo or URL)")
    parser.add_argument("--install-dir", metavar="D", help="server data folder (default WORKFLOW_SERVER_INSTALL_DIR)")
    parser.add_argument("--transport", choices=("stdio", "http"), help="MCP transport (default TRANSPORT or stdio)")
    parser.add_argument("--host", metavar="H", help="HTTP bind address (default HOST or 127.0.0.1)")
    parser.add_argument("--port", metavar="N", help="HTTP port, 0 for any free one (default PORT or 3000)")


def run_mcp(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Load the settings and serve (stdio until stdin closes; HTTP until SIGTERM/SIGINT). Exit code 2 for a
    configuration that cannot work, with the reason on stderr."""
    from orchestrator.workflow.errors import WorkflowError
    from orchestrator.workflow.settings import load_workflow_settings

    try:
        settings = load_workflow_settings(env, vars(args))
    except WorkflowError as exc:
        print(f"orchestrator mcp: invalid configuration: {exc.message}", file=sys.stderr)
        return EXIT_CONFIG
    from orchestrator.workflow.server import serve_main

    return serve_main(settings, env, hard_exit=True)


def main(argv: Sequence[str]) -> int:
    """``orchestrator mcp ARGS…`` (``argv`` without the ``mcp``)."""
    parser = argparse.ArgumentParser(prog="orchestrator mcp", description=HELP)
    add_mcp_arguments(parser)
    return run_mcp(parser.parse_args(list(argv)), dict(os.environ))
