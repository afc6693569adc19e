"""The Guild loader: prompt resolution, style guides, tiered labels, manifests and every rejection."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator.config import Guild, load_guild
from orchestrator.config.guild import parse_manifest, read_guild
from orchestrator.errors import ConfigError

Mutate = Callable[[dict[str, Any]], object]
EditJson = Callable[[Path, Mutate], None]
REPO = Path(__file__).resolve().parents[2]


def _problems(guild_dir: Path) -> list[str]:
    guild, problems = read_guild(guild_dir)
    assert guild is None
    assert problems
    return problems


def test_fixture_guild_loads(guild_dir: Path) -> None:
    guild = load_guild(guild_dir)
    assert guild.entry_role == "lead"
    assert set(guild.roles) == {"lead", "writer", "janitor", "watcher", "answerer"}
    assert set(guild.tools) == {"agent", "finish"}
    assert guild.directory == guild_dir
    assert guild.visualization == {"pseudoRoleLabels": {"human": {"detailed": ["You"]}}}
    lead = guild.roles["lead"]
    assert lead.name == "lead"
    assert lead.system_prompt == "You lead.\n"
    assert lead.tools == ["agent", "finish"]


def test_style_guide_is_appended_after_exactly_one_blank_line(guild_dir: Path) -> None:
    writer = load_guild(guild_dir).roles["writer"]
    assert writer.system_prompt == "You write.\n\nStyle: be brief.\n"


def test_tiered_fields_normalise_to_arrays(guild_dir: Path) -> None:
    guild = load_guild(guild_dir)
    assert guild.roles["lead"].label == {"detailed": ["Lead"], "friendly": ["Boss", "Chief"]}
    assert guild.roles["lead"].working_label == {"whimsical": ["{participant} is pondering"]}
    assert guild.roles["lead"].description is None
    assert guild.roles["writer"].description == {"detailed": ["Writes things"]}
    agent = guild.tools["agent"]
    assert agent.human_label == {"detailed": ["Delegate"]}
    assert agent.human_call_label == {"detailed": ["{source} asks {destination}"]}
    assert agent.human_description is None
    assert agent.parameters["required"] == ["role", "task"]


def test_shipped_guild_loads() -> None:
    guild = load_guild(REPO / "guild")
    assert isinstance(guild, Guild)
    assert guild.entry_role in guild.roles
    for role in guild.roles.values():
        assert set(role.tools) <= set(guild.tools)
        assert role.system_prompt.strip()
    coder = guild.roles["coder"]
    style = (REPO / "guild" / "prompts" / "style.md").read_text()
    prompt = (REPO / "guild" / "prompts" / "coder.md").read_text()
    assert coder.system_prompt == prompt.rstrip("\n") + "\n\n" + style


@pytest.mark.parametrize(
    ("mutate", "fragments"),
    [
        (
            lambda g: g.update(model={}),
            ["`model` does not belong", "deployment/deployment.json", "ORCHESTRATOR_DEPLOYMENT_FILE"],
        ),
        (lambda g: g.update(executor={}), ["`executor` does not belong", "`$.executor`", "deployment/deployment.json"]),
        (lambda g: g.update(contextPolicy={}), ["`contextPolicy` does not belong", "deployment/deployment.json"]),
        (lambda g: g.update(logging={}), ["`logging` does not belong", "deployment/deployment.json"]),
        (lambda g: g.update(schemaVersion=3), ["`schemaVersion` does not belong", "deployment/deployment.json"]),
        (lambda g: g.update(entryRoles="lead"), ["unknown field `entryRoles`"]),
        (lambda g: g.pop("entryRole"), ["missing required field `entryRole`"]),
        (lambda g: g.pop("roles"), ["missing required field `roles`"]),
        (lambda g: g.update(tools={}), ["Expected `array`", "`$.tools`"]),
        (lambda g: g.update(visualization=[]), ["Expected `object | null`", "`$.visualization`"]),
        (lambda g: g.update(entryRole="ghost"), ["entryRole `ghost` is not a declared role", "answerer, janitor"]),
        (
            lambda g: g["roles"]["lead"].update(includeReasoning=False),
            ["role `lead`", "`includeReasoning`", "removed", "always retained", "`$.roles.lead.includeReasoning`"],
        ),
        (lambda g: g["roles"]["lead"].update(budget=3), ["role `lead`", "unknown field `budget`", "`$.roles.lead`"]),
        (lambda g: g["roles"]["lead"].pop("systemPrompt"), ["role `lead`", "missing required field `systemPrompt`"]),
        (lambda g: g["roles"]["lead"].pop("tools"), ["role `lead`", "missing required field `tools`"]),
        (lambda g: g["roles"]["lead"].update(tools="finish"), ["Expected `array`", "`$.roles.lead.tools`"]),
        (
            lambda g: g["roles"]["lead"].update(label={"detailed": "x", "fancy": "y"}),
            ["unknown field `fancy`", "`$.roles.lead.label`"],
        ),
        (lambda g: g["roles"]["lead"].update(label={"detailed": []}), ["length >= 1", "`$.roles.lead.label.detailed`"]),
        (lambda g: g["roles"]["lead"].update(label={"detailed": 3}), ["`$.roles.lead.label.detailed`"]),
        (
            lambda g: g["roles"]["lead"].update(systemPrompt="prompts/nope.md"),
            ["role `lead`", "systemPrompt", "`prompts/nope.md`", "does not exist", "`$.roles.lead.systemPrompt`"],
        ),
        (
            lambda g: g["roles"]["writer"].update(styleGuide="prompts/missing-style.md"),
            ["role `writer`", "styleGuide", "`prompts/missing-style.md`", "does not exist"],
        ),
        (lambda g: g["roles"]["lead"].update(systemPrompt="prompts"), ["role `lead`", "systemPrompt", "directory"]),
        (
            lambda g: g["roles"]["lead"]["tools"].append("web_search"),
            ["role `lead` lists tool `web_search`", "no manifest declares", "`$.roles.lead.tools[2]`", "agent, finish"],
        ),
        (
            lambda g: g["tools"].append("tools/nope.json"),
            ["tool manifest `tools/nope.json`", "does not exist", "`$.tools[2]`"],
        ),
        (
            lambda g: g["tools"].append("tools/agent.json"),
            ["tool name `agent` is already declared by `tools/agent.json`"],
        ),
    ],
)
def test_guild_rejections_name_the_key(
    guild_dir: Path, edit_json: EditJson, mutate: Mutate, fragments: list[str]
) -> None:
    edit_json(guild_dir / "guild.json", mutate)
    problems = _problems(guild_dir)
    assert len(problems) == 1, problems
    assert problems[0].startswith(str(guild_dir))
    for fragment in fragments:
        assert fragment in problems[0]


@pytest.mark.parametrize(
    ("manifest", "fragments"),
    [
        (
            {"name": "x", "description": "d", "parameters": {"type": "object"}, "humanLabels": {}},
            ["unknown field `humanLabels`"],
        ),
        ({"description": "d", "parameters": {"type": "object"}}, ["missing required field `name`"]),
        ({"name": "", "description": "d", "parameters": {"type": "object"}}, ["`$.name`"]),
        ({"name": "x", "parameters": {"type": "object"}}, ["missing required field `description`"]),
        ({"name": "x", "description": "d"}, ["missing required field `parameters`"]),
        ({"name": "x", "description": "d", "parameters": []}, ["Expected `object`", "`$.parameters`"]),
        ({"name": "x", "description": "d", "parameters": {"type": "string"}}, ['"type": "object"']),
        (
            {"name": "x", "description": "d", "parameters": {"type": "object", "properties": {"a": {"type": 5}}}},
            ["not a valid JSON Schema", "`$.parameters.properties.a.type`"],
        ),
        (
            {"name": "x", "description": "d", "parameters": {"type": "object"}, "humanLabel": {"detailed": [1]}},
            ["`$.humanLabel.detailed[0]`"],
        ),
    ],
)
def test_manifest_rejections_name_the_file_and_key(
    guild_dir: Path, edit_json: EditJson, manifest: dict[str, Any], fragments: list[str]
) -> None:
    (guild_dir / "tools" / "extra.json").write_text(json.dumps(manifest))
    edit_json(guild_dir / "guild.json", lambda g: g["tools"].append("tools/extra.json"))
    problems = _problems(guild_dir)
    assert len(problems) == 1, problems
    assert problems[0].startswith(str(guild_dir / "tools" / "extra.json"))
    for fragment in fragments:
        assert fragment in problems[0]


def test_manifest_that_is_not_json(guild_dir: Path) -> None:
    manifest, problems = parse_manifest(b"{nope")
    assert manifest is None
    assert "malformed" in problems[0]


@pytest.mark.parametrize(
    ("setup", "fragment"),
    [
        (lambda d: (d / "guild.json").unlink(), "guild.json: does not exist"),
        (lambda d: (d / "guild.json").write_text("{"), "guild.json: not valid JSON"),
        (lambda d: (d / "guild.json").write_text("[1, 2]"), "Expected `object`, got `list`"),
    ],
)
def test_unreadable_guild_file(guild_dir: Path, setup: Callable[[Path], object], fragment: str) -> None:
    setup(guild_dir)
    problems = _problems(guild_dir)
    assert len(problems) == 1
    assert fragment in problems[0]
    assert str(guild_dir) in problems[0]


def test_many_problems_are_reported_together(guild_dir: Path, edit_json: EditJson) -> None:
    def mutate(g: dict[str, Any]) -> None:
        g["schemaVersion"] = 1
        g["roles"]["lead"]["includeReasoning"] = True
        g["roles"]["writer"]["systemPrompt"] = "prompts/gone.md"
        g["roles"]["janitor"]["tools"].append("ghost_tool")

    edit_json(guild_dir / "guild.json", mutate)
    with pytest.raises(ConfigError) as caught:
        load_guild(guild_dir)
    problems = caught.value.problems
    assert len(problems) == 4, problems
    assert "schemaVersion" in problems[0]
    assert any("includeReasoning" in p for p in problems)
    assert any("prompts/gone.md" in p for p in problems)
    assert any("ghost_tool" in p for p in problems)


def test_a_broken_manifest_does_not_cascade_into_unknown_tool_errors(guild_dir: Path) -> None:
    (guild_dir / "tools" / "finish.json").write_text("{}")
    problems = _problems(guild_dir)
    assert len(problems) == 1
    assert "finish.json" in problems[0]
    assert "missing required field" in problems[0]
