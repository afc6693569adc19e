"""The effort channel: tier directives, how they join the entry prompt, and the cadence factors."""

from __future__ import annotations

import pytest

from orchestrator.engine.effort import CADENCE_FACTOR, effort_directive, join_directive

TIERS = ("quick", "standard", "thorough")


def test_cadence_factor_covers_exactly_the_three_tiers() -> None:
    assert set(CADENCE_FACTOR) == set(TIERS)


def test_cadence_factor_grows_with_effort() -> None:
    factors = [CADENCE_FACTOR[tier] for tier in TIERS]
    assert factors == sorted(factors) and len(set(factors)) == len(factors)
    assert all(factor > 0 for factor in factors)


@pytest.mark.parametrize("tier", TIERS)
def test_directive_names_its_tier_and_lists_all_tiers(tier: str) -> None:
    directive = effort_directive(tier)
    assert directive.startswith(f"Quality level: {tier} ")
    assert "one of quick, standard, thorough" in directive
    assert "\n" not in directive


def test_directive_is_stable_per_tier_and_distinct_across_tiers() -> None:
    assert effort_directive("quick") == effort_directive("quick")
    assert len({effort_directive(tier) for tier in TIERS}) == len(TIERS)


def test_join_puts_the_directive_after_one_blank_line() -> None:
    assert join_directive("You are the lead.", "D") == "You are the lead.\n\nD"


def test_join_strips_trailing_whitespace_of_the_prompt_only() -> None:
    assert join_directive("  Prompt.\n\n \t", "D") == "  Prompt.\n\nD"


def test_joined_message_ends_with_the_directive() -> None:
    directive = effort_directive("thorough")
    joined = join_directive("System prompt\n", directive)
    assert joined.endswith(directive)
    assert joined.count("\n\n") == 1
