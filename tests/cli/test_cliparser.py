"""The ``orchestrator`` command's arguments (``cliparser.build_parser``): each command's defaults, the
``demo`` command taking both the run's and the server's flags, and usage errors exiting 2."""

from __future__ import annotations

import pytest

from orchestrator import __version__
from orchestrator.cliparser import build_parser


def test_each_command_has_its_defaults() -> None:
    parser = build_parser()
    serve = parser.parse_args(["serve"])
    assert (serve.workspace, serve.host, serve.port, serve.no_token) == (".", "127.0.0.1", 8765, False)
    run = parser.parse_args(["run", "--effort", "quick", "--continue", "run-1", "do it"])
    assert (run.task, run.effort, run.continues_from, run.workspace, run.json) == (
        "do it",
        "quick",
        "run-1",
        ".",
        False,
    )
    assert parser.parse_args(["check", "--no-probe"]).no_probe is True
    assert parser.parse_args(["init", "--workflows"]).directory == "."
    assert parser.parse_args(["token"]).workspace == "."


def test_demo_takes_the_run_flags_and_the_server_flags_once() -> None:
    demo = build_parser().parse_args(["demo", "--once", "--port", "0", "--effort", "thorough"])
    assert (demo.workspace, demo.once, demo.port, demo.effort) == ("demo-workspace", True, 0, "thorough")
    assert demo.task.startswith("Write a greeting")


def test_usage_errors_and_version_exit_through_argparse(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in ([], ["run"], ["run", "--effort", "enormous", "x"], ["serve", "--port", "many"]):
        with pytest.raises(SystemExit) as exited:
            build_parser().parse_args(argv)
        assert exited.value.code == 2
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["--version"])
    assert exited.value.code == 0 and capsys.readouterr().out.strip() == f"orchestrator {__version__}"
