"""The effort channel: the three tiers, the entry role's directive, and the cadence factors."""

from __future__ import annotations

__all__ = ["CADENCE_FACTOR", "effort_directive", "join_directive"]

#: Loop-check thresholds are multiplied by the tier's factor: higher effort, rarer checks.
CADENCE_FACTOR: dict[str, int] = {"quick": 2, "standard": 4, "thorough": 6}


def effort_directive(tier: str) -> str:
    """The stable directive line the entry role's system message ends with (see ``join_directive``)."""
    return (
        f"Quality level: {tier} (one of quick, standard, thorough — quick is fastest and most direct; "
        "thorough is slowest and most careful)."
    )


def join_directive(system_prompt: str, directive: str) -> str:
    """The entry role's one system message: its prompt, a blank line, then the effort directive.

    Joined rather than sent as a second system message, because chat templates such as Qwen3.5's
    refuse any system message that is not the first (llama-server then answers HTTP 500).
    """
    return f"{system_prompt.rstrip()}\n\n{directive}"
