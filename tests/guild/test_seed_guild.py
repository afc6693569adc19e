"""The shipped seed Guild: 16 roles with the tool sets the seed assigns, short prompts written for a
small model, the shared style guide, tiered labels, and a demo script that follows the Guild.

Loading needs every tool manifest the Guild references; while some are still missing those tests skip
(naming the files) and the checks that read the raw files run on their own.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from orchestrator.config import Settings, load_settings

REPO = Path(__file__).resolve().parents[2]
GUILD_DIR = REPO / "guild"
DEPLOYMENT_FILE = REPO / "deployment" / "deployment.json"
DEMO_SCRIPT = REPO / "src" / "orchestrator" / "sim" / "scripts" / "demo.json"
SEEDS = Path("/work/shared/seeds")
DEMO_TASK = "Write a greeting into hello.txt and make sure it is there."  # `orchestrator demo`'s default task

R = ["list_directory", "glob_files", "read_file", "read_file_partial", "search_text", "repo_map"]
I = ["list_role_messages", "read_message_window", "search_role_blocks", "recent_role_tool_calls"]  # noqa: E741

EXPECTED_TOOLS: dict[str, set[str]] = {
    "orchestrator": {"agent", "ask_human", "finish"},
    "planner": {*R, "read_plan", "write_plan", "finish"},
    "coder": {*R, "read_plan", "write_file", "fetch_url", "typecheck", "test", "run_shell", "finish"},
    "researcher": {*R, "web_search", "fetch_url", "finish"},
    "architecture_lead": {"agent", "finish"},
    "architecture_reviewer": {*R, "read_plan", "finish"},
    "style_lead": {"agent", "finish"},
    "style_reviewer": {*R, "finish"},
    "security_lead": {"agent", "finish"},
    "security_reviewer": {*R, "finish"},
    "acceptance_lead": {"agent", "finish"},
    "acceptance_reviewer": {*R, "read_plan", "finish"},
    "loop_detector": {*I, "trigger_interrupt", "finish"},
    "context_manager": {"context_info", "edit_context", *I, "finish"},
    "inquiry_responder": {*I, "context_info", "read_run_log", "search_run_log", *R, "finish"},
    "recovery": {"agent", "ask_human", "finish"},
}
STYLED = {"coder", "style_lead", "style_reviewer"}
PARENTS = {role for role, tools in EXPECTED_TOOLS.items() if "agent" in tools}
HANDLERS = {"loop_detector", "context_manager", "inquiry_responder"}
TIERS = ("detailed", "friendly", "whimsical")

#: A prompt stays short enough for a small model to keep all of it in view.
MAX_PROMPT_LINES = 40
MAX_PROMPT_CHARS = 4500
COPY_RUN_WORDS = 12


def _guild_json() -> dict[str, Any]:
    return json.loads((GUILD_DIR / "guild.json").read_text())


def _raw_prompts() -> dict[str, str]:
    """Each role's own prompt file, without the style guide."""
    return {name: (GUILD_DIR / role["systemPrompt"]).read_text() for name, role in _guild_json()["roles"].items()}


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    missing = [path for path in _guild_json()["tools"] if not (GUILD_DIR / path).is_file()]
    if missing:
        pytest.skip(f"the Guild references tool manifests that do not exist yet: {', '.join(missing)}")
    env = {"ORCHESTRATOR_MODEL": "seed-guild-check", "ORCHESTRATOR_MODEL_CONTEXT_WINDOW": "32768"}
    secrets = tmp_path_factory.mktemp("no-secrets")
    return load_settings(GUILD_DIR, DEPLOYMENT_FILE, env, secrets_dir=secrets)


# --- the loaded Guild (skips while manifests are missing) ---------------------------------------------


def test_the_seed_guild_has_sixteen_roles_and_the_orchestrator_is_the_entry(settings: Settings) -> None:
    guild = settings.guild
    assert guild.entry_role == "orchestrator"
    assert set(guild.roles) == set(EXPECTED_TOOLS)
    assert len(guild.roles) == 16
    assert len(guild.tools) == 26


@pytest.mark.parametrize("role", sorted(EXPECTED_TOOLS))
def test_each_role_has_exactly_its_tool_set(settings: Settings, role: str) -> None:
    tools = settings.guild.roles[role].tools
    assert set(tools) == EXPECTED_TOOLS[role]
    assert len(tools) == len(set(tools)), "a tool is listed twice"


def test_the_style_guide_is_appended_to_exactly_the_coder_and_the_style_roles(settings: Settings) -> None:
    style = (GUILD_DIR / "prompts" / "style.md").read_text()
    raw = _raw_prompts()
    for name, role in settings.guild.roles.items():
        if name in STYLED:
            assert role.system_prompt == raw[name].rstrip("\n") + "\n\n" + style
        else:
            assert role.system_prompt == raw[name]
            assert style.strip() not in role.system_prompt


def test_every_role_has_all_three_label_tiers(settings: Settings) -> None:
    for name, role in settings.guild.roles.items():
        for field in ("label", "description", "working_label"):
            tiers = getattr(role, field)
            assert tiers is not None, f"{name} has no {field}"
            for tier in TIERS:
                variants = tiers.get(tier)
                assert variants and all(v.strip() for v in variants), f"{name}.{field}.{tier} is empty"
        assert all("{participant}" in v for v in role.working_label["detailed"]), name


def test_the_deployment_points_its_handlers_at_the_seed_roles(settings: Settings) -> None:
    executor = settings.deployment.executor
    assert executor.context_handler_role == "context_manager"
    assert executor.inquiry_handler_role == "inquiry_responder"
    assert executor.interrupt_triggers is not None
    assert executor.interrupt_triggers.handler_role == "loop_detector"
    assert executor.interrupt_triggers.plan_owner_role == "planner"


def test_the_visualization_labels_the_pseudo_roles(settings: Settings) -> None:
    labels = (settings.guild.visualization or {})["pseudoRoleLabels"]
    for pseudo in ("human", "interrupt", "tools"):
        assert all(labels[pseudo][tier] for tier in TIERS), pseudo


# --- the raw files (run without the loader) -------------------------------------------------------------


def test_guild_json_lists_every_role_and_tool_of_the_spec() -> None:
    raw = _guild_json()
    assert raw["entryRole"] == "orchestrator"
    assert {name: set(role["tools"]) for name, role in raw["roles"].items()} == EXPECTED_TOOLS
    declared = {path.removeprefix("tools/").removesuffix(".json") for path in raw["tools"]}
    assert declared == set().union(*EXPECTED_TOOLS.values())
    assert all(path == f"tools/{Path(path).name}" for path in raw["tools"])
    assert {name for name, role in raw["roles"].items() if "styleGuide" in role} == STYLED
    assert {role.get("styleGuide") for role in raw["roles"].values()} - {None} == {"prompts/style.md"}


@pytest.mark.parametrize("role", sorted(EXPECTED_TOOLS))
def test_each_prompt_is_short_and_names_its_role(role: str) -> None:
    prompt = _raw_prompts()[role]
    assert prompt.strip()
    assert prompt.endswith("\n") and not prompt.endswith("\n\n")
    lines = prompt.splitlines()
    assert len(lines) <= MAX_PROMPT_LINES, f"{role}: {len(lines)} lines"
    assert len(prompt) <= MAX_PROMPT_CHARS, f"{role}: {len(prompt)} characters"
    assert lines[0].startswith(f"You are the {role.replace('_', ' ')}"), lines[0]


@pytest.mark.parametrize("role", sorted(EXPECTED_TOOLS))
def test_each_prompt_mentions_every_tool_it_holds(role: str) -> None:
    prompt = _raw_prompts()[role]
    for tool in EXPECTED_TOOLS[role]:
        assert f"`{tool}`" in prompt, f"{role} never mentions `{tool}`"


@pytest.mark.parametrize("role", sorted(set(EXPECTED_TOOLS) - HANDLERS))
def test_working_roles_know_the_platform_notices(role: str) -> None:
    prompt = _raw_prompts()[role]
    for notice in ("context pressure", "context compacted", "context window exceeded", "redirect"):
        assert f"[Platform notice — {notice}]" in prompt, f"{role} does not say how to react to {notice}"
    assert "`context_handoff`" in prompt


@pytest.mark.parametrize("role", sorted(PARENTS))
def test_parents_route_every_error_kind_they_may_receive(role: str) -> None:
    prompt = _raw_prompts()[role]
    for kind in ("context_handoff", "context_budget_exceeded", "interrupted", "loop_detected", "llm_unavailable"):
        assert f"`{kind}`" in prompt, f"{role} does not route {kind}"
    assert "`timeout`" in prompt


def test_the_entry_role_handles_effort_briefings_and_operator_messages() -> None:
    prompt = _raw_prompts()["orchestrator"]
    for marker in (
        "Quality level: <tier>",
        "Effort is <tier>",
        "[Platform briefing — this run continues run <id>]",
        "[Platform briefing — this task waited in the queue]",
        "[Operator notice — …]",
        "[Operator plan modification — …]",
        "`acceptance_lead`",
    ):
        assert marker in prompt, marker
    # only the entry role sees the directive; nobody else should wait for it
    assert all("Quality level" not in text for name, text in _raw_prompts().items() if name != "orchestrator")


def test_the_plan_owner_integrates_plan_modifications() -> None:
    assert "[Operator plan modification — …]" in _raw_prompts()["planner"]


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower())


def _runs(words: list[str], size: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


def test_no_prompt_copies_a_twelve_word_run_from_the_seeds() -> None:
    seeds = sorted(SEEDS.glob("*.txt")) if SEEDS.is_dir() else []
    if not seeds:
        pytest.skip(f"no seed texts at {SEEDS}")
    seed_runs: set[tuple[str, ...]] = set()
    for seed in seeds:
        seed_runs |= _runs(_words(seed.read_text(errors="replace")), COPY_RUN_WORDS)
    texts = {**_raw_prompts(), "style.md": (GUILD_DIR / "prompts" / "style.md").read_text()}
    for name, text in texts.items():
        copied = _runs(_words(text), COPY_RUN_WORDS) & seed_runs
        assert not copied, f"{name} copies from the seeds: {' '.join(sorted(copied)[0])}"


# --- the demo script follows the Guild ------------------------------------------------------------------


def test_the_demo_script_follows_the_seed_guild() -> None:
    script = json.loads(DEMO_SCRIPT.read_text())
    prompts = _raw_prompts()
    roles = _guild_json()["roles"]
    for index, turn in enumerate(script["turns"]):
        expect = turn["expect"]
        assert turn.get("reusable") is True, f"turn {index} is not reusable"
        phrase = expect["systemContains"]
        owners = [name for name, text in prompts.items() if phrase in text]
        assert len(owners) == 1, f"turn {index}: {phrase!r} is in {owners}"
        (owner,) = owners
        for key in ("lastInputContains", "inputContains"):
            marker = expect.get(key)
            assert marker is None or marker not in DEMO_TASK, f"turn {index} matches on the task's own text"
            assert marker is None or all(marker not in text for text in prompts.values()), f"turn {index}"
        for call in turn["toolCalls"]:
            assert call["name"] in roles[owner]["tools"], f"turn {index}: {owner} cannot call {call['name']}"
            if call["name"] == "agent":
                assert call["arguments"]["role"] in roles
    calls = [call for turn in script["turns"] for call in turn["toolCalls"]]
    called = {call["arguments"]["role"] for call in calls if call["name"] == "agent"}
    assert {"planner", "coder"} <= called
