"""The runs face's token lookup and failure messages (pure parts of runsface/client.py)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.runsface.client import ServiceClient, ServiceUnavailable, read_token


def test_the_environment_wins_then_the_workspace_file(tmp_path: Path) -> None:
    (tmp_path / ".orchestration").mkdir()
    assert read_token({}, tmp_path) is None
    token_file = tmp_path / ".orchestration" / "token"
    token_file.write_text("  file-token \n")
    token_file.chmod(0o600)
    assert read_token({}, tmp_path) == "file-token"
    assert read_token({"ORCHESTRATOR_TOKEN": "env-token"}, tmp_path) == "env-token"
    assert read_token({"ORCHESTRATOR_TOKEN": "  "}, tmp_path) == "file-token"
    assert read_token({}, None) is None


def test_a_token_file_the_service_would_refuse_is_reported_not_sent(tmp_path: Path) -> None:
    (tmp_path / ".orchestration").mkdir()
    token_file = tmp_path / ".orchestration" / "token"
    token_file.write_text("file-token\n")
    token_file.chmod(0o644)
    try:
        read_token({}, tmp_path)
    except ServiceUnavailable as exc:
        message = exc.message
    else:
        raise AssertionError("expected ServiceUnavailable")
    assert "readable by other users" in message and "chmod 600" in message


async def test_an_unreachable_service_is_named_with_its_address(tmp_path: Path) -> None:
    client = ServiceClient("http://127.0.0.1:9/", {}, tmp_path)
    try:
        await client.request("GET", "/api/runs")
    except ServiceUnavailable as exc:
        message = exc.message
    else:  # pragma: no cover - port 9 (discard) is never served here
        raise AssertionError("expected ServiceUnavailable")
    assert message.startswith("no orchestrator service is reachable at http://127.0.0.1:9 (")
    assert "orchestrator serve" in message
