"""Helpers for the native-tool tests: a ToolContext as the engine builds it, and a hostile layout."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.tools import ToolContext


def make_ctx(workspace: Path, *, timeout: float = 30.0, **fields: Any) -> ToolContext:
    """A ``ToolContext`` as the engine builds it (a role instance id, no run unless ``run_id`` is given);
    ``fields`` sets the other named fields (``run_id``, ``env``, ``secrets_dir`` …)."""
    return ToolContext(workspace=workspace, timeout_seconds=timeout, role_id="t-0-1", **fields)


@dataclass
class Layout:
    """``root/ws`` is the workspace; ``root/outside`` must stay untouched whatever a tool is asked."""

    root: Path
    ws: Path
    outside: Path

    def ctx(self, **fields: Any) -> ToolContext:
        return make_ctx(self.ws, **fields)

    def snapshot(self) -> dict[str, bytes]:
        """Every file outside the workspace and under its .orchestration, with contents."""
        found: dict[str, bytes] = {}
        for base in (self.outside, self.ws / ".orchestration"):
            for dirpath, _dirs, files in os.walk(base):
                for name in files:
                    path = Path(dirpath) / name
                    found[str(path)] = path.read_bytes()
        return found


def build_layout(tmp_path: Path) -> Layout:
    r"""::

    outside/secret.txt           outside/dir/
    ws/ok.txt  ws/sub/inner.txt  ws/.orchestration/runs/run-1/plan.md
    ws/link_out_file -> ../outside/secret.txt     ws/link_out_dir -> ../outside
    ws/link_orch -> .orchestration                ws/sub/link_orch_deep -> ../.orchestration
    ws/dangling_out -> ../outside/not-yet.txt     ws/link_in -> sub/inner.txt
    """
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text("top secret\n")
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "ok.txt").write_text("fine\n")
    (ws / "sub" / "inner.txt").write_text("inner\n")
    run = ws / ".orchestration" / "runs" / "run-1"
    run.mkdir(parents=True)
    (run / "plan.md").write_text("# the plan\n")
    (ws / "link_out_file").symlink_to("../outside/secret.txt")
    (ws / "link_out_dir").symlink_to("../outside")
    (ws / "link_orch").symlink_to(".orchestration")
    (ws / "sub" / "link_orch_deep").symlink_to("../.orchestration")
    (ws / "dangling_out").symlink_to("../outside/not-yet.txt")
    (ws / "link_in").symlink_to("sub/inner.txt")
    return Layout(root=tmp_path, ws=ws, outside=outside)
