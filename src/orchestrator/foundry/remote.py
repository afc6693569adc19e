"""Running one benchmark task on a running service (``--server URL``) instead of in this process.

The service works in its own workspace, so the runner must share that directory
(``--server-workspace DIR``): it fills it with the benchmark copy before each task, validates it in
place afterwards, and empties it again (everything but ``.orchestration/``). To never delete someone
else's files it only accepts a directory that is empty, or that it marked as its own earlier.

Every request carries the service's token (``ORCHESTRATOR_TOKEN``, else the token file the service
keeps in that shared workspace, ``.orchestration/token``).

One task: ``POST /api/runs``, then poll ``GET /api/runs/:id`` until the status is terminal, answering
``GET /api/questions`` from ``humanResponses`` through ``POST /api/answer``. A run that asks before
anything was written parks (``needs_clarification``, its queue item ``needs_input``); the runner
answers that item with ``POST /api/queue/:id/answer`` and follows the continuation run it starts.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
import trio

from orchestrator.engine.human import normalize_question
from orchestrator.engine.runfolder import TERMINAL_STATUSES
from orchestrator.errors import ConfigError
from orchestrator.foundry.inprocess import NO_ANSWER, RunRecord
from orchestrator.service.token import TOKEN_ENV, read_token_file, token_path

__all__ = [
    "MARKER",
    "ServiceError",
    "answer_for",
    "claim_service_workspace",
    "clear_service_workspace",
    "run_on_service",
    "service_token",
]

#: The file that marks a service workspace as the runner's to empty.
MARKER = ".foundry-workspace"
_KEEP = frozenset({".orchestration", MARKER})
#: How often the run view and the questions are polled.
POLL_SECONDS = 0.25
#: Parked questions answered through the queue before the runner gives up on a task.
MAX_CONTINUATIONS = 3


class ServiceError(RuntimeError):
    """The service cannot be used as asked (unreachable, a foreign workspace)."""


def answer_for(responses: Mapping[str, str], question: str) -> str:
    """The near-exact ``humanResponses`` match, else the same fallback the in-process runs hear."""
    table = {normalize_question(q): a for q, a in responses.items()}
    return table.get(normalize_question(question), NO_ANSWER)


def service_token(env: Mapping[str, str], workspace: Path) -> str:
    """The token the service requires: ``ORCHESTRATOR_TOKEN``, else the one it keeps in its workspace."""
    configured = env.get(TOKEN_ENV, "").strip()
    if configured:
        return configured
    path = token_path(workspace)
    try:
        token = read_token_file(path)
    except ConfigError as exc:
        raise ServiceError(str(exc)) from None
    if token is None:
        raise ServiceError(
            f"no access token: {path} does not exist (is the service serving --server-workspace?); "
            f"set {TOKEN_ENV} to the token the service prints at start"
        )
    return token


def claim_service_workspace(directory: Path) -> None:
    """Make sure ``directory`` is the runner's to fill and empty; ``ServiceError`` when it is not."""
    if not directory.is_dir():
        raise ServiceError(f"--server-workspace {directory}: not a directory")
    foreign = sorted(p.name for p in directory.iterdir() if p.name not in _KEEP)
    if foreign and not (directory / MARKER).exists():
        shown = ", ".join(foreign[:5])
        raise ServiceError(
            f"--server-workspace {directory} holds files the runner did not put there ({shown}); "
            "point the service at an empty directory"
        )
    (directory / MARKER).write_text("The benchmark runner fills and empties this directory between tasks.\n")


def clear_service_workspace(directory: Path) -> None:
    """Remove everything but the run history and the marker."""
    for entry in directory.iterdir():
        if entry.name in _KEEP:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


class _Session:
    def __init__(self, client: httpx.AsyncClient, responses: Mapping[str, str], on_phase: Callable[[str], None]):
        self.client = client
        self.responses = responses
        self.on_phase = on_phase
        self.answered: set[str] = set()

    async def _json(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        response = await self.client.request(method, path, json=body)
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, None

    async def submit(self, task: str, effort: str) -> str:
        status, body = await self._json("POST", "/api/runs", {"task": task, "effort": effort})
        if status != 201 or not isinstance(body, dict) or not isinstance(body.get("runId"), str):
            raise ServiceError(f"POST /api/runs answered {status}: {body}")
        return body["runId"]

    async def answer_questions(self) -> None:
        status, questions = await self._json("GET", "/api/questions")
        if status != 200 or not isinstance(questions, list):
            return
        for question in questions:
            qid, text = question.get("id"), question.get("question")
            if not isinstance(qid, str) or qid in self.answered or not isinstance(text, str):
                continue
            self.answered.add(qid)
            self.on_phase("answering a question")
            await self._json("POST", "/api/answer", {"id": qid, "answer": answer_for(self.responses, text)})

    async def wait_terminal(self, run_id: str) -> dict[str, Any]:
        while True:
            status, view = await self._json("GET", f"/api/runs/{run_id}")
            if status == 200 and isinstance(view, dict):
                if view.get("status") in TERMINAL_STATUSES:
                    return view
                active = view.get("currentActivity")
                role_id = active.get("roleId") if isinstance(active, dict) else None
                self.on_phase(f"running · {role_id}" if isinstance(role_id, str) else "running")
            await self.answer_questions()
            await trio.sleep(POLL_SECONDS)

    async def answer_parked(self, run_id: str) -> str | None:
        """Answer the parked item of ``run_id``; the id of the continuation run it starts, if any."""
        status, items = await self._json("GET", "/api/queue")
        if status != 200 or not isinstance(items, list):
            return None
        item = next((i for i in items if i.get("runId") == run_id and i.get("status") == "needs_input"), None)
        if item is None:
            return None
        question = item.get("question") if isinstance(item.get("question"), str) else ""
        self.on_phase("answering a parked question")
        await self._json("POST", f"/api/queue/{item['id']}/answer", {"answer": answer_for(self.responses, question)})
        while True:
            status, items = await self._json("GET", "/api/queue")
            mine = next((i for i in items if i.get("id") == item["id"]), None) if isinstance(items, list) else None
            if mine is None:
                return None
            new_run = mine.get("runId")
            if isinstance(new_run, str) and new_run != run_id:
                return new_run
            if mine.get("status") in ("done", "error", "cancelled"):
                return None
            await trio.sleep(POLL_SECONDS)


async def run_on_service(
    *,
    server: str,
    workspace: Path,
    task: str,
    effort: str,
    human_responses: Mapping[str, str],
    run_timeout: float,
    on_phase: Callable[[str], None],
    token: str,
) -> RunRecord:
    """Run ``task`` on the service whose workspace is ``workspace`` (already filled by the caller)."""
    record = RunRecord(status="error")
    runs_dir = workspace / ".orchestration" / "runs"
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=server.rstrip("/"), timeout=30, headers=auth) as client:
        session = _Session(client, human_responses, on_phase)
        with trio.move_on_after(run_timeout) as deadline:
            try:
                run_id: str | None = await session.submit(task, effort)
                continuations = 0
                while run_id is not None:
                    record.run_id = run_id
                    record.run_dirs.append(runs_dir / run_id)
                    view = await session.wait_terminal(run_id)
                    record.status = str(view.get("status"))
                    result = view.get("result")
                    record.summary = str(result.get("summary", "")) if isinstance(result, dict) else ""
                    if record.status != "needs_clarification" or continuations >= MAX_CONTINUATIONS:
                        break
                    continuations += 1
                    run_id = await session.answer_parked(run_id)
            except (httpx.HTTPError, ServiceError) as exc:
                record.status = "error"
                record.problem = f"the service failed: {exc}"
        if deadline.cancelled_caught:
            record.status = "error"
            record.problem = f"the run did not finish within {run_timeout:g} s (--run-timeout)"
    return record
