"""The bootstrap error page: the HTML lists every problem escaped; the app answers 503 everywhere."""

from __future__ import annotations

from orchestrator.service.errorpage import (
    WAIT_RELOAD_SECONDS,
    Waiting,
    api_base_shown,
    create_error_app,
    render_error_page,
)

PROBLEMS = ["model.apiBase: must be a URL, got '<nothing>'", "guild/lead.md: missing"]


def test_the_page_lists_every_problem_escaped_and_names_the_title() -> None:
    page = render_error_page(PROBLEMS, "Orchestrator & co")
    assert page.startswith("<!doctype html>")
    assert "<title>Orchestrator &amp; co — configuration error</title>" in page
    assert "<li><code>model.apiBase: must be a URL, got &#x27;&lt;nothing&gt;&#x27;</code></li>" in page
    assert "<li><code>guild/lead.md: missing</code></li>" in page
    assert "<nothing>" not in page


def test_the_page_is_self_contained() -> None:
    page = render_error_page(PROBLEMS, "t")
    assert "<script" not in page and "<link" not in page and "src=" not in page


def test_no_problems_renders_an_empty_list() -> None:
    assert "<li>" not in render_error_page([], "t")


async def test_the_app_answers_503_with_the_page_json_or_health() -> None:
    client = create_error_app(PROBLEMS, "t").test_client()
    page = await client.get("/runs/x")
    assert page.status_code == 503 and page.content_type.startswith("text/html")
    assert "guild/lead.md: missing" in (await page.get_data(as_text=True))
    api = await client.post("/api/queue", json={"task": "x"})
    assert api.status_code == 503
    assert await api.get_json() == {"ok": False, "error": "invalid_configuration", "problems": PROBLEMS}
    health = await client.get("/healthz")
    assert (health.status_code, await health.get_json()) == (503, {"ok": False, "error": "invalid_configuration"})
    assert (await client.delete("/runs/x")).status_code == 405


def test_the_waiting_page_names_the_cause_and_reloads_itself_without_a_restart() -> None:
    page = render_error_page(["model probe failed"], "t", waiting=Waiting(api_base="http://127.0.0.1:8080/v1"))
    assert f'<meta http-equiv="refresh" content="{WAIT_RELOAD_SECONDS}">' in page
    assert "No model server answers at <code>http://127.0.0.1:8080/v1</code>" in page
    assert "ORCHESTRATOR_API_BASE" in page and "orchestrator demo" in page and "docs/models.md" in page
    assert "restart the service" not in page and "could not start" not in page
    loading = render_error_page([], "t", waiting=Waiting(api_base="http://h/v1", loading=True))
    assert "still loading its model" in loading
    assert "<meta http-equiv" not in render_error_page(PROBLEMS, "t")  # an invalid configuration does not reload


def test_the_page_names_the_files_in_use_when_told() -> None:
    sources = ["Guild: /x/guild (from --guild)", "deployment file: /x/d.json (from --deployment)"]
    page = render_error_page(PROBLEMS, "t", sources=sources)
    assert "<li><code>deployment file: /x/d.json (from --deployment)</code></li>" in page
    assert "deployment/deployment.json" not in page


async def test_the_waiting_app_answers_model_not_ready() -> None:
    client = create_error_app(["x"], "t", waiting=Waiting(api_base="http://h/v1")).test_client()
    health = await client.get("/healthz")
    assert (health.status_code, await health.get_json()) == (503, {"ok": False, "error": "model_not_ready"})


def test_the_api_base_is_shown_without_its_userinfo() -> None:
    assert api_base_shown("http://user:pa55w0rd-xyz@127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
    assert api_base_shown("https://token-abcdefgh@models.example/v1") == "https://models.example/v1"
    assert api_base_shown("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
    page = render_error_page([], "T", waiting=Waiting(api_base="http://u:pa55w0rd-xyz@10.0.0.5:8080/v1"))
    assert "pa55w0rd-xyz" not in page and "<code>http://10.0.0.5:8080/v1</code>" in page
