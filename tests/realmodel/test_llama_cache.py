"""The real-model cache: where it lives, what counts as complete, and that a warm cache costs nothing.

These run without the build (they point ``XDG_CACHE_HOME`` at a temp dir with stand-in files).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import REPO
from tests.realmodel import llama_cache
from tests.realmodel.llama_cache import LLAMA_VERSION, MODEL_VERSION, TEMPLATES, cache_root, real_model

SCRIPT = REPO / "tests" / "realmodel" / "llama_cache.py"


def _fill(root: Path) -> None:
    target = real_model({"XDG_CACHE_HOME": str(root)})
    for path in [target.server, target.model, *(target.template(t) for t in TEMPLATES)]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"stand-in")


def test_the_cache_is_outside_the_repo_keyed_by_version(tmp_path: Path) -> None:
    assert cache_root({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "orchestrator"
    assert cache_root({"HOME": str(tmp_path)}) == tmp_path / ".cache" / "orchestrator"
    assert cache_root({"XDG_CACHE_HOME": "", "HOME": str(tmp_path)}) == tmp_path / ".cache" / "orchestrator"
    target = real_model({"XDG_CACHE_HOME": str(tmp_path)})
    assert target.server_dir.name == f"llama-server-{LLAMA_VERSION}"
    assert target.model_dir.name == f"smollm2-{MODEL_VERSION}"
    assert target.lib_dir == target.server.parent  # the .so files sit beside the binary
    assert REPO not in target.server.parents


def test_missing_names_every_absent_piece(tmp_path: Path) -> None:
    target = real_model({"XDG_CACHE_HOME": str(tmp_path)})
    assert len(target.missing()) == 2 + len(TEMPLATES)
    _fill(tmp_path)
    assert target.missing() == []
    target.template(TEMPLATES[1]).unlink()
    assert target.missing() == [str(target.template(TEMPLATES[1]))]


def test_check_and_a_warm_cache_return_at_once(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    cold = subprocess.run([sys.executable, str(SCRIPT), "--check"], env=env, capture_output=True, text=True)
    assert cold.returncode == 1 and "missing:" in cold.stdout
    _fill(tmp_path)
    started = time.perf_counter()
    warm = subprocess.run([sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert warm.returncode == 0, warm.stderr
    assert "ready:" in warm.stderr and time.perf_counter() - started < 10  # no download, no build
    assert subprocess.run([sys.executable, str(SCRIPT), "--check"], env=env).returncode == 0


def test_publishing_keeps_a_finished_entry_and_drops_the_late_one(tmp_path: Path) -> None:
    final = tmp_path / "entry"
    first = tmp_path / ".entry.a"
    first.mkdir()
    (first / "file").write_text("first")
    llama_cache._publish(first, final)
    assert (final / "file").read_text() == "first" and not first.exists()
    second = tmp_path / ".entry.b"
    second.mkdir()
    (second / "file").write_text("second")
    llama_cache._publish(second, final)
    assert (final / "file").read_text() == "first" and not second.exists()
