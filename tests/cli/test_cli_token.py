"""``orchestrator token [--workspace DIR]``: prints the token ``serve`` requires there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO


def _token(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "token", *args],
        cwd=REPO, env={**clean, **(env or {})}, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_prints_the_workspace_token_and_creates_it_once(tmp_path: Path) -> None:
    first = _token("--workspace", str(tmp_path))
    assert first.returncode == 0, first.stderr
    token = first.stdout.strip()
    assert token == (tmp_path / ".orchestration" / "token").read_text().strip()
    assert "?token=" in first.stderr  # how to use it, on stderr: stdout stays just the token
    assert _token("--workspace", str(tmp_path)).stdout.strip() == token


def test_the_environment_token_wins(tmp_path: Path) -> None:
    done = _token("--workspace", str(tmp_path), env={"ORCHESTRATOR_TOKEN": "from-env-token-0123"})
    assert (done.returncode, done.stdout.strip()) == (0, "from-env-token-0123")
    assert not (tmp_path / ".orchestration" / "token").exists()


def test_problems_exit_2_naming_them(tmp_path: Path) -> None:
    missing = _token("--workspace", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "not a directory" in missing.stderr
    _token("--workspace", str(tmp_path))
    (tmp_path / ".orchestration" / "token").chmod(0o644)
    loose = _token("--workspace", str(tmp_path))
    assert loose.returncode == 2 and "chmod 600" in loose.stderr and loose.stdout == ""
