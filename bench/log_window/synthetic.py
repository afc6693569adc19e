"""The read-path benchmark's synthetic run log: a realistic ``log.jsonl`` of any size, written fast.

``write_synthetic_run`` makes a run folder (log and meta) of about N events: the orchestrator delegates
to a planner, which runs ``WORKERS`` workers in turn, the last one still at work. Also used by
``bench/perimeter_cost.py``, ``bench/run_derivations.py`` and ``tests/web/test_perf_2000.py``.
"""

from __future__ import annotations

import json
import operator
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from orchestrator.engine.runfolder import RunMeta, runs_root, write_meta

WORKERS = 8  # delegations in each synthetic run: orchestrator → planner → worker × 8 (the last one still running)
TURN_MS = 40  # synthetic clock step per worker turn
BASE_DAY = "2026-01-01"

_encoder = msgspec.json.Encoder()


def _stamp(ms: int) -> str:
    seconds, millis = divmod(ms, 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{BASE_DAY}T{hours % 24:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}Z"


def _template(events: list[dict[str, Any]]) -> tuple[str, operator.itemgetter[Any]]:
    """Encode ``events`` once with msgspec; ``"#name#"`` (a whole JSON string) becomes an int field and
    ``@name@`` (inside a string) a string field of a ``%`` template filled positionally per turn."""
    text = _encoder.encode_lines(events).decode().replace("%", "%%")
    names: list[str] = []

    def field_for(match: re.Match[str]) -> str:
        names.append(match.group(1) or match.group(2))
        return "%d" if match.group(1) else "%s"

    text = re.sub(r'"#(\w+)#"|@(\w+)@', field_for, text)
    return text, operator.itemgetter(*names)


def _shell_args(step: str) -> str:
    return '{"command":"pytest -q tests/test_step_' + step + '.py"}'


_TURN, _TURN_FIELDS = _template(
    [
        {"timestamp": "@t@", "type": "llm_call_start", "payload": {"role": "worker", "roleId": "@rid@"}},
        {
            "timestamp": "@t@",
            "type": "llm_call",
            "payload": {
                "role": "worker",
                "roleId": "@rid@",
                "messageCount": "#count#",
                "usage": {
                    "promptTokens": "#prompt#",
                    "completionTokens": 42,
                    "totalTokens": "#total#",
                    "cachedPromptTokens": "#cached#",
                },
                "sentFrom": "#sent_from#",
                "sent": [
                    {
                        "role": "assistant",
                        "content": "Running step @prev@.",
                        "toolCalls": [
                            {
                                "id": "call_@prev_call@",
                                "function": {"name": "run_shell", "arguments": _shell_args("@prev@")},
                            }
                        ],
                    },
                    {
                        "role": "tool",
                        "content": '{"kind":"success","data":{"exitCode":0,"stdout":"1 passed\\n"}}',
                        "toolCallId": "call_@prev_call@",
                    },
                ],
                "received": {
                    "content": "Step @prev@ passes; running step @step@.",
                    "toolCalls": [
                        {"id": "call_@call@", "function": {"name": "run_shell", "arguments": _shell_args("@step@")}}
                    ],
                },
                "finishReason": "tool_calls",
            },
        },
        {
            "timestamp": "@t@",
            "type": "tool_call",
            "payload": {"role": "worker", "tool": "run_shell", "arguments": _shell_args("@step@"), "roleId": "@rid@"},
        },
        {
            "timestamp": "@t@",
            "type": "tool_result",
            "payload": {
                "role": "worker",
                "tool": "run_shell",
                "kind": "success",
                "result": {"kind": "success", "data": {"exitCode": 0, "stdout": "1 passed\n", "stderr": ""}},
                "roleId": "@rid@",
            },
        },
    ]
)


@dataclass
class SyntheticLog:
    """A realistic run log written fast: rare events one by one through msgspec, the bulk worker turns
    (llm_call_start, llm_call with a 2-message delta and usage, tool_call, tool_result) through a template."""

    path: Path
    ms: int = 0
    calls: int = 0
    events: int = 0
    role_ids: int = 0
    worker: str = ""
    step: int = 0
    messages: int = 0
    _out: list[str] = field(default_factory=list)

    def _event(self, kind: str, payload: dict[str, Any]) -> None:
        self._out.append(_encoder.encode({"timestamp": _stamp(self.ms), "type": kind, "payload": payload}).decode())
        self._out.append("\n")
        self.events += 1
        self.ms += 3

    def _flush(self) -> None:
        with self.path.open("a") as handle:
            handle.write("".join(self._out))
        self._out.clear()

    def _role(self, role: str, depth: int, task: str, parent: tuple[str, str] | None) -> str:
        self.role_ids += 1
        role_id = f"{role}-{depth}-{self.role_ids}"
        payload: dict[str, Any] = {"role": role, "roleId": role_id, "depth": depth, "task": task}
        if parent is not None:
            payload |= {"parent": parent[0], "parentRoleId": parent[1]}
        self._event("role_start", payload)
        return role_id

    def _model_turn(self, role: str, role_id: str, sent: list[dict[str, Any]], tool: str, args: dict[str, Any]) -> None:
        self.calls += 1
        self.messages += len(sent)
        self._event("llm_call_start", {"role": role, "roleId": role_id})
        received = {
            "toolCalls": [{"id": f"call_{self.calls}", "function": {"name": tool, "arguments": json.dumps(args)}}]
        }
        usage = {
            "promptTokens": 900 + 40 * self.messages,
            "completionTokens": 60,
            "totalTokens": 960 + 40 * self.messages,
        }
        self._event(
            "llm_call",
            {
                "role": role,
                "roleId": role_id,
                "messageCount": self.messages,
                "usage": usage,
                "sentFrom": self.messages - len(sent),
                "sent": sent,
                "received": received,
                "finishReason": "tool_calls",
            },
        )
        self._event("tool_call", {"role": role, "tool": tool, "arguments": json.dumps(args), "roleId": role_id})

    def _worker_turns(self, count: int) -> None:
        rid = self.worker
        for _ in range(count):
            self.calls += 1
            self.step += 1
            self.messages += 2
            t = _stamp(self.ms)
            values = {
                "t": t,
                "rid": rid,
                "count": self.messages,
                "prompt": 1200 + 45 * self.messages,
                "total": 1242 + 45 * self.messages,
                "cached": 1024 + 45 * (self.messages - 2),
                "sent_from": self.messages - 2,
                "prev": str(self.step - 1),
                "step": str(self.step),
                "prev_call": str(self.calls - 1),
                "call": str(self.calls),
            }
            self._out.append(_TURN % _TURN_FIELDS(values))
            self.events += 4
            self.ms += TURN_MS
            if len(self._out) >= 4096:
                self._flush()

    def write_run(self, total: int) -> None:
        """About ``total`` events: the orchestrator delegates to a planner, which runs ``WORKERS`` workers
        in turn; the last worker is still at work (the run is live)."""
        self.path.write_bytes(b"")
        self._event("effort_set", {"effort": "standard"})
        task = "Make the test suite pass, one failing test at a time."
        orchestrator = self._role("orchestrator", 0, task, None)
        self.messages = 0
        system = {"role": "system", "content": "You are the orchestrator."}
        self._model_turn(
            "orchestrator",
            orchestrator,
            [system, {"role": "user", "content": task}],
            "agent",
            {"role": "planner", "task": task},
        )
        self._event("agent_call", {"parent": "orchestrator", "child": "planner", "depth": 1})
        planner = self._role("planner", 1, task, ("orchestrator", orchestrator))
        per_worker = max(1, (total - 12 - 14 * WORKERS) // (4 * WORKERS))
        planner_messages = 0
        for w in range(WORKERS):
            self.messages = planner_messages
            if w == 0:
                sent = [{"role": "system", "content": "You are the planner."}, {"role": "user", "content": task}]
            else:
                self._event(
                    "tool_result",
                    {
                        "role": "planner",
                        "tool": "agent",
                        "kind": "success",
                        "roleId": planner,
                        "result": {
                            "kind": "success",
                            "data": {"status": "success", "summary": f"step group {w} passes"},
                        },
                    },
                )
                sent = [
                    {
                        "role": "assistant",
                        "toolCalls": [{"id": f"call_{self.calls}", "function": {"name": "agent", "arguments": "{}"}}],
                    },
                    {
                        "role": "tool",
                        "content": f'{{"status":"success","summary":"step group {w} passes"}}',
                        "toolCallId": f"call_{self.calls}",
                    },
                ]
            subtask = f"Fix step group {w + 1}."
            self._model_turn("planner", planner, sent, "agent", {"role": "worker", "task": subtask})
            planner_messages = self.messages
            self._event("agent_call", {"parent": "planner", "child": "worker", "depth": 2})
            self.worker = self._role("worker", 2, subtask, ("planner", planner))
            self.messages = 0
            first = [{"role": "system", "content": "You are the worker."}, {"role": "user", "content": subtask}]
            self._model_turn("worker", self.worker, first, "run_shell", {"command": "pytest -q"})
            self._event(
                "tool_result",
                {
                    "role": "worker",
                    "tool": "run_shell",
                    "kind": "success",
                    "roleId": self.worker,
                    "result": {"kind": "success", "data": {"exitCode": 1, "stdout": "1 failed\n", "stderr": ""}},
                },
            )
            self._worker_turns(per_worker)
            if w == WORKERS - 1:
                break  # still running
            summary = f"step group {w + 1} passes"
            last = [
                {
                    "role": "assistant",
                    "content": f"Running step {self.step}.",
                    "toolCalls": [
                        {
                            "id": f"call_{self.calls}",
                            "function": {"name": "run_shell", "arguments": _shell_args(str(self.step))},
                        }
                    ],
                },
                {"role": "tool", "content": "1 passed", "toolCallId": f"call_{self.calls}"},
            ]
            self._model_turn("worker", self.worker, last, "finish", {"status": "success", "summary": summary})
            self._event(
                "tool_result",
                {
                    "role": "worker",
                    "tool": "finish",
                    "kind": "success",
                    "roleId": self.worker,
                    "result": {"kind": "success", "data": {"status": "success", "summary": summary}},
                },
            )
            self._event(
                "role_finished",
                {
                    "role": "worker",
                    "roleId": self.worker,
                    "depth": 2,
                    "status": "success",
                    "summary": summary,
                    "parent": "planner",
                },
            )
        self._flush()

    def append_turns(self, events: int) -> None:
        """``events`` more events (whole worker turns) of the still-running worker."""
        self._worker_turns(events // 4)
        self._flush()


def write_synthetic_run(workspace: Path, run_id: str, events: int) -> SyntheticLog:
    run_dir = runs_root(workspace) / run_id
    run_dir.mkdir(parents=True)
    log = SyntheticLog(run_dir / "log.jsonl")
    log.write_run(events)
    set_status(run_dir, "success")
    return log


def set_status(run_dir: Path, status: str) -> None:
    write_meta(
        run_dir,
        RunMeta(
            run_id=run_dir.name,
            task="Make the test suite pass, one failing test at a time.",
            status=status,
            effort="standard",
            log_level="full",
            guild_path="guild",
            start_time=f"{BASE_DAY}T00:00:00.000Z",
        ),
    )
