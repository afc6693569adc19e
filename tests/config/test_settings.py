"""load_settings end to end: paths, the shipped files, re-validation naming variables, secrets, rendering."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import write_deployment, write_guild

from orchestrator.config import Settings, load_settings, locate_config, render_settings, resolve_paths
from orchestrator.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
PACKAGED_GUILD = str(REPO / "guild")
PACKAGED_DEPLOYMENT = str(REPO / "deployment" / "deployment.json")
Load = Callable[..., Settings]
EditJson = Callable[[Path, Callable[[dict[str, Any]], object]], None]
DECLARED = "answerer, janitor, lead, watcher, writer"


def _problems(load: Load, env: dict[str, str] | None = None, **kwargs: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load(env, **kwargs)
    return caught.value.problems


@pytest.mark.parametrize(
    ("guild", "deployment", "env", "expected"),
    [
        (None, None, {}, (PACKAGED_GUILD, PACKAGED_DEPLOYMENT)),
        (None, None, {"ORCHESTRATOR_GUILD_DIR": "/g", "ORCHESTRATOR_DEPLOYMENT_FILE": "/d.json"}, ("/g", "/d.json")),
        (
            "cli-g",
            "cli.json",
            {"ORCHESTRATOR_GUILD_DIR": "/g", "ORCHESTRATOR_DEPLOYMENT_FILE": "/d.json"},
            ("cli-g", "cli.json"),
        ),
        (
            None,
            None,
            {"ORCHESTRATOR_GUILD_DIR": "", "ORCHESTRATOR_DEPLOYMENT_FILE": ""},
            (PACKAGED_GUILD, PACKAGED_DEPLOYMENT),
        ),
        ("cli-g", None, {"ORCHESTRATOR_DEPLOYMENT_FILE": "/d.json"}, ("cli-g", "/d.json")),
    ],
)
def test_resolve_paths_flag_beats_variable_beats_default(
    guild: str | None, deployment: str | None, env: dict[str, str], expected: tuple[str, str], tmp_path: Path
) -> None:
    # An empty workspace: what is not given by flag or variable comes from the package.
    assert resolve_paths(guild, deployment, env, tmp_path) == (Path(expected[0]), Path(expected[1]))


def test_locate_config_prefers_the_workspace_copy_over_the_packaged_one(tmp_path: Path) -> None:
    (tmp_path / "guild").mkdir()
    paths = locate_config(None, None, {}, tmp_path)
    assert (paths.guild_dir, paths.guild_source) == (tmp_path / "guild", "workspace")
    # Resolved independently: no deployment/deployment.json in the workspace, so the packaged one.
    assert (paths.deployment_file, paths.deployment_source) == (Path(PACKAGED_DEPLOYMENT), "packaged default")
    (tmp_path / "deployment").mkdir()
    (tmp_path / "deployment" / "deployment.json").write_text("{}")
    paths = locate_config(None, None, {"ORCHESTRATOR_GUILD_DIR": "/g"}, tmp_path)
    assert (paths.guild_dir, paths.guild_source) == (Path("/g"), "environment ORCHESTRATOR_GUILD_DIR")
    assert (paths.deployment_file, paths.deployment_source) == (tmp_path / "deployment/deployment.json", "workspace")
    paths = locate_config("cli-g", "cli.json", {"ORCHESTRATOR_GUILD_DIR": "/g"}, tmp_path)
    assert (paths.guild_source, paths.deployment_source) == ("flag --guild", "flag --deployment")
    assert paths.notes() == [
        "Guild: cli-g (from flag --guild)",
        "deployment file: cli.json (from flag --deployment)",
    ]


def test_a_workspace_guild_that_is_a_file_is_not_taken(tmp_path: Path) -> None:
    (tmp_path / "guild").write_text("not a directory")
    assert locate_config(None, None, {}, tmp_path).guild_source == "packaged default"


def test_the_packaged_defaults_are_the_repository_folders_in_a_checkout() -> None:
    assert Path(PACKAGED_GUILD) == REPO / "guild"
    assert Path(PACKAGED_DEPLOYMENT) == REPO / "deployment" / "deployment.json"


def test_shipped_guild_and_deployment_load(secrets_dir: Path) -> None:
    settings = load_settings(REPO / "guild", REPO / "deployment" / "deployment.json", {}, secrets_dir=secrets_dir)
    assert settings.guild.entry_role == "orchestrator"
    assert settings.deployment.model.api_base.endswith("/v1")
    assert settings.deployment.executor.context_pressure_threshold == 0.8
    assert settings.api_key is None
    assert settings.notes == ["model API key: not set"]
    json.dumps(render_settings(settings))


def test_fixture_loads_with_every_field(load: Load, guild_dir: Path, deployment_file: Path) -> None:
    settings = load()
    assert settings.guild_dir == guild_dir
    assert settings.deployment_file == deployment_file
    assert settings.deployment.executor.context_handler_role == "janitor"
    assert settings.guild.roles["writer"].system_prompt.endswith("Style: be brief.\n")


@pytest.mark.parametrize(
    ("variable", "field"),
    [
        ("ORCHESTRATOR_CONTEXT_HANDLER_ROLE", "executor.contextHandlerRole"),
        ("ORCHESTRATOR_INQUIRY_HANDLER_ROLE", "executor.inquiryHandlerRole"),
        ("ORCHESTRATOR_INTERRUPT_HANDLER_ROLE", "executor.interruptTriggers.handlerRole"),
        ("ORCHESTRATOR_INTERRUPT_PLAN_OWNER_ROLE", "executor.interruptTriggers.planOwnerRole"),
    ],
)
def test_override_naming_an_undeclared_role_names_the_variable(load: Load, variable: str, field: str) -> None:
    problems = _problems(load, {variable: "ghost"})
    assert problems == [
        f"{variable}: {field} names role `ghost`, which the Guild does not declare (declared roles: {DECLARED})"
    ]


def test_override_naming_a_declared_role_is_accepted(load: Load) -> None:
    settings = load({"ORCHESTRATOR_CONTEXT_HANDLER_ROLE": "lead"})
    assert settings.deployment.executor.context_handler_role == "lead"
    assert "ORCHESTRATOR_CONTEXT_HANDLER_ROLE overrides executor.contextHandlerRole: 'janitor' → 'lead'" in (
        settings.notes
    )


def test_file_role_reference_names_the_file_and_field(load: Load, deployment_file: Path, edit_json: EditJson) -> None:
    edit_json(deployment_file, lambda d: d["executor"].update(inquiryHandlerRole="ghost"))
    problems = _problems(load)
    assert problems == [
        f"{deployment_file}: executor.inquiryHandlerRole names role `ghost`, which the Guild does not declare "
        f"(declared roles: {DECLARED})"
    ]


def test_file_is_validated_before_overrides_replace_it(load: Load, deployment_file: Path, edit_json: EditJson) -> None:
    edit_json(deployment_file, lambda d: d["executor"].update(contextHandlerRole="ghost"))
    problems = _problems(load, {"ORCHESTRATOR_CONTEXT_HANDLER_ROLE": "lead"})
    assert len(problems) == 1
    assert problems[0].startswith(f"{deployment_file}: executor.contextHandlerRole")


def test_trigger_section_introduced_from_env_is_cross_checked(load: Load, minimal_deployment_file: Path) -> None:
    env = {
        "ORCHESTRATOR_INTERRUPT_HANDLER_ROLE": "ghost",
        "ORCHESTRATOR_INTERRUPT_EVERY_TOOL_CALLS": "4",
        "ORCHESTRATOR_INTERRUPT_EVERY_TOKENS": "100",
    }
    problems = _problems(load, env, deployment=minimal_deployment_file)
    assert len(problems) == 1
    assert problems[0].startswith("ORCHESTRATOR_INTERRUPT_HANDLER_ROLE: executor.interruptTriggers.handlerRole")
    env["ORCHESTRATOR_INTERRUPT_HANDLER_ROLE"] = "watcher"
    triggers = load(env, deployment=minimal_deployment_file).deployment.executor.interrupt_triggers
    assert triggers is not None and triggers.handler_role == "watcher"


def test_partial_trigger_introduction_fails_load(load: Load, minimal_deployment_file: Path) -> None:
    problems = _problems(load, {"ORCHESTRATOR_INTERRUPT_EVERY_TOKENS": "100"}, deployment=minimal_deployment_file)
    assert len(problems) == 1
    assert problems[0].startswith("ORCHESTRATOR_INTERRUPT_HANDLER_ROLE, ORCHESTRATOR_INTERRUPT_EVERY_TOOL_CALLS:")


def test_every_problem_is_collected_in_one_error(
    load: Load, deployment_file: Path, guild_dir: Path, edit_json: EditJson
) -> None:
    edit_json(deployment_file, lambda d: d["executor"].update(maxAgentDepth=0, contextHandlerRole="ghost"))
    edit_json(guild_dir / "guild.json", lambda g: g["roles"]["lead"].update(includeReasoning=True))
    env = {"ORCHESTRATOR_MAX_TOKENS": "1e3", "ORCHESTRATOR_TEMPERATURE": "inf", "ORCHESTRATOR_MODEL": "fine"}
    problems = _problems(load, env)
    assert any("includeReasoning" in p for p in problems)
    assert any(p.startswith("ORCHESTRATOR_MAX_TOKENS: ") for p in problems)
    assert any(p.startswith("ORCHESTRATOR_TEMPERATURE: ") for p in problems)
    assert any(p.startswith(f"{deployment_file}: executor.maxAgentDepth must be a positive integer") for p in problems)
    # The Guild failed, so role references cannot be checked and are not guessed at.
    assert not any("ghost" in p for p in problems)
    assert len(problems) == 4


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "the deployment file does not exist"),
        ("{", "not valid JSON"),
        ('{"modle": {}}', "Object contains unknown field `modle`"),
        ('{"model": {"modle": 1}}', "deployment.json: Object contains unknown field `modle` - at `$.model`"),
    ],
)
def test_unreadable_or_invalid_deployment_file(
    load: Load, deployment_file: Path, content: str | None, fragment: str
) -> None:
    if content is None:
        deployment_file.unlink()
    else:
        deployment_file.write_text(content)
    problems = _problems(load)
    assert len(problems) == 1
    assert problems[0].startswith(f"{deployment_file}: ")
    assert fragment in problems[0]


def test_deployment_path_that_is_a_directory(load: Load, tmp_path: Path) -> None:
    problems = _problems(load, deployment=tmp_path)
    assert problems[0].startswith(f"{tmp_path}: the deployment file cannot be read")


def test_api_key_in_deployment_file_is_rejected_without_echo(
    load: Load, deployment_file: Path, edit_json: EditJson
) -> None:
    edit_json(deployment_file, lambda d: d["model"].update(apiKey="sk-in-file"))
    problems = _problems(load)
    assert len(problems) == 1
    assert "ORCHESTRATOR_API_KEY" in problems[0]
    assert "sk-in-file" not in problems[0]


def test_api_key_resolves_and_never_renders(load: Load, secrets_dir: Path) -> None:
    (secrets_dir / "orchestrator_api_key").write_text("sk-from-secret\n")
    settings = load()
    assert settings.api_key == "sk-from-secret"
    assert f"model API key: set (from {secrets_dir / 'orchestrator_api_key'})" in settings.notes
    rendered = json.dumps(render_settings(settings))
    assert "sk-from-secret" not in rendered
    assert render_settings(settings)["model"]["apiKey"] == "<redacted>"
    assert "sk-from-secret" not in repr(settings)
    assert "sk-from-secret" not in " ".join(settings.notes)


def test_api_key_never_appears_in_errors_or_notes(load: Load) -> None:
    key = "sk-0123456789"
    env = {"ORCHESTRATOR_API_KEY": key, "ORCHESTRATOR_MAX_TOKENS": key, "ORCHESTRATOR_TEMPERATURE": "nan"}
    problems = _problems(load, env)
    assert problems[1] == (
        "ORCHESTRATOR_MAX_TOKENS: model.generation.maxTokens must be a positive integer written as "
        "plain digits (got '<redacted>')"
    )
    assert not any(key in p for p in problems)
    settings = load({"ORCHESTRATOR_API_KEY": key, "ORCHESTRATOR_MODEL": key})
    assert key not in json.dumps(render_settings(settings))
    assert key not in " ".join(settings.notes)


def test_short_keys_are_not_scrubbed_from_text(load: Load) -> None:
    problems = _problems(load, {"ORCHESTRATOR_API_KEY": "x", "ORCHESTRATOR_MAX_TOKENS": "x"})
    assert problems == [
        "ORCHESTRATOR_MAX_TOKENS: model.generation.maxTokens must be a positive integer written as "
        "plain digits (got 'x')"
    ]


def test_render_fills_defaults_and_keeps_display_fields(load: Load, minimal_deployment_file: Path) -> None:
    rendered = render_settings(load(deployment=minimal_deployment_file))
    assert rendered["model"] == {
        "name": None,
        "apiBase": "http://127.0.0.1:9/v1",
        "contextWindow": None,
        "generation": {"temperature": 0.2, "maxTokens": 4096},
        "apiKey": None,
    }
    assert rendered["executor"] == {
        "maxAgentDepth": 8,
        "defaultToolTimeoutSeconds": 30,
        "maxCompactionAttempts": 5,
        "contextPressureThreshold": 0.8,
        "contextHandlerRole": None,
        "inquiryHandlerRole": None,
        "interruptTriggers": None,
    }
    assert rendered["contextPolicy"] == {"maxToolOutputChars": 4000}
    assert rendered["logging"] is None
    assert rendered["entryRole"] == "lead"
    assert rendered["roles"]["lead"]["label"] == {"detailed": ["Lead"], "friendly": ["Boss", "Chief"]}
    assert rendered["roles"]["lead"]["tools"] == ["agent", "finish"]
    assert rendered["tools"]["agent"]["humanLabel"] == {"detailed": ["Delegate"]}
    assert rendered["visualization"] == {"pseudoRoleLabels": {"human": {"detailed": ["You"]}}}
    assert rendered["notes"] == ["model API key: not set"]
    json.dumps(rendered)


def test_render_shows_interrupt_triggers(load: Load) -> None:
    rendered = render_settings(load())
    assert rendered["executor"]["interruptTriggers"] == {
        "handlerRole": "watcher",
        "everyToolCalls": 12,
        "everyTokens": 30000,
        "planOwnerRole": "lead",
    }
    assert rendered["logging"] == {"level": "standard"}


def test_override_notes_describe_old_and_new(load: Load, minimal_deployment_file: Path) -> None:
    settings = load({"ORCHESTRATOR_MAX_TOKENS": "2048", "ORCHESTRATOR_MODEL": "m"}, deployment=minimal_deployment_file)
    assert "ORCHESTRATOR_MAX_TOKENS overrides model.generation.maxTokens: 4096 → 2048" in settings.notes
    assert "ORCHESTRATOR_MODEL overrides model.name: unset → 'm'" in settings.notes


def test_public_api_names() -> None:
    import orchestrator.config as config

    expected = {
        "Deployment", "ModelConfig", "Generation", "ExecutorConfig", "InterruptTriggers", "ContextPolicy",
        "LoggingConfig", "Guild", "Role", "ToolManifest", "Settings", "load_settings", "probe_model",
        "resolve_paths", "render_settings",
    }  # fmt: skip
    assert expected <= set(config.__all__)
    for name in config.__all__:
        assert getattr(config, name) is not None


def test_the_kagi_key_in_a_wrong_variable_is_never_echoed(load: Load, secrets_dir: Path) -> None:
    kagi = "kagi-live-0123456789"
    problems = _problems(load, {"ORCHESTRATOR_KAGI_API_KEY": kagi, "ORCHESTRATOR_MAX_AGENT_DEPTH": kagi})
    assert problems == [
        "ORCHESTRATOR_MAX_AGENT_DEPTH: executor.maxAgentDepth must be a positive integer written as plain digits "
        "(got '<redacted>')"
    ]
    # The same from its secret file, from the token, and from any secret-looking variable.
    (secrets_dir / "kagi_api_key").write_text(f"{kagi}\n")
    env = {
        "ORCHESTRATOR_TOKEN": "service-token-abc",
        "DEPLOY_PASSWORD": "pa55word-xyz",
        "ORCHESTRATOR_MAX_TOKENS": kagi,
        "ORCHESTRATOR_TEMPERATURE": "service-token-abc",
        "ORCHESTRATOR_MODEL_CONTEXT_WINDOW": "pa55word-xyz",
    }
    problems = _problems(load, env)
    assert len(problems) == 3 and all("'<redacted>'" in p for p in problems)
    assert not any(secret in p for p in problems for secret in (kagi, "service-token-abc", "pa55word-xyz"))
    settings = load({"ORCHESTRATOR_MODEL": kagi})
    rendered = json.dumps(render_settings(settings))
    assert kagi not in rendered and kagi not in " ".join(settings.notes) and kagi not in repr(settings)
    assert render_settings(settings)["model"]["name"] == "<redacted>"


def test_in_a_source_checkout_the_packaged_default_is_called_the_checkouts_own_folder(tmp_path: Path) -> None:
    notes = locate_config(None, None, {}, tmp_path).notes()  # this test runs from a checkout (symlinks)
    assert notes[0].endswith("(this checkout's guild/, the packaged default)")
    assert notes[1].endswith("(this checkout's deployment/deployment.json, the packaged default)")


def test_render_shows_the_observability_block_with_its_defaults(tmp_path: Path) -> None:
    guild = write_guild(tmp_path / "guild", {"lead": ["finish"]})
    deployment = write_deployment(tmp_path / "deployment.json", "http://127.0.0.1:9/v1")
    document = json.loads(deployment.read_text())
    document["observability"] = {"endpoint": "http://127.0.0.1:4318"}
    deployment.write_text(json.dumps(document))
    rendered = render_settings(load_settings(guild, deployment, {}, secrets_dir=tmp_path / "none"))
    assert rendered["observability"] == {
        "enabled": True,
        "endpoint": "http://127.0.0.1:4318",
        "serviceName": None,
        "captureMessageContent": False,
        "maxQueueSize": None,
        "exportTimeoutSeconds": None,
        "shutdownTimeoutSeconds": None,
    }
