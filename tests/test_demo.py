"""``demo.py``'s pure part: the notes as the demo shows them."""

from __future__ import annotations

from orchestrator.demo import demo_notes


def test_the_demo_names_its_own_model_instead_of_an_override_and_drops_the_key_note() -> None:
    notes = [
        "Guild: /g (from packaged default)",
        "ORCHESTRATOR_API_BASE overrides model.apiBase: 'http://127.0.0.1:8080/v1' → 'http://127.0.0.1:5/v1'",
        "model API key: not set",
        "model API key: set (from environment ORCHESTRATOR_API_KEY)",
    ]
    assert demo_notes(notes, "http://127.0.0.1:5/v1") == [
        "Guild: /g (from packaged default)",
        "model: the demo's built-in simulated model at http://127.0.0.1:5/v1 (model.apiBase is not used)",
        "model API key: set (from environment ORCHESTRATOR_API_KEY)",
    ]
