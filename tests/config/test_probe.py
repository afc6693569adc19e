"""The model probe against a real HTTP server: window override, discovery, failures, missing fields."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import pytest
import trio

from orchestrator.config import Settings, probe_model
from orchestrator.config.probe import (
    ModelNotReady,
    ProbeOutcome,
    ServedModel,
    parse_model_list,
    refresh_model,
    resolve_model,
)
from orchestrator.errors import ConfigError

Load = Callable[..., Settings]


class _Api(Protocol):
    """The ``model_api`` fixture's surface (see conftest.FakeModelApi)."""

    api_base: str
    status: int
    body: bytes
    authorizations: list[str | None]

    def serve_models(self, *entries: dict[str, object]) -> None: ...


def _llama(model_id: str, n_ctx: int | None) -> dict[str, object]:
    meta = None if n_ctx is None else {"n_ctx": n_ctx, "n_ctx_train": 131072, "n_vocab": 1}
    return {"id": model_id, "object": "model", "owned_by": "llamacpp", "meta": meta}


async def test_reported_n_ctx_replaces_the_configured_window(load: Load, model_api: _Api) -> None:
    model_api.serve_models(_llama("test-model", 16384))
    settings = await probe_model(load({"ORCHESTRATOR_API_BASE": model_api.api_base}))
    assert settings.deployment.model.context_window == 16384
    assert settings.deployment.model.name == "test-model"
    assert "model.contextWindow overridden by the model API: configured 32768 → reported 16384" in settings.notes
    assert any(note.startswith(f"model probe: GET {model_api.api_base}/models listed 1") for note in settings.notes)


async def test_top_level_context_length_is_a_report_too(load: Load, model_api: _Api) -> None:
    model_api.serve_models({"id": "test-model", "context_length": 200000}, {"id": "other", "context_length": 5})
    settings = await probe_model(load({"ORCHESTRATOR_API_BASE": model_api.api_base}))
    assert settings.deployment.model.context_window == 200000


async def test_null_meta_keeps_the_configured_window(load: Load, model_api: _Api) -> None:
    model_api.serve_models(_llama("test-model", None))
    settings = await probe_model(load({"ORCHESTRATOR_API_BASE": model_api.api_base}))
    assert settings.deployment.model.context_window == 32768
    assert not any("contextWindow" in note for note in settings.notes)


async def test_single_served_model_is_discovered(load: Load, model_api: _Api, minimal_deployment_file: Path) -> None:
    model_api.serve_models(_llama("../models/qwen.gguf", 8192))
    settings = await probe_model(
        load({"ORCHESTRATOR_API_BASE": model_api.api_base}, deployment=minimal_deployment_file)
    )
    assert settings.deployment.model.name == "../models/qwen.gguf"
    assert settings.deployment.model.context_window == 8192
    assert any("`../models/qwen.gguf` discovered" in note for note in settings.notes)
    assert "model.contextWindow 8192 reported by the model API" in settings.notes


async def test_several_models_and_no_name_lists_the_ids(
    load: Load, model_api: _Api, minimal_deployment_file: Path
) -> None:
    model_api.serve_models(_llama("alpha", 8192), _llama("beta", 8192))
    settings = load({"ORCHESTRATOR_API_BASE": model_api.api_base}, deployment=minimal_deployment_file)
    with pytest.raises(ConfigError) as caught:
        await probe_model(settings)
    [problem] = caught.value.problems
    assert "serves several models (`alpha`, `beta`)" in problem
    assert "model.name" in problem and "ORCHESTRATOR_MODEL" in problem


async def test_configured_name_picks_among_several(load: Load, model_api: _Api) -> None:
    model_api.serve_models(_llama("alpha", 4096 * 4), _llama("test-model", 65536))
    settings = await probe_model(load({"ORCHESTRATOR_API_BASE": model_api.api_base}))
    assert settings.deployment.model.name == "test-model"
    assert settings.deployment.model.context_window == 65536


async def test_configured_name_not_served_keeps_configured_values(load: Load, model_api: _Api) -> None:
    model_api.serve_models(_llama("alpha", 8192))
    settings = await probe_model(load({"ORCHESTRATOR_API_BASE": model_api.api_base}))
    assert (settings.deployment.model.name, settings.deployment.model.context_window) == ("test-model", 32768)
    assert any("`test-model` is not among the served ids (`alpha`)" in note for note in settings.notes)


@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        (500, b'{"error": "boom"}', "HTTP 500"),
        (404, b"not here", "HTTP 404"),
        (200, b"<html>", "unparseable body"),
        (200, b'{"models": []}', "unparseable body"),
    ],
)
async def test_failed_probe_boots_on_configured_values(
    load: Load, model_api: _Api, status: int, body: bytes, reason: str
) -> None:
    model_api.status, model_api.body = status, body
    before = load({"ORCHESTRATOR_API_BASE": model_api.api_base})
    settings = await probe_model(before)
    assert settings.deployment == before.deployment
    [note] = [n for n in settings.notes if n.startswith("model probe:")]
    assert reason in note
    assert "booting on the configured values" in note


async def test_unreachable_port_boots_on_configured_values(load: Load) -> None:
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        port = sock.getsockname()[1]
        before = load({"ORCHESTRATOR_API_BASE": f"http://127.0.0.1:{port}/v1"})
        settings = await probe_model(before)
    assert settings.deployment == before.deployment
    assert any(f"GET http://127.0.0.1:{port}/v1/models failed (ConnectError" in n for n in settings.notes)


async def test_silent_endpoint_times_out(load: Load) -> None:
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        sock.listen(1)  # accepts into the backlog, never answers
        port = sock.getsockname()[1]
        settings = await probe_model(load({"ORCHESTRATOR_API_BASE": f"http://127.0.0.1:{port}/v1"}), timeout=0.2)
    [note] = [n for n in settings.notes if n.startswith("model probe:")]
    assert "failed (" in note and ("timed out" in note or "no answer within 0.2s" in note)


@pytest.mark.parametrize(
    ("variable", "field", "env_var"),
    [
        ("name", "model.name", "ORCHESTRATOR_MODEL"),
        ("contextWindow", "model.contextWindow", "ORCHESTRATOR_MODEL_CONTEXT_WINDOW"),
    ],
)
async def test_missing_field_after_failed_probe_says_could_not_be_probed(
    load: Load, model_api: _Api, minimal_deployment_file: Path, variable: str, field: str, env_var: str
) -> None:
    model_api.status = 503
    env = {"ORCHESTRATOR_API_BASE": model_api.api_base}
    # Configure the other field so exactly the one under test is missing.
    env.update({"ORCHESTRATOR_MODEL_CONTEXT_WINDOW": "8192"} if variable == "name" else {"ORCHESTRATOR_MODEL": "m"})
    with pytest.raises(ConfigError) as caught:
        await probe_model(load(env, deployment=minimal_deployment_file))
    [problem] = caught.value.problems
    assert problem.startswith(f"{field} is not configured and the model API could not be probed")
    assert "HTTP 503" in problem
    assert f"`{field}`" in problem and env_var in problem


@pytest.mark.parametrize(
    ("entries", "env", "field", "env_var"),
    [
        ([], {"ORCHESTRATOR_MODEL_CONTEXT_WINDOW": "8192"}, "model.name", "ORCHESTRATOR_MODEL"),
        ([_llama("m", None)], {"ORCHESTRATOR_MODEL": "m"}, "model.contextWindow", "ORCHESTRATOR_MODEL_CONTEXT_WINDOW"),
        ([_llama("only", None)], {}, "model.contextWindow", "ORCHESTRATOR_MODEL_CONTEXT_WINDOW"),
    ],
)
async def test_missing_field_after_answer_says_did_not_report_it(
    load: Load,
    model_api: _Api,
    minimal_deployment_file: Path,
    entries: list[dict[str, object]],
    env: dict[str, str],
    field: str,
    env_var: str,
) -> None:
    model_api.serve_models(*entries)
    with pytest.raises(ConfigError) as caught:
        await probe_model(
            load({"ORCHESTRATOR_API_BASE": model_api.api_base, **env}, deployment=minimal_deployment_file)
        )
    [problem] = caught.value.problems
    assert problem.startswith(f"{field} is not configured and the model API did not report it")
    assert f"`{field}`" in problem and env_var in problem


async def test_both_fields_missing_are_reported_together(load: Load, minimal_deployment_file: Path) -> None:
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        base = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        with pytest.raises(ConfigError) as caught:
            await probe_model(load({"ORCHESTRATOR_API_BASE": base}, deployment=minimal_deployment_file))
    assert [p.split(" is not")[0] for p in caught.value.problems] == ["model.name", "model.contextWindow"]


async def test_bearer_key_is_sent_and_never_noted(load: Load, model_api: _Api, secrets_dir: Path) -> None:
    model_api.serve_models(_llama("test-model", 16384))
    await probe_model(load({"ORCHESTRATOR_API_BASE": model_api.api_base}))
    (secrets_dir / "ORCHESTRATOR_API_KEY").write_text("sk-probe\n")
    settings = await probe_model(load({"ORCHESTRATOR_API_BASE": model_api.api_base}))
    assert model_api.authorizations == [None, "Bearer sk-probe"]
    assert "sk-probe" not in " ".join(settings.notes)


async def test_max_tokens_must_fit_in_the_reported_window(load: Load, model_api: _Api) -> None:
    model_api.serve_models(_llama("test-model", 4096))
    with pytest.raises(ConfigError) as caught:
        await probe_model(load({"ORCHESTRATOR_API_BASE": model_api.api_base}))
    [problem] = caught.value.problems
    assert "model.generation.maxTokens (4096) must be smaller than the model's context window (4096)" in problem
    assert "ORCHESTRATOR_MAX_TOKENS" in problem


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"data": []}', []),
        (b'{"data": [{"id": "a", "meta": null}]}', [ServedModel(id="a")]),
        (b'{"data": [{"id": "a", "meta": {"n_ctx": 512}}]}', [ServedModel(id="a", context_window=512)]),
        (b'{"data": [{"id": "a", "context_length": 900}]}', [ServedModel(id="a", context_window=900)]),
        (b'{"data": [{"id": "a", "meta": {"n_ctx": true}}]}', [ServedModel(id="a")]),
        (b'{"data": [{"id": "a", "meta": {"n_ctx": 0}}]}', [ServedModel(id="a")]),
        (b'{"data": [{"id": "a", "context_length": "9"}]}', [ServedModel(id="a")]),
        (b'{"data": [{"id": ""}, {"id": 5}, "x", {"name": "b"}, {"id": "c"}]}', [ServedModel(id="c")]),
    ],
)
def test_parse_model_list(body: bytes, expected: list[ServedModel]) -> None:
    assert parse_model_list(body) == expected


@pytest.mark.parametrize("body", [b"", b"[]", b'{"data": {}}', b"null", b"{"])
def test_parse_model_list_rejects_non_listings(body: bytes) -> None:
    with pytest.raises(ValueError):
        parse_model_list(body)


def test_resolution_without_a_probe_keeps_configured_values(load: Load) -> None:
    model = load().deployment.model
    resolved, notes, problems = resolve_model(model, ProbeOutcome(url="u", failure="skipped"))
    assert (resolved, notes, problems) == (model, [], [])


# --- issue 13: retries, a loading server, llama-server's /props (fixes E and J) ------------------------


async def test_a_loading_model_server_is_waited_out_with_notices(load: Load, minimal_deployment_file: Path) -> None:
    from tests.helpers import serve_script

    script = {"contextWindow": 8192, "flavor": {"name": "llama-server", "loadingMs": 500}}
    notices: list[str] = []
    async with serve_script(script) as sim:
        before = load({"ORCHESTRATOR_API_BASE": sim.base_url}, deployment=minimal_deployment_file)
        settings = await probe_model(before, backoff_seconds=0.05, load_wait_seconds=20, on_notice=notices.append)
    # llama-server lists the -m path as the id and the per-slot n_ctx in meta
    assert settings.deployment.model.name == "/models/sim.gguf"
    assert settings.deployment.model.context_window == 8192
    assert notices and all("still loading its model" in n for n in notices)
    assert settings.model_status is not None and settings.model_status.reachable
    assert settings.model_status.tools_problem is None


async def test_a_server_down_for_good_is_retried_then_not_ready(load: Load, minimal_deployment_file: Path) -> None:
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        before = load({"ORCHESTRATOR_API_BASE": f"http://127.0.0.1:{port}/v1"}, deployment=minimal_deployment_file)
        notices: list[str] = []
        with pytest.raises(ModelNotReady) as caught:
            await probe_model(before, attempts=3, backoff_seconds=0.01, on_notice=notices.append)
    assert len(notices) == 2 and all("retrying in" in n for n in notices)
    assert not caught.value.status.reachable and "ConnectError" in caught.value.status.message
    assert any("could not be probed" in p for p in caught.value.problems)


async def test_a_client_error_is_not_retried(load: Load, model_api: _Api) -> None:
    model_api.status = 401
    notices: list[str] = []
    settings = await probe_model(load({"ORCHESTRATOR_API_BASE": model_api.api_base}), on_notice=notices.append)
    assert notices == [] and len(model_api.authorizations) == 1
    assert settings.model_status is not None and not settings.model_status.reachable


async def test_a_template_without_tools_is_a_loud_problem(load: Load) -> None:
    from tests.helpers import serve_script

    notices: list[str] = []
    async with serve_script({"flavor": {"name": "llama-server", "supportsTools": False}}) as sim:
        settings = await probe_model(load({"ORCHESTRATOR_API_BASE": sim.base_url}), on_notice=notices.append)
    status = settings.model_status
    assert status is not None and status.tools_problem is not None
    assert "chat_template_caps.supports_tools" in status.tools_problem and "--jinja" in status.tools_problem
    assert any(n.startswith("WARNING: ") for n in settings.notes) and notices == []  # callers print the notes


async def test_a_server_without_props_is_no_problem(load: Load, model_api: _Api) -> None:
    model_api.serve_models(_llama("m", 4096))
    settings = await probe_model(load({"ORCHESTRATOR_API_BASE": model_api.api_base}))
    assert settings.model_status is not None and settings.model_status.tools_problem is None


async def test_refresh_picks_the_server_up_once_it_answers(load: Load) -> None:
    from functools import partial

    from orchestrator.sim import load_script, serve_sim

    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {"ORCHESTRATOR_API_BASE": f"http://127.0.0.1:{port}/v1", "ORCHESTRATOR_MODEL": "/models/sim.gguf"}
    settings = await probe_model(load(env), attempts=1)  # down: boots on the configured name and window
    assert settings.model_status is not None and not settings.model_status.reachable
    refreshed = await refresh_model(settings)  # still down: no exception, the status says so
    assert refreshed.model_status is not None and not refreshed.model_status.reachable
    script = load_script(b'{"contextWindow": 16384, "flavor": {"name": "llama-server"}}')
    async with trio.open_nursery() as nursery:
        await nursery.start(partial(serve_sim, script, port=port))
        refreshed = await refresh_model(refreshed)
        nursery.cancel_scope.cancel()
    assert refreshed.model_status is not None and refreshed.model_status.reachable
    assert refreshed.deployment.model.context_window == 16384
