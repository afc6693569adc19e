"""The Dockerfile and docker-compose.yml, checked without building (no base images can be pulled here).

What can be known statically is checked against the real tree and the real CLI: every path the build
copies exists and survives ``.dockerignore``; the runtime stage takes only the wheel from the build
stage; every ``orchestrator`` command parses with the real argument parser; user, port, bind address
and health check agree; compose publishes on loopback only, passes the token and mounts a model volume.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import tomllib
from dataclasses import dataclass

import pytest
import yaml

from orchestrator.cliparser import build_parser

from .conftest import REPO

PORT = "8765"


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str
    stage: int


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined and comments dropped; ``stage`` counts ``FROM``s from 0."""
    instructions: list[Instruction] = []
    stage = -1
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, args = (pending + line).partition(" ")
        pending = ""
        if keyword.upper() == "FROM":
            stage += 1
        instructions.append(Instruction(keyword.upper(), args.strip(), stage))
    assert not pending, "the Dockerfile ends inside a continued line"
    return instructions


def exec_form(args: str) -> list[str]:
    value = json.loads(args)
    assert isinstance(value, list) and all(isinstance(item, str) for item in value), args
    return value


def dockerignored(path: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(path, pattern) or path.startswith(pattern.rstrip("/") + "/") for pattern in patterns)


@pytest.fixture(scope="module")
def dockerfile() -> list[Instruction]:
    return parse_dockerfile((REPO / "Dockerfile").read_text())


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def _parses(argv: list[str]) -> None:
    """``orchestrator ARGS`` as the real CLI parses it (argparse exits on an unknown command or flag)."""
    assert argv[0] == "orchestrator", argv
    try:
        build_parser().parse_args(argv[1:])
    except SystemExit as exc:  # pragma: no cover - the failure message
        raise AssertionError(f"`{shlex.join(argv)}` is not a valid orchestrator command") from exc


def test_the_parser_itself_refuses_what_is_not_a_command() -> None:
    with pytest.raises(AssertionError, match="not a valid orchestrator command"):
        _parses(["orchestrator", "serve", "--no-such-flag"])
    with pytest.raises(AssertionError, match="not a valid orchestrator command"):
        _parses(["orchestrator", "launch"])


def test_every_path_the_build_copies_exists_and_is_in_the_build_context(dockerfile: list[Instruction]) -> None:
    ignore = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    copied = []
    for instruction in dockerfile:
        if instruction.keyword not in ("COPY", "ADD") or instruction.args.startswith("--from="):
            continue
        assert instruction.keyword == "COPY", "ADD fetches and unpacks; the Dockerfile copies only"
        *sources, _destination = shlex.split(instruction.args)
        for source in sources:
            assert (REPO / source).exists(), f"COPY {source}: no such path in the repository"
            assert not dockerignored(source, ignore), f"COPY {source}: excluded by .dockerignore"
            copied.append(source)
    # The symlinked package defaults resolve inside the build stage only if their targets are copied too.
    for link in (REPO / "src" / "orchestrator" / "defaults").iterdir():
        if link.is_symlink():
            target = (link.parent / link.readlink()).resolve().relative_to(REPO)
            assert str(target) in copied, f"{link.name} points at {target}, which the build does not copy"


def test_the_runtime_stage_installs_only_the_wheel_and_runs_unprivileged(dockerfile: list[Instruction]) -> None:
    stages = max(instruction.stage for instruction in dockerfile) + 1
    assert stages >= 2, "a multi-stage build: the wheel is built in one stage"
    runtime = [instruction for instruction in dockerfile if instruction.stage == stages - 1]
    build = [instruction for instruction in dockerfile if instruction.stage < stages - 1]
    assert not any(i.keyword in ("COPY", "ADD") and not i.args.startswith("--from=") for i in runtime), (
        "the runtime stage must not copy the source tree"
    )
    (copy_from,) = [i for i in runtime if i.keyword == "COPY"]
    stage_name = re.match(r"--from=(\S+)\s+(\S+)", copy_from.args)
    assert stage_name is not None
    name, source = stage_name.groups()
    assert any(i.keyword == "FROM" and i.args.endswith(f" AS {name}") for i in build)
    assert any(i.keyword == "RUN" and "wheel" in i.args and f"--wheel-dir {source}" in i.args for i in build)
    install = " ".join(i.args for i in runtime if i.keyword == "RUN")
    assert re.search(r"pip install [^&]*\.whl", install), "the runtime stage installs the built wheel"
    # The entrypoint's `orchestrator` is the wheel's console script, in the venv the wheel went into.
    venv = re.search(r"python -m venv (\S+) && (\S+)/bin/pip install", install)
    assert venv is not None and venv.group(1) == venv.group(2)
    (path,) = [i.args for i in runtime if i.keyword == "ENV" and i.args.startswith("PATH=")]
    assert path.startswith(f"PATH={venv.group(1)}/bin:")
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert "orchestrator" in scripts
    (user,) = [i.args for i in runtime if i.keyword == "USER"]
    assert user not in ("root", "0") and f"useradd --create-home --uid 10001 {user}" in install


def test_the_image_installs_the_otel_extra_by_default(dockerfile: list[Instruction]) -> None:
    """The service in the image exports traces when OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/observability.md)."""
    (extras,) = [i.args for i in dockerfile if i.keyword == "ARG" and i.args.startswith("EXTRAS=")]
    assert extras == 'EXTRAS="[otel]"'
    assert "otel" in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def test_the_entrypoint_health_check_and_port_agree(dockerfile: list[Instruction]) -> None:
    by_keyword = {i.keyword: i.args for i in dockerfile if i.stage == max(j.stage for j in dockerfile)}
    assert by_keyword["EXPOSE"] == PORT
    entrypoint = exec_form(by_keyword["ENTRYPOINT"])
    _parses(entrypoint)
    args = build_parser().parse_args(entrypoint[1:])
    assert (args.command, args.host, str(args.port), args.workspace) == ("serve", "0.0.0.0", PORT, "/workspace")
    assert "CMD" not in by_keyword  # arguments given to `docker run` append to the entrypoint
    health = by_keyword["HEALTHCHECK"]
    assert health.startswith("--interval=")
    command = exec_form(health.split(" CMD ", 1)[1])
    assert command[0] == "python" and f"http://127.0.0.1:{PORT}/healthz" in command[-1]
    # The route really is served without a token (see tests/service/test_http_lifecycle.py for its answers).
    service = REPO / "src" / "orchestrator" / "service"
    assert '@pages.get("/healthz")' in (service / "routes" / "pages.py").read_text()
    assert 'path in ("/favicon.ico", "/healthz")' in (service / "perimeter_rules.py").read_text()


def test_compose_publishes_on_loopback_passes_the_token_and_mounts_the_model(compose: dict) -> None:
    services = compose["services"]
    assert set(services) == {"orchestrator", "llama"}
    for name, service in services.items():
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), f"{name} publishes {port} beyond the host's loopback"
    service = services["orchestrator"]
    assert service["build"] == "." and (REPO / "Dockerfile").is_file()
    assert service["ports"] == [f"127.0.0.1:{PORT}:{PORT}"]
    environment = service["environment"]
    assert environment["ORCHESTRATOR_TOKEN"].startswith("${ORCHESTRATOR_TOKEN:?"), "the token must be required"
    assert environment["ORCHESTRATOR_API_BASE"] == "http://llama:8080/v1"
    assert any(volume.endswith(":/workspace") for volume in service["volumes"])
    if "command" in service:
        _parses(["orchestrator", *service["command"]])
    llama = services["llama"]
    command = llama["command"]
    assert (
        command[command.index("--port") + 1] == "8080"
        and command[command.index("--alias") + 1] == (environment["ORCHESTRATOR_MODEL"])
    )
    assert command[command.index("--model") + 1].startswith("/models/")
    assert any(volume.split(":")[-2] == "/models" for volume in llama["volumes"]), "the model volume"


def test_the_readme_documents_the_container_honestly() -> None:
    readme = (REPO / "README.md").read_text()
    assert "docker run -p 127.0.0.1:8765:8765" in readme and "ORCHESTRATOR_TOKEN" in readme
    assert "not been built in CI" in readme


def test_the_foundry_compose_has_one_single_thread_worker_per_model_server() -> None:
    compose = yaml.safe_load((REPO / "docker-compose.foundry.yml").read_text())
    services = compose["services"]
    assert set(services) == {"model-a", "model-b", "scheduler", "worker-a", "worker-b"}
    for name, service in services.items():
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), f"{name} publishes {port} beyond the host's loopback"
    assert services["scheduler"]["entrypoint"][:2] == ["dask", "scheduler"]
    assert services["scheduler"]["environment"]["DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES"] == "1"
    bases = set()
    for name in ("worker-a", "worker-b"):
        worker = services[name]
        entry = worker["entrypoint"]
        assert entry[:3] == ["dask", "worker", "tcp://scheduler:8786"]
        assert entry[entry.index("--nthreads") + 1] == "1"
        assert worker["build"]["args"]["EXTRAS"] == "[cluster]"
        bases.add(worker["environment"]["ORCHESTRATOR_API_BASE"])
    assert bases == {"http://model-a:8080/v1", "http://model-b:8080/v1"}
    assert "[cluster]" in (REPO / "Dockerfile").read_text()
