"""``orchestrator run`` / ``demo`` / ``check`` as real subprocesses against the sim model."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import trio
from tests.engine.harness import call, finish, turn
from tests.helpers import REPO, serve_script, write_deployment, write_guild

ROLES = {"lead": ["agent", "finish"], "leaf": ["finish"]}


async def _orchestrator(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> trio.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    full_env.update(env or {})
    with trio.fail_after(60):
        return await trio.run_process(
            [sys.executable, "-m", "orchestrator", *args],
            env=full_env,
            cwd=cwd or REPO,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )


def _config(tmp_path: Path, api_base: str) -> list[str]:
    guild = write_guild(tmp_path / "guild", ROLES)
    deployment = write_deployment(tmp_path / "deployment.json", api_base)
    return ["--guild", str(guild), "--deployment", str(deployment)]


async def test_run_prints_the_card_and_exits_zero_on_success(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="leaf", task="x")),
            turn("leaf", finish("leaf ok")),
            turn("lead", finish("all done", artifacts=["out.txt"])),
        ]
    }
    async with sim_for(script) as sim:
        done = await _orchestrator(
            "run", "--workspace", str(tmp_path), *_config(tmp_path, sim.base_url), "--json", "go"
        )
    assert done.returncode == 0, done.stderr.decode()
    card = json.loads(done.stdout)
    assert card["status"] == "success" and card["summary"] == "all done" and card["artifacts"] == ["out.txt"]
    assert card["runId"].startswith("run-")
    assert (tmp_path / ".orchestration" / "runs" / card["runId"] / "log.jsonl").exists()


async def test_run_exits_one_when_the_run_errors(tmp_path: Path, sim_for) -> None:
    script = {"turns": [turn("lead", finish("nope", status="error"))]}
    async with sim_for(script) as sim:
        done = await _orchestrator("run", "--workspace", str(tmp_path), *_config(tmp_path, sim.base_url), "go")
    assert done.returncode == 1
    assert b"error" in done.stdout and b"nope" in done.stdout


async def test_run_narrates_each_model_turn_on_stderr(tmp_path: Path, sim_for) -> None:
    """Issue 25: a long first turn printed nothing; now each turn says it went out and what came back."""
    script = {
        "turns": [
            turn("lead", call("agent", role="leaf", task="x")),
            turn("leaf", finish("leaf ok")),
            turn("lead", finish("all done")),
        ]
    }
    async with sim_for(script) as sim:
        done = await _orchestrator("run", "--workspace", str(tmp_path), *_config(tmp_path, sim.base_url), "go")
    assert done.returncode == 0, done.stderr.decode()
    lines = done.stderr.decode().splitlines()
    assert "▶ lead-0-1 starts: go" in lines
    assert "    … lead-0-1 turn 1: waiting for the model" in lines
    assert "      … leaf-1-2 turn 1: waiting for the model" in lines
    assert any(line.startswith("    ✓ lead-0-1 turn 2: ") and " completion tokens in " in line for line in lines)
    assert "■ lead-0-1 success: all done" in lines
    assert b"run run-" in done.stdout and b"waiting for the model" not in done.stdout


async def test_a_template_that_cannot_render_tools_stops_run_and_check_before_any_run_folder(tmp_path: Path) -> None:
    """Issue 25: ``run`` exited 1 after creating a run folder, while ``check`` already knew; now both exit 2."""
    script = {"flavor": {"name": "llama-server", "supportsTools": False}, "turns": [turn("lead", finish("x"))]}
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with serve_script(script) as sim:
        config = _config(tmp_path, sim.base_url)
        ran = await _orchestrator("run", "--workspace", str(workspace), *config, "go")
        checked = await _orchestrator("check", "--workspace", str(workspace), *config)
    for done in (ran, checked):
        assert done.returncode == 2, done.stderr.decode()
        errors = done.stderr.decode()
        assert "invalid configuration:" in errors and "chat_template_caps.supports_tools" in errors
        assert errors.count("chat_template_caps.supports_tools") == 1  # not also as a WARNING note
        assert done.stdout == b""
    problem = [line for line in ran.stderr.decode().splitlines() if "supports_tools" in line]
    assert problem == [line for line in checked.stderr.decode().splitlines() if "supports_tools" in line]
    assert not (workspace / ".orchestration" / "runs").exists()


async def test_run_exits_two_on_invalid_configuration_naming_the_variable(tmp_path: Path) -> None:
    config = _config(tmp_path, "http://127.0.0.1:9/v1")
    done = await _orchestrator("run", *config, "go", env={"ORCHESTRATOR_MAX_AGENT_DEPTH": "0x1a"})
    assert done.returncode == 2
    assert b"ORCHESTRATOR_MAX_AGENT_DEPTH" in done.stderr


async def test_run_exits_two_on_a_bad_stall_variable(tmp_path: Path, sim_for) -> None:
    async with sim_for({"turns": []}) as sim:
        config = _config(tmp_path, sim.base_url)
        done = await _orchestrator("run", *config, "go", env={"ORCHESTRATOR_STALL_IDLE_SECONDS": "-1"})
    assert done.returncode == 2 and b"ORCHESTRATOR_STALL_IDLE_SECONDS" in done.stderr


async def test_check_prints_the_resolved_configuration_without_secrets(tmp_path: Path, sim_for) -> None:
    async with sim_for({"turns": []}) as sim:
        config = _config(tmp_path, sim.base_url)
        done = await _orchestrator("check", *config, env={"ORCHESTRATOR_API_KEY": "sekrit-value"})
    assert done.returncode == 0, done.stderr.decode()
    assert b"sekrit-value" not in done.stdout + done.stderr
    rendered = json.loads(done.stdout)
    assert "sekrit-value" not in json.dumps(rendered)


async def test_check_never_echoes_the_kagi_key_placed_in_a_wrong_variable(tmp_path: Path) -> None:
    kagi = "kagi-cli-key-0123456789"
    config = _config(tmp_path, "http://127.0.0.1:9/v1")
    cases = [  # found by the settings load; found later by another module (the stall bounds)
        ({"ORCHESTRATOR_MAX_AGENT_DEPTH": kagi}, ["check", *config, "--no-probe"], "executor.maxAgentDepth"),
        ({"ORCHESTRATOR_STALL_IDLE_SECONDS": kagi}, ["run", "--workspace", str(tmp_path), *config, "task"], "STALL"),
        # a path: named in a problem and in the note saying where the Guild came from
        ({"ORCHESTRATOR_GUILD_DIR": kagi}, ["check", *config[2:], "--no-probe"], "ORCHESTRATOR_GUILD_DIR"),
    ]
    for extra, args, named in cases:
        done = await _orchestrator(*args, env={"ORCHESTRATOR_KAGI_API_KEY": kagi, **extra})
        assert done.returncode == 2, done.stderr.decode()
        assert named.encode() in done.stderr and b"<redacted>" in done.stderr
        assert kagi.encode() not in done.stdout + done.stderr
    env = {"ORCHESTRATOR_TOKEN": kagi, "ORCHESTRATOR_MODEL": kagi}  # the token is a known secret too
    done = await _orchestrator("check", *config, "--no-probe", env=env)
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["model"]["name"] == "<redacted>"
    assert kagi.encode() not in done.stdout + done.stderr


async def test_demo_runs_out_of_the_box_on_the_built_in_sim(tmp_path: Path) -> None:
    done = await _orchestrator("demo", "--once", "--workspace", str(tmp_path / "ws"), "--json")
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["status"] == "success"
    assert (tmp_path / "ws" / "hello.txt").read_text().startswith("Hello from the Adaptive Orchestrator demo")
    assert b"coder-1-3" in done.stderr
    notes = done.stderr.decode()
    assert "ORCHESTRATOR_API_BASE overrides" not in notes and "model API key: not set" not in notes
    assert "model: the demo's built-in simulated model at http://127.0.0.1:" in notes


async def test_demo_narration_keeps_one_line_per_role_for_a_multi_line_task(tmp_path: Path) -> None:
    task = "Write a greeting into hello.txt\nand make sure it is there."
    done = await _orchestrator("demo", "--once", "--workspace", str(tmp_path / "ws"), task)
    assert done.returncode == 0, done.stderr.decode()
    lines = done.stderr.decode().splitlines()
    assert "▶ orchestrator-0-1 starts: Write a greeting into hello.txt …" in lines
    assert not any(line.startswith("and make sure it is there.") for line in lines)
    assert b"run run-" in done.stdout  # the card on stdout, the narration and notes on stderr


async def test_ask_human_is_answered_from_an_answers_file(tmp_path: Path, sim_for) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"Which  colour?": "blue"}))
    script = {
        "turns": [
            turn("lead", call("ask_human", question="which colour?")),
            turn("lead", finish("went with blue"), last="blue"),
        ]
    }
    async with sim_for(script) as sim:
        guild = write_guild(tmp_path / "guild", {"lead": ["ask_human", "finish"]})
        deployment = write_deployment(tmp_path / "deployment.json", sim.base_url)
        config = ["--guild", str(guild), "--deployment", str(deployment)]
        done = await _orchestrator(
            "run", "--workspace", str(tmp_path), *config, "--answers", str(answers), "--json", "go"
        )
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["summary"] == "went with blue"


async def test_a_malformed_answers_file_is_a_configuration_error(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text("[1, 2]")
    done = await _orchestrator("run", *_config(tmp_path, "http://127.0.0.1:9/v1"), "--answers", str(answers), "go")
    assert done.returncode == 2 and b"--answers" in done.stderr


async def test_check_with_no_model_server_says_so_and_exits_3_not_invalid(tmp_path: Path) -> None:
    with trio.socket.socket() as sock:  # a port nothing listens on
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    api_base = f"http://127.0.0.1:{port}/v1"
    # the README's step: the packaged Guild and deployment file (name and window left to the probe)
    done = await _orchestrator("check", env={"ORCHESTRATOR_API_BASE": api_base}, cwd=tmp_path)
    assert done.returncode == 3, done.stderr.decode()
    said = [line for line in done.stderr.decode().splitlines() if "retrying" not in line]  # probe progress
    first = next(line for line in said if not line.startswith(("orchestrator: Guild", "orchestrator: deployment")))
    assert first.startswith(f"orchestrator: no model server answers at {api_base}; start one (docs/models.md)")
    assert "ORCHESTRATOR_API_BASE" in first and "orchestrator demo" in first
    assert "invalid" not in done.stderr.decode()
    configured = await _orchestrator("check", *_config(tmp_path, api_base))  # name and window set: still 3
    assert configured.returncode == 3 and b"no model server answers" in configured.stderr
    assert json.loads(configured.stdout)["model"]["apiBase"] == api_base
    helped = await _orchestrator("check", "--help")
    assert b"3 valid" in helped.stdout
    (tmp_path / "empty").mkdir()
    ran = await _orchestrator("run", "go", env={"ORCHESTRATOR_API_BASE": api_base}, cwd=tmp_path / "empty")
    assert ran.returncode == 3 and b"no model server answers at" in ran.stderr  # run needs the probe too


def _with_servers(path: Path, api_base: str, servers: dict) -> Path:
    write_deployment(path, api_base)
    document = json.loads(path.read_text())
    document["mcpServers"] = servers
    path.write_text(json.dumps(document))
    return path


async def test_check_starts_each_mcp_server_and_names_a_misspelled_command_and_a_missing_tool(
    tmp_path: Path, sim_for
) -> None:
    fixture = str(REPO / "tests" / "mcpclient" / "fixture_server.py")
    servers = {
        "files": {"command": "npxx", "args": ["-y", "some-mcp-server"]},  # misspelled: no such command
        "fx": {"command": sys.executable, "args": [fixture]},
    }
    roles = {"lead": ["agent", "finish", "mcp:files/*", "mcp:fx/echoo"], "leaf": ["finish"]}
    guild = write_guild(tmp_path / "guild", roles)
    async with sim_for({"turns": []}) as sim:
        deployment = _with_servers(tmp_path / "deployment.json", sim.base_url, servers)
        config = ["--guild", str(guild), "--deployment", str(deployment)]
        done = await _orchestrator("check", *config)
        skipped = await _orchestrator("check", *config, "--no-probe")
        fixed = {**servers, "files": {"command": sys.executable, "args": [fixture]}}
        _with_servers(deployment, sim.base_url, fixed)
        wrong_tool = await _orchestrator("check", *config)
    assert done.returncode == 2, done.stderr.decode()
    said = done.stderr.decode()
    assert "invalid configuration" in said and "Traceback" not in said
    assert "MCP server 'files' could not be started" in said and "(used by role `lead`)" in said
    assert skipped.returncode == 0, skipped.stderr.decode()  # --no-probe starts nothing
    assert wrong_tool.returncode == 2
    said = wrong_tool.stderr.decode()
    assert "role `lead` lists `mcp:fx/echoo`" in said and "`fx` does not offer a tool `echoo`" in said
