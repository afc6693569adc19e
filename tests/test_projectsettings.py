"""``projectsettings.py``: the project defaults file and the effort / logging-level resolution chains."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.projectsettings import (
    ProjectSettings,
    read_project_settings,
    resolve_effort,
    resolve_log_level,
    write_project_settings,
)


@pytest.mark.parametrize(
    ("requested", "project", "expected"),
    [("thorough", "quick", "thorough"), (None, "quick", "quick"), (None, None, "standard")],
)
def test_effort_is_the_run_s_then_the_project_s_then_standard(
    requested: str | None, project: str | None, expected: str
) -> None:
    assert resolve_effort(requested, ProjectSettings(effort=project)) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("requested", "project", "deployment", "expected"),
    [
        ("standard", "full", "full", "standard"),
        (None, "standard", "full", "standard"),
        (None, None, "standard", "standard"),
        (None, None, None, "full"),
    ],
)
def test_log_level_is_the_run_s_then_the_project_s_then_the_deployment_s_then_full(
    requested: str | None, project: str | None, deployment: str | None, expected: str
) -> None:
    project_settings = ProjectSettings(log_level=project)  # type: ignore[arg-type]
    assert resolve_log_level(requested, project_settings, deployment) == expected


def test_settings_round_trip_in_camel_case_and_omit_what_is_unset(tmp_path: Path) -> None:
    write_project_settings(tmp_path, ProjectSettings(log_level="standard"))
    path = tmp_path / ".orchestration" / "settings.json"
    assert path.read_text() == '{"logLevel":"standard"}'
    assert read_project_settings(tmp_path) == ProjectSettings(log_level="standard")


@pytest.mark.parametrize("content", [None, b"", b"{not json", b'{"effort": "extreme"}', b"[]"])
def test_a_missing_or_malformed_file_reads_as_no_defaults(tmp_path: Path, content: bytes | None) -> None:
    if content is not None:
        (tmp_path / ".orchestration").mkdir()
        (tmp_path / ".orchestration" / "settings.json").write_bytes(content)
    assert read_project_settings(tmp_path) == ProjectSettings()
