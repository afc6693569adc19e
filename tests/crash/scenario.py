"""The crash harness's scenario: the sim script of a small delegating run with real tool processes, and
the workspace it runs in (see docs/crash-harness.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.engine.harness import call, finish, turn
from tests.helpers import write_deployment, write_guild

# --- the scenario --------------------------------------------------------------------------------

TASK = "assemble the crash-test widget"
ROLES: dict[str, list[str]] = {
    "lead": ["agent", "finish"],
    "helper": ["agent", "finish", "run_shell"],
    "leaf": ["finish", "run_shell"],
}
#: Model streaming takes real time: ~25 deltas of 10 characters, 5 ms apart, per turn.
STREAM: dict[str, Any] = {"chunkChars": 10, "chunkDelayMs": 5}
PARTS = ("alpha", "beta")


def _reply(role: str, last: str, *calls: dict[str, Any], thought: str) -> dict[str, Any]:
    """A reusable turn for ``role`` whose last input contains ``last``; streams reasoning and content."""
    content = f"The {role} acts on: {last}."
    reasoning = f"Thinking as the {role}: {thought} Keep every step idempotent so a replay is harmless."
    return turn(role, *calls, last=last, reusable=True, reasoning=reasoning, content=content, **STREAM)


def _shell(command: str) -> dict[str, Any]:
    return call("run_shell", command=command)


def crash_script() -> dict[str, Any]:
    """lead → helper → leaf(alpha), leaf(beta) → helper checks → lead finishes. Replies are a function
    of the request (role + last input), every turn reusable and the later stage of each role first, so
    a replayed request always gets the same answer."""
    turns = [
        _reply("lead", "both parts ready", finish(FINAL_SUMMARY, artifacts=list(ARTIFACTS)), thought="all done."),
        _reply("lead", TASK, call("agent", role="helper", task="prepare both parts"), thought="delegate."),
        _reply("helper", "wc -l", finish("both parts ready", artifacts=list(ARTIFACTS)), thought="verified."),
        _reply("helper", "part beta built", _shell("sleep 0.15 && cat alpha.txt beta.txt | wc -l"), thought="check."),
        _reply("helper", "part alpha built", call("agent", role="leaf", task="build part beta"), thought="next."),
        _reply("helper", "prepare both parts", call("agent", role="leaf", task="build part alpha"), thought="go."),
    ]
    for part in PARTS:
        turns += [
            _reply("leaf", f"cat {part}.txt", finish(f"part {part} built", artifacts=[f"{part}.txt"]), thought="ok."),
            _reply("leaf", f"{part}-step-two", _shell(f"sleep 0.15 && cat {part}.txt"), thought="read it back."),
            _reply(
                "leaf",
                f"build part {part}",
                # Truncate, then append: the pair is idempotent as a whole, as a replayed turn needs.
                _shell(f"sleep 0.15 && echo {part}-one > {part}.txt && echo {part}-step-one"),
                _shell(f"sleep 0.1 && echo {part}-two >> {part}.txt && echo {part}-step-two"),
                thought="write the part.",
            ),
        ]
    return {"contextWindow": 32768, "turns": turns}


FINAL_SUMMARY = "widget assembled from parts alpha and beta"
ARTIFACTS = ("alpha.txt", "beta.txt")


def write_config(directory: Path, api_base: str) -> list[str]:
    """The Guild and deployment for the scenario; returns the ``--guild/--deployment`` arguments."""
    guild = write_guild(directory / "guild", ROLES)
    deployment = write_deployment(directory / "deployment.json", api_base)
    return ["--guild", str(guild), "--deployment", str(deployment)]
