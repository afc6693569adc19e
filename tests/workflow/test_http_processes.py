"""Several ``orchestrator mcp --transport http`` processes on one workspace (the load-balancer deployment):
a session started through one continues through the other, and a write that raced another one is refused
with ``SESSION_CONFLICT`` — never lost, never torn.

Two real server processes share the workspace, the key directory and ``TMPDIR``; each has its own official
Streamable HTTP client. The deterministic conflict uses a third process that holds a session it read while a
server writes it (synchronised on pipes, no sleeps).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from tests.workflow.conftest import REPO, McpProcess

from orchestrator.workflow.session.keys import verify_seal


class Pair:
    def __init__(self, root: Path) -> None:
        self.workspace = root / "shared-ws"
        self.key_dir = root / "shared-keys"
        self.tmp = root / "shared-tmp"
        for folder in (self.workspace, self.tmp):
            folder.mkdir(parents=True, exist_ok=True)
        env = {
            "WORKFLOW_WORKSPACE": str(self.workspace),
            "WORKFLOW_SERVER_KEY_DIR": str(self.key_dir),
            "TMPDIR": str(self.tmp),
        }
        self.a = McpProcess(root / "a", transport="http", env=env)
        self.b = McpProcess(root / "b", transport="http", env=env)

    def start(self) -> Pair:
        self.a.start()  # the first creates the key; the second reads it
        self.b.start()
        return self

    def stop(self) -> None:
        self.a.stop()
        self.b.stop()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    servers = Pair(tmp_path_factory.mktemp("pair"))
    try:
        yield servers.start()
    finally:
        servers.stop()


def sealed_state(pair: Pair, folder: Path) -> dict[str, object]:
    data = (folder / "session.json").read_bytes()
    assert verify_seal((pair.key_dir / "secret").read_bytes(), data, (folder / ".session-token").read_bytes())
    return json.loads(data)


def test_two_processes_serve_distinct_pids(pair: Pair) -> None:
    pids = {
        record.get("pid")
        for server in (pair.a, pair.b)
        for record in server.log_records()
        if record.get("msg") == "server_started"
    }
    assert len(pids) == 2


def test_a_session_continues_through_the_other_process(pair: Pair) -> None:
    started = pair.a.ok("start_session", workflow_id="bug-fix").parsed
    index, folder = started["session_index"], Path(started["planning_folder_path"])
    pair.b.ok("get_workflow", session_index=index)
    walk = ["reproduce", "diagnose", "fix", "verify"]
    for step, activity in enumerate(walk):
        server = (pair.a, pair.b)[step % 2]  # interleaved: a, b, a, b
        server.ok("next_activity", session_index=index, activity_id=activity, step_manifest=[])
        other = (pair.b, pair.a)[step % 2]
        assert other.ok("get_workflow_status", session_index=index).parsed["current_activity"] == activity
    state = sealed_state(pair, folder)
    assert state["currentActivity"] == "verify" and state["completedActivities"] == walk[:-1]
    assert state["seq"] == 1 + len(walk)  # get_workflow + each move; nothing lost


def test_a_transient_started_on_one_process_is_promoted_on_the_other(pair: Pair) -> None:
    meta = pair.a.ok(
        "start_session",
        user_request="fix the login",
        planning_folder=str(pair.workspace / ".engineering" / "artifacts" / "planning" / "login-fix"),
    ).parsed
    assert meta["repo_unbound"] is True
    child = pair.b.ok("dispatch_child", session_index=meta["session_index"], workflow_id="bug-fix").parsed
    assert Path(child["planning_folder_path"]).name == "login-fix"  # the slug given to the other process
    assert (
        pair.a.ok("get_workflow_status", session_index=meta["session_index"]).parsed["children"][0]["session_index"]
        == child["session_index"]
    )
    assert pair.a.ok("get_workflow_status", session_index=child["session_index"]).parsed["status"] == "active"


def test_concurrent_writes_from_two_processes_lose_nothing(pair: Pair) -> None:
    """Both processes record usage on one session as fast as they can. Each call either lands or is refused
    as SESSION_CONFLICT; the file always verifies and holds exactly the calls that landed."""
    started = pair.a.ok("start_session", workflow_id="bug-fix").parsed
    index, folder = started["session_index"], Path(started["planning_folder_path"])

    def hammer(server: McpProcess, tag: str, n: int) -> list[str]:
        outcomes = []
        for i in range(n):
            reply = server.call(
                "record_usage", session_index=index, activity=f"{tag}{i}", usage={"input_tokens": 1}, basis="delta"
            )
            outcomes.append("ok" if not reply.is_error else reply.text.split(":", 1)[0])
        return outcomes

    landed = conflicts = 0
    for _ in range(5):  # a few rounds until the race has been seen at least once
        with ThreadPoolExecutor(2) as pool:
            futures = [pool.submit(hammer, pair.a, "a", 25), pool.submit(hammer, pair.b, "b", 25)]
            results = [outcome for future in futures for outcome in future.result()]
        assert set(results) <= {"ok", "SESSION_CONFLICT"}, results
        landed += results.count("ok")
        conflicts += results.count("SESSION_CONFLICT")
        state = sealed_state(pair, folder)
        recorded = [e for e in state["history"] if e["type"] == "activity_usage"]  # type: ignore[union-attr]
        assert len(recorded) == landed and state["seq"] == landed
        if conflicts:
            break
    assert conflicts > 0, "the two processes never raced; the conflict path was not exercised"
    assert landed > 0


HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from orchestrator.workflow.session.keys import LazyKey
    from orchestrator.workflow.session.sessionfile import new_history
    from orchestrator.workflow.session.store import SessionStore
    from orchestrator.workflow.serverconfig import load_workflow_settings
    import msgspec
    settings = load_workflow_settings({"WORKFLOW_WORKSPACE": sys.argv[1], "WORKFLOW_SERVER_KEY_DIR": sys.argv[2],
                                       "TMPDIR": sys.argv[3]})
    store = SessionStore(settings, LazyKey(settings.key_dir))
    handle = store.locate(sys.argv[4])
    print("read", flush=True)
    sys.stdin.readline()  # the test lets a server write the session now
    event = new_history("activity_usage", now=0, activity="holder", data={"usage": {}, "basis": "delta"})
    state = msgspec.structs.replace(handle.state, history=[*handle.state.history, event])
    try:
        store.save(handle, state)
        print("saved", flush=True)
    except Exception as exc:
        print(str(exc), flush=True)
    """
)


def test_a_stale_write_from_another_process_is_a_clear_conflict(pair: Pair) -> None:
    started = pair.a.ok("start_session", workflow_id="bug-fix").parsed
    index, folder = started["session_index"], Path(started["planning_folder_path"])
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(pair.workspace), str(pair.key_dir), str(pair.tmp), index],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={"PYTHONPATH": str(REPO / "src")},
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "read"
        pair.b.ok("next_activity", session_index=index, activity_id="reproduce")  # wins
        after_b = (folder / "session.json").read_bytes()
        holder.stdin.write("go\n")
        holder.stdin.flush()
        verdict = holder.stdout.readline().strip()
    finally:
        holder.kill()
        holder.wait(30)
    assert verdict.startswith("SESSION_CONFLICT: ") and str(folder) in verdict and "nothing was written" in verdict
    assert (folder / "session.json").read_bytes() == after_b  # the winner's bytes, untouched
    assert sealed_state(pair, folder)["currentActivity"] == "reproduce"
    # the loser re-reads and repeats: it lands
    pair.a.ok("record_usage", session_index=index, activity="holder", usage={}, basis="delta")
