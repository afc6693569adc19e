"""The wheel smoke test (issue 16): what a user who installs the package instead of cloning it gets.

Built, installed and run outside the repository by the ``installed`` fixture (``conftest.py``):
``--version``, ``check`` in an empty directory (every default from the package), ``init``,
``demo --once``, ``serve`` answering ``/api/config`` with the bearer token, ``mcp`` listing the packaged
workflows through the official MCP client, and the artifacts' contents (no tests, fixtures, benchmark
workspaces or symlinks; every packaged default present).
"""

from __future__ import annotations

import json
import signal
import subprocess
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

import httpx
import pytest
import trio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from tests.helpers import serve_script

import orchestrator

from .conftest import REPO, Installed

pytestmark = pytest.mark.timeout(900)  # the first test pays for the build and install (cold cache: downloads)

VERSION = orchestrator.__version__
#: Folders of the repository that must never reach the wheel.
REPO_ONLY = {"tests", "fuzz", "bench", "benchmarks", "fixtures", "demo-workspace", ".orchestration", "dist", "build"}
TOKEN = "smoke-token-0123456789abcdef"


def _site_packages(installed: Installed) -> Path:
    (site,) = (installed.venv / "lib").glob("python3*/site-packages")
    return site


def _empty_dir(installed: Installed, name: str) -> Path:
    path = installed.root / name
    path.mkdir()
    return path


# ----------------------------------------------------------------------------------------- artifacts


def test_the_wheel_holds_the_package_and_its_defaults_and_nothing_of_the_repository(installed: Installed) -> None:
    assert installed.wheel.name == f"orchestrator-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(installed.wheel) as wheel:
        infos = wheel.infolist()
        names = [info.filename for info in infos]
        metadata = wheel.read(f"orchestrator-{VERSION}.dist-info/METADATA").decode()
    tops = {PurePosixPath(name).parts[0] for name in names}
    assert tops == {"orchestrator", f"orchestrator-{VERSION}.dist-info"}, tops
    for name in names:
        parts = PurePosixPath(name).parts
        assert not REPO_ONLY & set(parts[:-1]), f"{name}: a repository-only folder in the wheel"
        assert not parts[-1].startswith("test_") and parts[-1] != "conftest.py", f"{name}: a test in the wheel"
    # A symlink stored as such would dangle once installed: every entry must be a regular file.
    assert all((info.external_attr >> 16) & 0o170000 in (0, 0o100000) for info in infos)
    for required in (
        "orchestrator/py.typed",
        "orchestrator/defaults/guild/guild.json",
        "orchestrator/defaults/deployment/deployment.json",
        "orchestrator/defaults/workflows/meta/workflow.yaml",
        "orchestrator/web/static/index.html",
        "orchestrator/sim/scripts/demo.json",
    ):
        assert required in names, f"{required} missing from the wheel"
    # Every file of the top-level folders is packaged, byte for byte.
    for folder in ("guild", "deployment", "workflows"):
        for source in (REPO / folder).rglob("*"):
            if source.is_file():
                packaged = f"orchestrator/defaults/{source.relative_to(REPO).as_posix()}"
                assert packaged in names, f"{packaged} missing from the wheel"
    assert f"Version: {VERSION}" in metadata and "License-Expression: MIT" in metadata
    assert "Project-URL: Changelog" in metadata and "Classifier: Typing :: Typed" in metadata


def test_the_sdist_carries_real_copies_of_the_defaults_and_the_license(installed: Installed) -> None:
    with tarfile.open(installed.sdist) as sdist:
        members = {member.name: member for member in sdist.getmembers()}
    prefix = f"orchestrator-{VERSION}/"
    for name in ("LICENSE", "README.md", "CHANGELOG.md", "src/orchestrator/defaults/guild/guild.json"):
        assert prefix + name in members, f"{name} missing from the sdist"
    assert not any(member.issym() or member.islnk() for member in members.values())
    assert not any(name.startswith(prefix + "tests/") for name in members)


# ----------------------------------------------------------------------------------------- commands


def test_version_prints_the_single_sourced_version(installed: Installed) -> None:
    done = installed.run("--version", cwd=_empty_dir(installed, "version"))
    assert (done.returncode, done.stdout.strip()) == (0, f"orchestrator {VERSION}"), done.stderr


def test_the_fresh_venv_does_not_see_the_development_environment(installed: Installed) -> None:
    probe = (
        "import importlib.util, orchestrator; "
        "print(orchestrator.__file__); print(importlib.util.find_spec('pytest') is None)"
    )
    done = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c", probe],
        cwd=_empty_dir(installed, "isolation"),
        env=installed.env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    location, no_pytest = done.stdout.split()
    assert Path(location).is_relative_to(_site_packages(installed)) and no_pytest == "True"


def test_check_in_an_empty_directory_says_every_default_came_from_the_package(installed: Installed) -> None:
    done = installed.run("check", "--no-probe", cwd=_empty_dir(installed, "check-empty"))
    assert done.returncode == 0, done.stderr
    rendered = json.loads(done.stdout)
    site = _site_packages(installed)
    assert (rendered["guildSource"], rendered["deploymentSource"]) == ("packaged default", "packaged default")
    assert Path(rendered["guildDir"]) == site / "orchestrator" / "defaults" / "guild"
    assert Path(rendered["deploymentFile"]) == site / "orchestrator" / "defaults" / "deployment" / "deployment.json"
    assert f"Guild: {rendered['guildDir']} (from packaged default)" in rendered["notes"]
    assert rendered["entryRole"] == "orchestrator"
    assert "(from packaged default)" in done.stderr


def test_check_without_a_model_still_says_where_the_defaults_came_from(installed: Installed) -> None:
    # No model server: the packaged deployment names neither model nor context window, so check fails — 3,
    # not reachable, rather than 2, invalid — and its output still names both files and their source.
    env = {"ORCHESTRATOR_API_BASE": "http://127.0.0.1:9/v1"}
    done = installed.run("check", cwd=_empty_dir(installed, "check-no-model"), env=env)
    assert done.returncode == 3, done.stdout
    assert "orchestrator: no model server answers at http://127.0.0.1:9/v1; start one" in done.stderr
    site = _site_packages(installed) / "orchestrator" / "defaults"
    assert f"orchestrator: Guild: {site / 'guild'} (from packaged default)" in done.stderr
    assert f"deployment file: {site / 'deployment' / 'deployment.json'} (from packaged default)" in done.stderr
    assert "model.name is not configured" in done.stderr


def test_init_copies_the_defaults_and_check_then_reads_the_workspace(installed: Installed) -> None:
    workspace = installed.root / "init-ws"
    done = installed.run("init", str(workspace), cwd=installed.root)
    assert done.returncode == 0, done.stderr
    assert (workspace / "guild" / "guild.json").is_file() and (workspace / "deployment" / "deployment.json").is_file()
    again = installed.run("init", str(workspace), cwd=installed.root)
    assert again.returncode == 2 and "already exist" in again.stderr and str(workspace / "guild") in again.stderr
    checked = installed.run("check", "--no-probe", cwd=workspace)
    assert checked.returncode == 0, checked.stderr
    rendered = json.loads(checked.stdout)
    assert (rendered["guildSource"], rendered["deploymentSource"]) == ("workspace", "workspace")
    assert Path(rendered["guildDir"]) == workspace / "guild"


def test_demo_once_succeeds_from_a_temporary_directory(installed: Installed) -> None:
    directory = _empty_dir(installed, "demo")
    done = installed.run("demo", "--once", "--json", cwd=directory, timeout=180)
    assert done.returncode == 0, done.stderr[-4000:]
    card = json.loads(done.stdout)
    assert card["status"] == "success"
    assert "Guild: " in done.stderr and "(from packaged default)" in done.stderr
    assert (directory / "demo-workspace" / "hello.txt").is_file()


async def test_serve_answers_api_config_with_the_bearer_token(installed: Installed) -> None:
    workspace = _empty_dir(installed, "serve")
    port_file = installed.root / "serve.port"
    async with serve_script({"turns": []}) as sim:
        env = installed.env({"ORCHESTRATOR_API_BASE": sim.base_url, "ORCHESTRATOR_TOKEN": TOKEN})
        stderr_path = installed.root / "serve.stderr"
        with stderr_path.open("wb") as stderr:
            process = await trio.lowlevel.open_process(
                [str(installed.orchestrator), "serve", "--port", "0", "--port-file", str(port_file)],
                cwd=workspace,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=stderr,
                stderr=stderr,
            )
            try:
                port = await _port(port_file, process, stderr_path)
                headers = {"Authorization": f"Bearer {TOKEN}"}
                async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=20) as http:
                    config = await http.get("/api/config", headers=headers)
                    assert config.status_code == 200, (config.status_code, config.text, stderr_path.read_text())
                    body = config.json()
                    # The packaged Guild, and the model the sim reported (the packaged deployment names none).
                    packaged = json.loads((REPO / "guild" / "guild.json").read_text())
                    assert body["entryRole"] == packaged["entryRole"] == "orchestrator"
                    assert set(body["roles"]) == set(packaged["roles"])
                    assert body["model"]["name"] == "sim" and body["build"] is None
                    health = await http.get("/healthz")
                    assert (health.status_code, health.json()) == (200, {"ok": True})
                process.send_signal(signal.SIGTERM)
                with trio.fail_after(30):
                    assert await process.wait() == 0, stderr_path.read_text()
            finally:
                if process.returncode is None:
                    process.kill()
                    await process.wait()
    assert "(from packaged default)" in stderr_path.read_text()


async def _port(port_file: Path, process: trio.Process, stderr_path: Path) -> int:
    """The bound port, once ``serve`` has written it (bounded; fails early if the process exits)."""
    with trio.move_on_after(30):
        while process.returncode is None:
            if port_file.exists():
                return int(port_file.read_text())
            await trio.sleep(0.05)
    raise AssertionError(f"serve did not write its port file; its output:\n{stderr_path.read_text()[-4000:]}")


async def test_mcp_lists_the_packaged_workflows_through_the_official_client(installed: Installed) -> None:
    directory = _empty_dir(installed, "mcp")
    workspace = directory / "ws"
    workspace.mkdir()
    env = installed.env({"WORKFLOW_SERVER_KEY_DIR": str(directory / "keys")})
    params = StdioServerParameters(
        command=str(installed.orchestrator), args=["mcp", "--workspace", str(workspace)], env=env, cwd=str(directory)
    )
    with (directory / "mcp.stderr").open("w") as errlog, trio.fail_after(60):
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("list_workflows", {})
    text = "".join(getattr(item, "text", "") for item in result.content)
    assert not result.is_error, text
    for workflow in ("code-review", "bug-fix"):
        assert workflow in text, f"{workflow} not listed: {text[:2000]}"
