"""Thirteen scenarios, as synthetic engine logs: the flow tests' and the run-view browser tests' data.

Each scenario is a story told in events; the harness feeds its prefixes through the real adapter. Only
events that change the model are authored (``agent`` tool events, ``agent_call``, ``interrupt_resolved``
and plain turns would repeat the previous frame), so every scrub step shows something new.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.flow.script import Script

__all__ = ["SCENARIOS", "Scenario"]


@dataclass(frozen=True)
class Scenario:
    id: str
    label: str
    events: list[dict[str, Any]]
    #: the meta status stamped on the final frame (every earlier frame reads ``running``)
    terminal: str = "success"


def _single_role(s: Script) -> None:
    lead = s.start("orchestrator", "Summarise what this repository does.")
    s.think(lead)
    s.tool(lead, "read_file", {"content": "# widgets\nA tiny widget library."}, path="README.md")
    s.reply(lead, 900, 60)
    s.finish(lead, "It is a small widget library; the README covers install and usage.")


def _delegation_chain(s: Script) -> None:
    lead = s.start("orchestrator", "Add a --verbose flag to the CLI.")
    s.think(lead)
    plan = s.start("planner", "Plan the --verbose flag.", lead)
    s.think(plan)
    coder = s.start("coder", "Step 1: add the flag and wire it to the logger.", plan)
    s.think(coder)
    s.tool(coder, "write_file", {"path": "src/cli.ts", "bytes": 1830}, path="src/cli.ts", content="…")
    s.reply(coder, 2400, 300, cached=1800)
    s.tool(coder, "test", [{"command": "bun test", "exitCode": 0}], commands=["bun test"])
    s.reply(coder, 2900, 120, cached=2300)
    s.finish(coder, "Added --verbose; tests pass.")
    s.reply(plan, 1500, 90)
    s.finish(plan, "Plan written and step 1 done.")
    s.reply(lead, 1200, 70)
    s.finish(lead, "The CLI has a --verbose flag.")


def _deep_tree(s: Script) -> None:
    lead = s.start("orchestrator", "Harden the upload endpoint.")
    s.think(lead)
    plan = s.start("planner", "Plan the hardening.", lead)
    s.think(plan)
    research = s.start("researcher", "How do other servers cap multipart uploads?", plan)
    s.think(research)
    s.tool(research, "web_search", [{"title": "Limits", "url": "https://example.org"}], query="multipart limits")
    s.reply(research, 3100, 400)
    s.finish(research, "Cap body size and part count; stream to disk.")
    s.reply(plan, 1900, 200)
    s.finish(plan, "Two steps: limits, then streaming.")
    s.reply(lead, 1400, 80)
    arch = s.start("architecture_lead", "Review the upload changes.", lead)
    s.think(arch)
    reviewer = s.start("architecture_reviewer", "Review src/upload.ts.", arch)
    s.think(reviewer)
    s.tool(reviewer, "read_file", {"content": "export async function upload() {}"}, path="src/upload.ts")
    s.reply(reviewer, 2200, 150)
    s.finish(reviewer, "blocking: the size check runs after buffering.")
    s.reply(arch, 1300, 60)
    coder = s.start("coder", "Fix: check the size before buffering.", arch)
    s.think(coder)
    s.tool(coder, "write_file", {"path": "src/upload.ts", "bytes": 2210}, path="src/upload.ts", content="…")
    s.reply(coder, 2600, 210)
    s.finish(coder, "The size check now runs first.")
    s.reply(arch, 1500, 50)
    s.finish(arch, "Architecture review passed after one fix.")
    s.reply(lead, 1800, 90)
    s.finish(lead, "Uploads are capped and streamed.")


def _fresh_instance_retry(s: Script) -> None:
    lead = s.start("orchestrator", "Make the date test pass.")
    s.think(lead)
    first = s.start("coder", "Fix the failing date test.", lead)
    s.think(first)
    s.tool_call(first, "test", commands=["bun test date"])
    s.tool_result(first, "test", error=("timeout", "bun test date timed out"))
    s.reply(first, 2100, 90)
    s.finish(first, "The test hangs; I could not find why.", "error", "timeout")
    s.reply(lead, 1300, 80)
    second = s.start("coder", "Fix the date test; the last attempt found it hangs.", lead)
    s.think(second)
    s.tool(second, "write_file", {"path": "test/date.test.ts", "bytes": 640}, path="test/date.test.ts", content="…")
    s.reply(second, 1900, 130)
    s.finish(second, "The test awaited a timer that never fired; fixed.")
    s.reply(lead, 1500, 60)
    s.finish(lead, "The date test passes (second attempt).")


def _pending_question(s: Script) -> None:
    lead = s.start("orchestrator", "Set up a database for the app.")
    s.think(lead)
    s.ask(lead, "q-1", "Postgres or SQLite?", "The app runs on one small VM.")
    s.answer("q-1", "SQLite, please.")
    s.reply(lead, 1100, 70)
    coder = s.start("coder", "Add SQLite with a migrations folder.", lead)
    s.think(coder)
    s.finish(coder, "SQLite wired in with migrations.")
    s.reply(lead, 1400, 60)
    s.finish(lead, "The app uses SQLite.")


def _operator_inquiry(s: Script) -> None:
    lead = s.start("orchestrator", "Write the care guide page.")
    s.think(lead)
    coder = s.start("coder", "Write care-guide.html.", lead)
    s.think(coder)
    s.tool(coder, "write_file", {"path": "care-guide.html", "bytes": 4096}, path="care-guide.html", content="…")
    s.interrupt("inquiry", "inquiry_responder", coder, "What is the coder doing right now?")
    helper = s.start("inquiry_responder", "The operator asks, word for word: What is the coder doing right now?")
    s.think(helper)
    s.tool_call(helper, "recent_role_tool_calls", targetRole=coder.role_id)
    s.observe(coder, "recent_role_tool_calls")
    s.tool_result(helper, "recent_role_tool_calls", [{"tool": "write_file", "path": "care-guide.html"}])
    s.reply(helper, 800, 50)
    s.finish(helper, "It just wrote care-guide.html and is about to check it.")
    s.reply(coder, 2500, 100)
    s.finish(coder, "care-guide.html written and checked.")
    s.reply(lead, 1200, 40)
    s.finish(lead, "The care guide page is live.")


def _loop_interrupt(s: Script) -> None:
    lead = s.start("orchestrator", "Get the build green.")
    s.think(lead)
    coder = s.start("coder", "Fix the build.", lead)
    s.think(coder)
    s.tool(coder, "run_shell", {"exitCode": 1}, command="bun run build")
    s.reply(coder, 2000, 40)
    s.tool(coder, "run_shell", {"exitCode": 1}, command="bun run build")
    s.interrupt("loop_check", "loop_detector", coder)
    check = s.start("loop_detector", f"Check whether {coder.role_id} is stuck.")
    s.think(check)
    s.tool_call(check, "recent_role_tool_calls", targetRole=coder.role_id)
    s.observe(coder, "recent_role_tool_calls")
    s.tool_result(check, "recent_role_tool_calls", [{"tool": "run_shell"}, {"tool": "run_shell"}])
    s.reply(check, 700, 60)
    s.tool(check, "trigger_interrupt", {"action": "abort"}, targetRole=coder.role_id, action="abort", reason="same")
    s.finish(check, "Aborted: the same failing build twice.")
    s.finish(coder, "stopped by the loop check: same", "error", "loop_detected")
    s.reply(lead, 1300, 70)
    s.finish(lead, "The build is still red; the coder was looping.", "error")


def _nested_interrupt(s: Script) -> None:
    lead = s.start("orchestrator", "Refactor the parser.")
    s.think(lead)
    coder = s.start("coder", "Split parser.ts into modules.", lead)
    s.think(coder)
    s.interrupt("loop_check", "loop_detector", coder)
    check = s.start("loop_detector", f"Check whether {coder.role_id} is stuck.")
    s.think(check)
    s.interrupt("context_pressure", "context_manager", check)
    trim = s.start("context_manager", f"Make {check.role_id}'s conversation smaller.")
    s.think(trim)
    s.tool(trim, "edit_context", {"dropped": 4}, targetRole=check.role_id, operations=[{"op": "drop"}])
    s.reply(trim, 600, 30)
    s.finish(trim, "Dropped four stale turns.")
    s.reply(check, 900, 40)
    s.finish(check, "Making progress; no loop.")
    s.reply(coder, 3100, 200)
    s.finish(coder, "Parser split into three modules.")
    s.reply(lead, 1200, 50)
    s.finish(lead, "The parser is modular.")


def _rewind(s: Script) -> None:
    lead = s.start("orchestrator", "Rename the config module.")
    s.think(lead)
    coder = s.start("coder", "Rename config.ts to settings.ts.", lead)
    s.think(coder)
    s.tool(coder, "search_text", [], pattern="config")
    s.interrupt("loop_check", "loop_detector", coder)
    check = s.start("loop_detector", f"Check whether {coder.role_id} is stuck.")
    s.think(check)
    s.tool_call(check, "trigger_interrupt", targetRole=coder.role_id, action="abort", reason="rewind")
    s.terminate(coder, "rewind the looping coder")
    s.tool_result(check, "trigger_interrupt", {"action": "abort"})
    s.reply(check, 700, 40)
    s.finish(check, "Rewound the coder.")
    s.reply(lead, 1300, 60)
    fresh = s.start("coder", "Rename config.ts to settings.ts; search src/ only.", lead)
    s.think(fresh)
    s.tool(fresh, "write_file", {"path": "src/settings.ts", "bytes": 900}, path="src/settings.ts", content="…")
    s.reply(fresh, 1800, 90)
    s.finish(fresh, "Renamed; imports updated.")
    s.reply(lead, 1400, 50)
    s.finish(lead, "config is now settings.")


def _three_stacks(s: Script) -> None:
    lead = s.start("orchestrator", "Port the tests to bun.")
    s.think(lead)
    coder = s.start("coder", "Port test/*.js to bun:test.", lead)
    s.think(coder)
    s.interrupt("loop_check", "loop_detector", coder)
    check = s.start("loop_detector", f"Check whether {coder.role_id} is stuck.")
    s.think(check)
    s.tool_call(check, "list_role_messages", targetRole=coder.role_id)
    s.observe(coder, "list_role_messages")
    s.interrupt("inquiry", "inquiry_responder", check, "Why is it taking so long?")
    helper = s.start("inquiry_responder", "The operator asks, word for word: Why is it taking so long?")
    s.think(helper)
    s.tool_call(helper, "recent_role_tool_calls", targetRole=coder.role_id)
    s.observe(coder, "recent_role_tool_calls")
    s.tool_result(helper, "recent_role_tool_calls", [{"tool": "run_shell"}])
    s.tool_call(helper, "context_info", targetRole=check.role_id)
    s.observe(check, "context_info")
    s.tool_result(helper, "context_info", {"currentPromptTokens": 5100})
    s.reply(helper, 900, 70)
    s.finish(helper, "A loop check is reviewing the coder's repeated test runs.")
    s.tool_result(check, "list_role_messages", [{"index": 3, "role": "tool"}])
    s.reply(check, 1000, 30)
    s.finish(check, "Progressing; no loop.")
    s.reply(coder, 2700, 160)
    s.finish(coder, "All tests ported.")
    s.reply(lead, 1100, 40)
    s.finish(lead, "The suite runs on bun.")


def _multi_terminate(s: Script) -> None:
    lead = s.start("orchestrator", "Migrate the API to v2.")
    s.think(lead)
    plan = s.start("planner", "Plan the v2 migration.", lead)
    s.think(plan)
    coder = s.start("coder", "Step 1: switch the client.", plan)
    s.think(coder)
    s.interrupt("loop_check", "loop_detector", coder)
    check = s.start("loop_detector", f"Check whether {coder.role_id} is stuck.")
    s.think(check)
    s.tool_call(check, "trigger_interrupt", targetRole=coder.role_id, action="abort", reason="bad plan")
    s.terminate(coder, "rewind the coder")
    s.terminate(plan, "rewind the planner that sent it")
    s.tool_result(check, "trigger_interrupt", {"action": "abort"})
    s.reply(check, 800, 40)
    s.finish(check, "Rewound the coder and its planner.")
    s.reply(lead, 1500, 80)
    replan = s.start("planner", "Re-plan the v2 migration; the client switch looped.", lead)
    s.think(replan)
    s.reply(replan, 1700, 120)
    s.finish(replan, "New plan: adapter layer first.")
    s.reply(lead, 1600, 60)
    s.finish(lead, "Migration re-planned.")


def _terminate(s: Script) -> None:
    lead = s.start("orchestrator", "Delete the legacy folder.")
    s.think(lead)
    coder = s.start("coder", "Remove legacy/ and its references.", lead)
    s.think(coder)
    s.interrupt("loop_check", "loop_detector", coder)
    check = s.start("loop_detector", f"Check whether {coder.role_id} is stuck.")
    s.think(check)
    s.tool_call(check, "trigger_interrupt", targetRole=coder.role_id, action="abort", reason="unsafe")
    s.terminate(coder, "discard the coder")
    s.terminate(lead, "discard the whole task")
    s.tool_result(check, "trigger_interrupt", {"action": "abort"})
    s.reply(check, 700, 30)
    s.finish(check, "Terminated the task: it was deleting tracked files.")


def _error_return(s: Script) -> None:
    lead = s.start("orchestrator", "Deploy to staging.")
    s.think(lead)
    coder = s.start("coder", "Run the deploy script.", lead)
    s.think(coder)
    s.tool_call(coder, "run_shell", command="./deploy.sh staging")
    s.tool_result(coder, "run_shell", error=("unavailable", "deploy.sh: permission denied"))
    s.reply(coder, 1500, 60)
    s.finish(coder, "The deploy script cannot run here.", "error", "unavailable")
    s.reply(lead, 1200, 50)
    s.finish(lead, "Deploy failed: the script is not executable.", "error")


def _scenario(scenario_id: str, label: str, story: Callable[[Script], None], terminal: str = "success") -> Scenario:
    script = Script()
    story(script)
    return Scenario(scenario_id, label, script.events, terminal)


SCENARIOS: tuple[Scenario, ...] = (
    _scenario("single-role", "Single role", _single_role),
    _scenario("delegation-chain", "Delegation chain", _delegation_chain),
    _scenario("deep-tree", "Deep call tree", _deep_tree),
    _scenario("fresh-instance-retry", "Retry with a fresh instance", _fresh_instance_retry),
    _scenario("pending-question", "Pending question", _pending_question),
    _scenario("operator-inquiry", "Operator inquiry", _operator_inquiry),
    _scenario("loop-interrupt", "Interrupt (detected loop)", _loop_interrupt, "error"),
    _scenario("nested-interrupt", "Nested interrupt", _nested_interrupt),
    _scenario("rewind", "Rewind", _rewind),
    _scenario("three-stacks", "Three-stack nesting", _three_stacks),
    _scenario("multi-terminate-rewind", "Rewind (multi-terminate)", _multi_terminate),
    _scenario("terminate", "Terminate", _terminate, "error"),
    _scenario("error-return", "Error return", _error_return, "error"),
)
