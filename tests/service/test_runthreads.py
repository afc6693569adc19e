"""``service/runthreads.py``: the reverse of ``continuesFrom``."""

from __future__ import annotations

from orchestrator.service.runthreads import continued_by


def test_continued_by_reverses_continues_from_oldest_first() -> None:
    links = [
        ("run-20260101-000300", "run-20260101-000000"),
        ("run-20260101-000200", None),
        ("run-20260101-000100", "run-20260101-000000"),
        ("run-20260101-000400", "run-20260101-000300"),
        ("run-20260101-000000", None),
    ]
    assert continued_by(links) == {
        "run-20260101-000000": ["run-20260101-000100", "run-20260101-000300"],
        "run-20260101-000300": ["run-20260101-000400"],
    }


def test_continued_by_ignores_self_links_and_keeps_unknown_parents() -> None:
    assert continued_by([("run-a", "run-a"), ("run-b", "")]) == {}
    assert continued_by([("run-b", "run-gone")]) == {"run-gone": ["run-b"]}
    assert continued_by([]) == {}
