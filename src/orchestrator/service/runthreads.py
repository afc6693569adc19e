"""Run threads: which runs continue which (``continuesFrom`` read the other way round).

A run's meta names the run it continues; the run list and the page also need the reverse link — "this run
was continued in …" — so a run that was parked on a question and answered stops reading as waiting. The
derivation is pure: it takes (run id, continues-from) pairs, which ``views.list_runs`` already has from the
metas it reads for every poll, so the reverse links cost no extra file read.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["continued_by"]


def continued_by(links: Iterable[tuple[str, str | None]]) -> dict[str, list[str]]:
    """``{run id: [ids of the runs continuing it, oldest first]}`` from ``(run id, continuesFrom)`` pairs.

    Runs nobody continues are absent; a run naming itself, or a run id that is not in ``links``, is still
    listed under the id it names (the page links only ids it knows). Run ids sort by start time, so the
    oldest continuation comes first."""
    found: dict[str, list[str]] = {}
    for run_id, parent in links:
        if parent and parent != run_id:
            found.setdefault(parent, []).append(run_id)
    return {parent: sorted(children) for parent, children in found.items()}
