"""``workflow/cli.py`` and the ``orchestrator mcp`` fast path in ``orchestrator/__main__.py``."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

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
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PYTHONPATH": str(REPO / "src"),
           "WORKFLOW_WORKSPACE": str(tmp_path), "WORKFLOW_SERVER_KEY_DIR": str(tmp_path / "k")}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "orchestrator", "mcp"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time")}
    assert "orchestrator.workflow.server" in imported
    assert not {"orchestrator.cli", "orchestrator.engine.runner", "orchestrator.config"} & imported
    # the full CLI still lists and reaches the subcommand
    helped = subprocess.run([sys.executable, "-m", "orchestrator", "--help"], env=env, capture_output=True,
                            text=True, timeout=120)
    assert "mcp" in helped.stdout and "Streamable HTTP" in helped.stdout
