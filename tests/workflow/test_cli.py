"""``workflow/cli.py`` and the ``orchestrator mcp`` fast path in ``orchestrator/__main__.py``."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import trio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from tests.workflow.conftest import REPO

from orchestrator.workflow.cli import add_mcp_arguments


def test_the_flags_are_defined_once_and_parse() -> None:
    parser = argparse.ArgumentParser()
    add_mcp_arguments(parser)
    args = parser.parse_args(["--transport", "http", "--host", "::1", "--port", "0", "--workspace", "/w"])
    assert (args.transport, args.host, args.port, args.workspace) == ("http", "::1", "0", "/w")


def test_orchestrator_mcp_does_not_import_the_service_cli(tmp_path: Path) -> None:
    """Start-up: ``orchestrator mcp`` skips ``orchestrator.cli`` and the service it imports (engine, config
    probe, httpx) — about a second of imports on this machine."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO / "src"),
        "WORKFLOW_WORKSPACE": str(tmp_path),
        "WORKFLOW_SERVER_KEY_DIR": str(tmp_path / "k"),
    }
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "orchestrator", "mcp"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time")}
    assert "orchestrator.workflow.server" in imported
    assert not {"orchestrator.cli", "orchestrator.engine.runner", "orchestrator.config"} & imported
    # the full CLI still lists and reaches the subcommand
    helped = subprocess.run(
        [sys.executable, "-m", "orchestrator", "--help"], env=env, capture_output=True, text=True, timeout=120
    )
    assert "mcp" in helped.stdout and "Streamable HTTP" in helped.stdout


def _bare_env(tmp_path: Path) -> dict[str, str]:
    """No workspace flag or variable at all: only what a shell would have."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO / "src"),
        "WORKFLOW_SERVER_KEY_DIR": str(tmp_path / "keys"),
    }


def test_mcp_with_no_flags_serves_the_current_directory_to_the_official_client(tmp_path: Path) -> None:
    """`orchestrator mcp` alone, started by the SDK's stdio client: it initializes and lists its tools, and
    stderr says which directory it took as the workspace."""
    project = tmp_path / "project"
    project.mkdir()
    errlog = tmp_path / "stderr.log"

    async def session() -> list[str]:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "orchestrator", "mcp"], env=_bare_env(tmp_path), cwd=str(project)
        )
        with errlog.open("w") as err:
            async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                listed = await s.list_tools()
        return [tool.name for tool in listed.tools]

    names = trio.run(session)
    assert "start_session" in names
    first = errlog.read_text().splitlines()[0]
    assert first == (
        f"orchestrator mcp: no --workspace given; using the current directory {project} "
        "(its .engineering/ holds the sessions)"
    )


def test_a_start_up_refusal_says_why_on_the_first_stderr_line(tmp_path: Path) -> None:
    """What an MCP client shows of a server that exits at once is its stderr's first line: the reason."""
    for args, needle in (
        (["--transport", "smoke"], "orchestrator mcp: invalid usage: argument --transport"),
        (["--repo", "not a repo"], "orchestrator mcp: invalid configuration: --repo"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "orchestrator", "mcp", *args],
            env=_bare_env(tmp_path),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.splitlines()[0].startswith(needle), done.stderr
