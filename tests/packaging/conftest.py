"""The package as a user gets it: the sdist and wheel built from this tree, the wheel installed into a
fresh virtual environment outside the repository, and commands run from a temporary directory.

``installed`` (session-scoped) does the expensive part once: ``uv build`` (the sdist, then the wheel
built from that sdist, as an index would), ``uv venv`` under a temp dir and ``uv pip install`` of the
wheel alone (its dependencies resolved from its own metadata; uv's cache makes a repeat run take
seconds). Every command then runs with a scrubbed environment: no ``ORCHESTRATOR_*``, no
``PYTHONPATH``, ``HOME`` and ``TMPDIR`` in the temp dir, and the repository nowhere on the path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"
#: Building and installing with a cold uv cache downloads every dependency once.
BUILD_SECONDS = 600


@dataclass(frozen=True)
class Installed:
    """The built artifacts and the venv that holds the installed wheel."""

    root: Path
    sdist: Path
    wheel: Path
    venv: Path

    @property
    def orchestrator(self) -> Path:
        return self.venv / "bin" / "orchestrator"

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """A user's environment: the venv's bin first on PATH, nothing pointing at the repository."""
        home = self.root / "home"
        tmp = self.root / "tmp"
        home.mkdir(exist_ok=True)
        tmp.mkdir(exist_ok=True)
        env = {
            "PATH": f"{self.venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "LANG": "C.UTF-8",
        }
        env.update(extra or {})
        return env

    def run(
        self, *args: str, cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.orchestrator), *args],
            cwd=cwd,
            env=self.env(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )


def _uv(*args: str, cwd: Path) -> None:
    done = subprocess.run([str(UV), *args], cwd=cwd, capture_output=True, text=True, timeout=BUILD_SECONDS, check=False)
    assert done.returncode == 0, f"uv {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    assert UV.exists(), f"{UV} is missing: `uv` is a dev extra (./dev reinstalls the extras when pyproject changes)"
    root = tmp_path_factory.mktemp("wheel-smoke")
    dist = root / "dist"
    _uv("build", "--quiet", "--out-dir", str(dist), str(REPO), cwd=root)
    (sdist,) = dist.glob("*.tar.gz")
    (wheel,) = dist.glob("*.whl")
    venv = root / "venv"
    _uv("venv", "--quiet", "--python", sys.executable, str(venv), cwd=root)
    _uv("pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), str(wheel), cwd=root)
    return Installed(root=root, sdist=sdist, wheel=wheel, venv=venv)
