"""``service/serve.py``: the printed links (the rest of ``serve_main`` runs in the HTTP lifecycle tests)."""

from __future__ import annotations

from orchestrator.service.serve import open_link, replay_link


def test_open_link_carries_the_token_and_opens_wildcards_through_loopback() -> None:
    assert open_link("http://127.0.0.1:8080", "tok") == "http://127.0.0.1:8080/?token=tok"
    assert open_link("http://0.0.0.0:8080", None) == "http://127.0.0.1:8080"
    assert open_link("http://[::]:81", "t") == "http://[::1]:81/?token=t"


def test_replay_link_routes_to_the_runs_replay() -> None:
    """Issue 18, problem 10: the demo's link lands on its run's replay, with or without a token."""
    run = "run-20260101-000000"
    assert (
        replay_link("http://127.0.0.1:8080/?token=tok", run) == f"http://127.0.0.1:8080/?token=tok#watch/{run}/replay"
    )
    assert replay_link("http://127.0.0.1:8080", run) == f"http://127.0.0.1:8080/#watch/{run}/replay"
    assert replay_link("http://h:1", "a/b") == "http://h:1/#watch/a%2Fb/replay"
