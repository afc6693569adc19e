"""``demo.py``'s pure parts: the notes as the demo shows them, and one narrated line per role."""

from __future__ import annotations

from orchestrator.demo import demo_notes, one_line


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


def test_one_line_keeps_the_first_line_and_marks_what_it_left_out() -> None:
    assert one_line("do it") == "do it"
    assert one_line("\n  first\nsecond\n") == "first …"
    assert one_line("x" * 200, 10) == "x" * 9 + "…"
    assert one_line(None) == "" and one_line("  \n ") == ""
