"""The seed's components, candidate ids, and the Guild folder a candidate makes (strictly loaded)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import write_guild

from orchestrator.config.guild import load_guild
from orchestrator.foundry.candidate import candidate_id, changed_components, materialize, read_layout


def _guild(tmp_path: Path) -> Path:
    return write_guild(tmp_path / "seed", {"lead": ["run_shell", "finish"], "helper": ["finish"]})


def test_the_seed_has_each_role_prompt_and_each_listed_tool_description(tmp_path: Path) -> None:
    layout = read_layout(_guild(tmp_path))
    assert layout.seed["prompt:prompts/lead.md"] == "You are the lead.\n"
    assert layout.seed["tool:run_shell"].startswith("Run a shell command")
    assert "tool:write_file" not in layout.seed  # no role lists it: never a component
    assert layout.role_components == {
        "lead": ["prompt:prompts/lead.md", "tool:run_shell", "tool:finish"],
        "helper": ["prompt:prompts/helper.md", "tool:finish"],
    }
    assert layout.manifests["tool:finish"] == "tools/finish.json"


def test_ids_are_stable_and_name_the_texts(tmp_path: Path) -> None:
    assert candidate_id({"a": "1", "b": "2"}) == candidate_id({"b": "2", "a": "1"})
    assert candidate_id({"a": "1"}) != candidate_id({"a": "2"})
    assert changed_components({"a": "1", "b": "2"}, {"a": "1", "b": "3"}) == ["b"]


def test_a_candidate_makes_a_guild_that_changes_only_its_texts(tmp_path: Path) -> None:
    seed = _guild(tmp_path)
    layout = read_layout(seed)
    candidate = dict(layout.seed)
    candidate["prompt:prompts/lead.md"] = "You are the lead. Be brief."
    candidate["tool:run_shell"] = "Run one shell command."
    target = tmp_path / "made"
    assert materialize(layout, candidate, target) == []
    guild = load_guild(target)
    assert guild.roles["lead"].system_prompt == "You are the lead. Be brief."
    assert guild.tools["run_shell"].description == "Run one shell command."
    before = json.loads((seed / "tools" / "run_shell.json").read_text())
    after = json.loads((target / "tools" / "run_shell.json").read_text())
    assert {k: v for k, v in after.items() if k != "description"} == {
        k: v for k, v in before.items() if k != "description"
    }
    assert (target / "guild.json").read_bytes() == (seed / "guild.json").read_bytes()


def test_a_candidate_that_is_no_guild_gets_the_problems(tmp_path: Path) -> None:
    layout = read_layout(_guild(tmp_path))
    blank = dict(layout.seed) | {"prompt:prompts/lead.md": "  \n"}
    assert materialize(layout, blank, tmp_path / "x") == ["component prompt:prompts/lead.md: the text is blank"]
    unknown = dict(layout.seed) | {"tool:nope": "x"}
    assert materialize(layout, unknown, tmp_path / "y") == ["component tool:nope: unknown (not in the seed Guild)"]
    # the strict loader's own problems come through: a seed folder changed under the search
    document = json.loads((tmp_path / "seed" / "guild.json").read_text()) | {"model": {}}
    (tmp_path / "seed" / "guild.json").write_text(json.dumps(document))
    problems = materialize(layout, dict(layout.seed), tmp_path / "z")
    assert len(problems) == 1 and "`model` does not belong in guild.json" in problems[0]
    (tmp_path / "seed" / "tools" / "finish.json").write_text("{")
    problems = materialize(layout, dict(layout.seed), tmp_path / "w")
    assert problems and "component tool:finish: cannot be written" in problems[0]
