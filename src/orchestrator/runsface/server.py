"""The seven tools of ``orchestrator mcp --face runs``, on the official SDK's ``MCPServer`` (trio, stdio).

Each tool is a thin translation onto the service's HTTP API; failures are MCP tool errors whose text
says what went wrong (an unreachable service, a refused token, an unknown run) — never a guess.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from orchestrator.engine.runfolder import TERMINAL_STATUSES
from orchestrator.runsface.client import ServiceClient, ServiceUnavailable
from orchestrator.runsface.listing import compact_queue_item, compact_run
from orchestrator.vocabulary import Effort
from orchestrator.workflow.stdio import serve_stdio

__all__ = ["build_runs_server", "serve_runs_face"]

_RUN_ID = re.compile(r"^run-\d{8}-\d{6}(?:-\d+)?$")

#: How many of the run view's recent log rows ``run_status`` returns.
LAST_EVENTS = 8


def build_runs_server(client: ServiceClient) -> MCPServer:
    """The MCP server whose tools drive the service behind ``client``."""
    server = MCPServer(
        "orchestrator-runs",
        instructions=(
            "Delegate a self-contained task to a local Guild of model roles (an `orchestrator serve`). "
            "submit_task starts it (or queues it when a run is in progress); poll run_status; answer its "
            "questions with answer_question; steer it with interrupt; end it now with stop_run; read the result "
            "card with run_result."
        ),
    )

    async def call(method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        try:
            return await client.request(method, path, body)
        except ServiceUnavailable as exc:
            raise ToolError(exc.message) from None

    @server.tool()
    async def submit_task(task: str, effort: Effort | None = None) -> dict[str, Any]:
        """Hand a task to the Guild. Returns the run id, or the queue id when a run is already in progress."""
        if not task.strip():
            raise ToolError("task must not be empty")
        body: dict[str, Any] = {"task": task}
        if effort is not None:
            body["effort"] = effort
        try:
            started = await client.request("POST", "/api/runs", body)
        except ServiceUnavailable as exc:
            if exc.code != "run_in_progress":
                raise ToolError(exc.message) from None
            item = await call("POST", "/api/queue", body)
            return {
                "queueId": item["id"],
                "status": item["status"],
                "note": "a run is in progress, so the task was queued; run_status with this queueId follows it",
            }
        return {"runId": started["runId"], "status": "running"}

    @server.tool()
    async def run_status(run_id: str | None = None) -> dict[str, Any]:
        """Status of a run (or of a queued task, by its queueId): current role, last events, pending questions.

        Without run_id: the most recent run.
        """
        if run_id is not None and not _RUN_ID.match(run_id):
            return await _queue_status(run_id)
        view = await call("GET", f"/api/runs/{run_id}" if run_id else "/api/run")
        return await _status(view)

    async def _status(view: Mapping[str, Any]) -> dict[str, Any]:
        status, run_id = view.get("status"), view.get("runId")
        answer: dict[str, Any] = {
            "runId": run_id,
            "status": status,
            "task": view.get("task"),
            "currentRole": view.get("currentActivity"),
            "lastEvents": list(view.get("recentLog") or [])[-LAST_EVENTS:],
            "interruptPending": bool(view.get("interruptPending")),
        }
        if status == "running":
            answer["pendingQuestions"] = await call("GET", "/api/questions")
        elif status == "needs_clarification":
            items = await call("GET", "/api/queue")
            parked = [
                {"queueId": i["id"], "question": i.get("question")}
                for i in items
                if i.get("status") == "needs_input" and run_id in (i.get("runId"), i.get("continuesFrom"))
            ]
            answer["pendingQuestions"] = parked
            if parked:
                answer["note"] = (
                    "the run stopped to ask; answer_question with the queueId starts a continuation run, "
                    "which run_status with the queueId follows"
                )
        return answer

    async def _queue_status(queue_id: str) -> dict[str, Any]:
        items = await call("GET", "/api/queue")
        item = next((i for i in items if i.get("id") == queue_id), None)
        if item is None:
            raise ToolError(f"{queue_id!r} is neither a run id (run-YYYYMMDD-HHMMSS) nor a queued task's id")
        answer: dict[str, Any] = {"queueId": queue_id, "queueStatus": item["status"], "task": item["task"]}
        if item.get("question"):
            answer["pendingQuestions"] = [{"queueId": queue_id, "question": item["question"]}]
        if item.get("runId"):
            answer["run"] = await _status(await call("GET", f"/api/runs/{item['runId']}"))
        return answer

    @server.tool()
    async def run_result(run_id: str) -> dict[str, Any]:
        """The result card of a finished run (status, summary, artifacts, error)."""
        view = await call("GET", f"/api/runs/{run_id}")
        status = view.get("status")
        if status not in TERMINAL_STATUSES:
            return {"runId": run_id, "status": status, "card": None, "note": "not finished yet; poll run_status"}
        return {"runId": run_id, "status": status, "card": view.get("result") or {"error": view.get("error")}}

    @server.tool()
    async def answer_question(
        answer: str, question_id: str | None = None, queue_id: str | None = None
    ) -> dict[str, Any]:
        """Answer a question the Guild asked: question_id (a waiting run) or queue_id (a run that stopped to ask).

        Both come from run_status's pendingQuestions. With neither, the single pending question is
        answered (an error naming them when there are several, or none).
        """
        if question_id is None and queue_id is None:
            live = await call("GET", "/api/questions")
            parked = [i for i in await call("GET", "/api/queue") if i.get("status") == "needs_input"]
            pending = [("question_id", q["id"], q["question"]) for q in live]
            pending += [("queue_id", i["id"], i.get("question") or "") for i in parked]
            if len(pending) != 1:
                listed = "; ".join(f"{key}={value}: {text}" for key, value, text in pending) or "none"
                raise ToolError(f"name the question to answer (pending: {listed})")
            key, value, _ = pending[0]
            question_id, queue_id = (value, None) if key == "question_id" else (None, value)
        if queue_id is not None:
            item = await call("POST", f"/api/queue/{queue_id}/answer", {"answer": answer})
            return {
                "ok": True,
                "queueId": queue_id,
                "queueStatus": item.get("status"),
                "note": "a continuation run starts with the answer; run_status with the queueId follows it",
            }
        await call("POST", "/api/answer", {"id": question_id, "answer": answer})
        return {"ok": True, "questionId": question_id}

    @server.tool()
    async def interrupt(run_id: str, kind: Literal["inquiry", "plan_modification"], message: str) -> dict[str, Any]:
        """Interrupt a running run: an inquiry (a question the Guild answers) or a plan modification."""
        await call("POST", f"/api/runs/{run_id}/interrupt", {"kind": kind, "message": message})
        return {"ok": True, "runId": run_id, "kind": kind}

    @server.tool()
    async def stop_run(run_id: str) -> dict[str, Any]:
        """Stop the active run now: its model call, tool processes and MCP servers end at once, the run ends
        cancelled (continue it later with a new task), and the next queued task starts."""
        answer = await call("POST", f"/api/runs/{run_id}/stop", {"by": "mcp"})
        return {"ok": True, "runId": run_id, "status": answer.get("status")}

    @server.tool()
    async def list_runs(limit: int = 20, detail: bool = False) -> dict[str, Any]:
        """The most recent runs (newest first) and the tasks still waiting in the queue, one compact entry
        each: runId, status, the task's first line, started, durationSeconds. detail=true returns the
        whole records (result card, error, summary); run_status / run_result give one run's."""
        runs = list(await call("GET", "/api/runs"))[: max(limit, 1)]
        items = await call("GET", "/api/queue")
        waiting = [i for i in items if i.get("status") in ("waiting", "active", "needs_input")]
        if detail:
            return {"runs": runs, "queue": waiting}
        return {"runs": [compact_run(r) for r in runs], "queue": [compact_queue_item(i) for i in waiting]}

    return server


def serve_runs_face(server_url: str, workspace: Path | None, env: Mapping[str, str]) -> int:
    """Serve the runs face on stdio until stdin closes."""
    server = build_runs_server(ServiceClient(server_url, env, workspace))
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request would drown stderr
    anyio.run(serve_stdio, server, backend="trio")
    return 0
