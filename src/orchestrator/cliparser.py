"""The ``orchestrator`` command's arguments: one ``argparse`` parser with a subcommand per command
(``orchestrator.cli`` dispatches on it). ``mcp`` and ``export-trace`` take their flags from their own
modules; ``sim-model``, ``bench`` and ``foundry`` parse their own (``cli.main`` hands them ``argv`` first),
so here they are only named, for ``--help``.
"""

from __future__ import annotations

import argparse

from orchestrator import __version__
from orchestrator.vocabulary import EFFORT_TIERS, LOG_LEVELS

__all__ = ["build_parser"]


def _add_config_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--guild",
        metavar="DIR",
        help="Guild directory (default ORCHESTRATOR_GUILD_DIR, else WORKSPACE/guild, else the packaged one)",
    )
    parser.add_argument(
        "--deployment",
        metavar="FILE",
        help="deployment file (default ORCHESTRATOR_DEPLOYMENT_FILE, else WORKSPACE/deployment/deployment.json, "
        "else the packaged one)",
    )


def _add_run_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", metavar="DIR", default=".", help="project the run works in (default .)")
    _add_config_args(parser)
    parser.add_argument("--effort", choices=EFFORT_TIERS, help="quality tier for this run")
    parser.add_argument("--log-level", choices=LOG_LEVELS, help="run-log payload detail")
    parser.add_argument("--json", action="store_true", help="print the result card as JSON")
    parser.add_argument(
        "--answers",
        metavar="FILE",
        help="JSON object of question → answer for ask_human (default: ask on the terminal when there is one)",
    )


def _add_serve_args(parser: argparse.ArgumentParser) -> None:
    if not any(a.dest == "workspace" for a in parser._actions):
        parser.add_argument("--workspace", metavar="DIR", help="project the runs work in")
        _add_config_args(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=int,
        default=8765,
        help="port to bind (default 8765, clear of llama-server's 8080; 0 picks a free one)",
    )
    parser.add_argument("--port-file", metavar="PATH", help="write the bound port here once listening")
    parser.add_argument(
        "--no-token",
        action="store_true",
        help="serve without the access token (loopback binds only; also ORCHESTRATOR_NO_TOKEN=1) — any local "
        "program can then drive the API",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="orchestrator", description="Adaptive Orchestrator")
    parser.add_argument("--version", action="version", version=f"orchestrator {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = commands.add_parser("run", help="run one task in-process against the configured model")
    _add_run_args(run)
    run.add_argument("--continue", dest="continues_from", metavar="RUN_ID", help="continue a finished run")
    run.add_argument("task", help="what the Guild should do")
    resume = commands.add_parser("resume", help="resume the most recent unfinished run from its checkpoint")
    resume.add_argument("--workspace", metavar="DIR", default=".", help="project the run works in (default .)")
    _add_config_args(resume)
    resume.add_argument("--json", action="store_true", help="print the result card as JSON")
    resume.add_argument("--answers", metavar="FILE", help="JSON object of question → answer for ask_human")
    serve = commands.add_parser("serve", help="serve the web UI and HTTP API (the main job)")
    _add_serve_args(serve)
    serve.set_defaults(workspace=".")
    demo = commands.add_parser("demo", help="the service on the built-in simulated model, with a demo run")
    _add_run_args(demo)
    _add_serve_args(demo)
    demo.set_defaults(workspace="demo-workspace")
    demo.add_argument("--once", action="store_true", help="run the demo task in the terminal instead of serving")
    demo.add_argument("task", nargs="?", default="Write a greeting into hello.txt and make sure it is there.")
    check = commands.add_parser(
        "check",
        help="print the resolved configuration, or what is wrong with it",
        description="Print the resolved configuration (JSON, on stdout), or what is wrong with it (stderr).",
        epilog="exit codes: 0 valid and the model server answers; 2 invalid (the problems are listed; also a "
        "model server whose chat template cannot render tools); 3 valid, but no model server answers at "
        "model.apiBase (or it is still loading its model)",
    )
    check.add_argument(
        "--workspace", metavar="DIR", default=".", help="workspace whose guild/ and deployment/ count (default .)"
    )
    _add_config_args(check)
    check.add_argument(
        "--no-probe", action="store_true", help="do not ask the model endpoint, nor start the MCP servers"
    )
    init = commands.add_parser("init", help="copy the packaged Guild and deployment file into a workspace to edit")
    init.add_argument("directory", nargs="?", default=".", metavar="DIR", help="the workspace (default .)")
    init.add_argument("--force", action="store_true", help="replace existing copies (each old one is kept aside)")
    init.add_argument("--workflows", action="store_true", help="also copy the workflows (for orchestrator mcp)")
    trust = commands.add_parser(
        "trust", help="trust a workspace's own guild/ and deployment file (records their hashes)"
    )
    trust.add_argument("directory", nargs="?", default=".", metavar="DIR", help="the workspace (default .)")
    token = commands.add_parser("token", help="print the access token `serve` requires for a workspace")
    token.add_argument("--workspace", metavar="DIR", default=".", help="the directory serve works in (default .)")
    from orchestrator.workflow.cli import HELP as MCP_HELP
    from orchestrator.workflow.cli import add_mcp_arguments

    add_mcp_arguments(commands.add_parser("mcp", help=MCP_HELP))
    from orchestrator.observability.exporttrace import HELP as EXPORT_HELP
    from orchestrator.observability.exporttrace import add_export_trace_arguments

    _add_config_args(add_export_trace_arguments(commands.add_parser("export-trace", help=EXPORT_HELP)))
    commands.add_parser("sim-model", help="serve the simulated Responses-API model", add_help=False)
    commands.add_parser("bench", help="run a benchmark suite and validate each result", add_help=False)
    commands.add_parser("foundry", help="adapt the Guild's prompts to your model on a benchmark suite", add_help=False)
    return parser
