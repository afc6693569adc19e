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
from typing import NoReturn

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
    parser.add_argument(
        "--face",
        choices=("workflows", "runs"),
        default="workflows",
        help="workflows: the workflow server (default); runs: delegate tasks to a running `orchestrator serve`",
    )
    parser.add_argument(
        "--server", metavar="URL", help="runs face: the service to drive (default http://127.0.0.1:8765)"
    )


def run_mcp(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Load the settings and serve (stdio until stdin closes; HTTP until SIGTERM/SIGINT). Exit code 2 for a
    configuration that cannot work, with the reason on stderr."""
    if args.face == "runs" or args.server:
        return _runs_face(args, env)
    from orchestrator.workflow.errors import WorkflowError
    from orchestrator.workflow.serverconfig import load_workflow_settings

    flags = {key: value for key, value in vars(args).items() if key not in ("face", "server")}
    try:
        settings = load_workflow_settings(env, flags)
    except WorkflowError as exc:
        print(f"orchestrator mcp: invalid configuration: {exc.message}", file=sys.stderr, flush=True)
        return EXIT_CONFIG
    if settings.workspace_defaulted:
        print(
            f"orchestrator mcp: no --workspace given; using the current directory {settings.workspace} "
            "(its .engineering/ holds the sessions)",
            file=sys.stderr,
            flush=True,
        )
    if settings.transport == "stdio" and env.get("WORKFLOW_SERVER_FAST_START", "1").strip() != "0":
        from orchestrator.workflow.firstanswer import serve_stdio_fast

        return serve_stdio_fast(settings, env)
    from orchestrator.workflow.launch import serve_main

    return serve_main(settings, env, hard_exit=True)


def _runs_face(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``--face runs``: the Guild behind an MCP face (``orchestrator.runsface``); the workflow flags do not apply."""
    if args.face != "runs":
        print(f"orchestrator mcp: invalid usage: --server does not apply to --face {args.face}", file=sys.stderr)
        return EXIT_CONFIG
    workflow_only = ("workflow_dir", "repo", "install_dir", "transport", "host", "port")
    misplaced = next((f"--{key.replace('_', '-')}" for key in workflow_only if getattr(args, key)), None)
    if misplaced is not None:
        print(f"orchestrator mcp: invalid usage: {misplaced} does not apply to --face runs", file=sys.stderr)
        return EXIT_CONFIG
    from pathlib import Path

    from orchestrator.runsface import DEFAULT_SERVER, serve_runs_face

    workspace = Path(args.workspace).resolve() if args.workspace else Path.cwd()
    return serve_runs_face(args.server or DEFAULT_SERVER, workspace, env)


class _Parser(argparse.ArgumentParser):
    """argparse with the reason as the first stderr line (an MCP client often shows only the first line),
    the usage after it."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"orchestrator mcp: invalid usage: {message}\n")
        self.print_usage(sys.stderr)
        raise SystemExit(EXIT_CONFIG)


def main(argv: Sequence[str]) -> int:
    """``orchestrator mcp ARGS…`` (``argv`` without the ``mcp``)."""
    parser = _Parser(prog="orchestrator mcp", description=HELP)
    add_mcp_arguments(parser)
    return run_mcp(parser.parse_args(list(argv)), dict(os.environ))
