"""A real ``kill -9`` in the middle of checkpoint writes (``engine/checkpoint.py``'s fault-injection
pause): the run folder always loads the last complete write, or the one being written."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from tests.engine.checkpoint_states import Builtins, builtins

from orchestrator.engine.checkpoint import load_checkpoint

_WRITER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import msgspec
    from orchestrator.engine import checkpoint as cpmod
    from orchestrator.engine.state import RoleFrame, RunState
    from orchestrator.conversation import Message

    cpmod.MIN_JOURNAL_BYTES, cpmod.COMPACT_FACTOR = 1500, 1
    cp = cpmod.Checkpointer(Path(sys.argv[1]), durable=False)
    frame = RoleFrame(instance_id="lead-0-1", role="lead", depth=0, task="t",
                      history=[Message(role="system", content="s"), Message(role="user", content="t")])
    state = RunState(run_id="run-20250101-000000", started_at="now", registry_counter=1, frames=[frame])
    for turn in range(10_000):
        frame.history.append(Message(role="assistant", content=f"turn {turn} " + "z" * 120))
        frame.tool_calls = turn
        if turn % 7 == 6:
            frame.history = frame.history[:2] + frame.history[-3:]
            frame.history_epoch += 1
        print(json.dumps({"announce": cp.seq + 1, "state": msgspec.to_builtins(state)}), flush=True)
        cp.write(state)
        print(json.dumps({"done": cp.seq}), flush=True)
    """
)


@pytest.mark.parametrize("kill_after", [2, 7, 9, 17, 23, 32])  # 7, 17, 32: snapshot writes
def test_kill_9_mid_write_recovers_the_last_complete_write(tmp_path: Path, kill_after: int) -> None:
    env = {**os.environ, "ORCHESTRATOR_FAULT_CHECKPOINT_PAUSE_MS": "40"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(tmp_path)], stdout=subprocess.PIPE, env=env, cwd=tmp_path
    )
    assert proc.stdout is not None
    announced: dict[int, Builtins] = {}
    done = 0
    try:
        for raw in proc.stdout:
            record = json.loads(raw)
            if "announce" in record:
                announced[record["announce"]] = record["state"]
                if record["announce"] == kill_after:
                    time.sleep(random.Random(kill_after).uniform(0.005, 0.035))  # inside the 40 ms pause
                    break
            else:
                done = record["done"]
    finally:
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate(timeout=30)
    for raw in rest.splitlines():
        record = json.loads(raw)
        done = record.get("done", done)
    state, seq = load_checkpoint(tmp_path)
    assert seq in (done, done + 1)
    assert builtins(state) == announced[seq]
