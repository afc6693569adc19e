"""``tools/runtime.py``: the corpus cache reloads only on change and at most once per interval; values cut for logs."""

from __future__ import annotations

from pathlib import Path

from orchestrator.workflow.tools.runtime import CorpusCache, cut_values


def test_corpus_cache_reloads_only_on_change_and_at_most_per_interval(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("1")
    now = [100.0]
    loads: list[int] = []

    def loader(root: Path) -> int:
        loads.append(1)
        return len(loads)

    cache = CorpusCache(tmp_path, loader, interval=1.0, monotonic=lambda: now[0])
    assert cache.get() == 1 and cache.get() == 1
    (tmp_path / "a.txt").write_text("22")
    assert cache.get() == 1  # inside the interval: not even looked at
    now[0] += 1.0
    assert cache.get() == 2 and cache.generation == 2
    now[0] += 5.0
    assert cache.get() == 2  # unchanged files: no reload


def test_cut_values_limits_every_string() -> None:
    cut = cut_values({"a": "x" * 10, "b": ["y" * 20, 3]}, limit=8)
    assert cut["a"].startswith("xxxxxxxx…[cut 2") and cut["b"][0].startswith("y" * 8) and cut["b"][1] == 3
