"""The effort channel: the three tiers, the entry role's directive, and the cadence factors."""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["CADENCE_FACTOR", "EFFORT_TIERS", "Effort", "effort_directive"]

Effort = Literal["quick", "standard", "thorough"]
EFFORT_TIERS: tuple[str, ...] = get_args(Effort)

#: Loop-check thresholds are multiplied by the tier's factor: higher effort, rarer checks.
CADENCE_FACTOR: dict[str, int] = {"quick": 2, "standard": 4, "thorough": 6}


def effort_directive(tier: str) -> str:
    """The stable system message the entry role receives between its prompt and its task."""
    return (
        f"Quality level: {tier} (one of quick, standard, thorough — quick is fastest and most direct; "
        "thorough is slowest and most careful)."
    )
